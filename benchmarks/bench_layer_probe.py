"""Where does the policy model hold the delivery cue? A linear probe per layer, held-out lines.

A diagnostic for choosing which layers LoRA adapts (``lora_layers`` in
:mod:`affectgym.train.recipes`): for each probed layer, the hidden state of the frozen
SmolLM2-135M-Instruct at the answer position of Sarcasm-v0's short-form flat prompt is
fitted with a logistic regression on the train split and scored on the line-grouped eval
split. It also prints the base model's mean "Yes" - "No" logit gap per class (equal
gaps: the untrained model does not use the cues). Nothing here trains the policy.

Usage: ``python benchmarks/bench_layer_probe.py [--layers 5 10 20 24 29]`` (about 2 minutes on 2 CPU cores).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from affectgym.train.recipes import SARCASM_ENV_ID, SARCASM_SHORT_FORM


def hidden_states(split: str, layers: list[int], tokenizer: Any, model: Any) -> tuple[dict[int, Any], Any, Any]:
    """Per layer: the answer-position states of every clip of ``split``; the labels; the yes-no logit gaps."""
    import numpy as np
    import torch

    import affectgym

    env = affectgym.make(SARCASM_ENV_ID, split=split, **SARCASM_SHORT_FORM).unwrapped
    yes, no = (tokenizer.convert_tokens_to_ids(word) for word in ("Yes", "No"))
    states: dict[int, list[Any]] = {layer: [] for layer in layers}
    labels, gaps = [], []
    for clip in env.scenarios:
        text = tokenizer.apply_chat_template(env.flat_prompt(clip), tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids
        with torch.no_grad():
            output = model(ids, output_hidden_states=True)
        for layer in layers:
            states[layer].append(output.hidden_states[layer][0, -1].numpy())
        logits = output.logits[0, -1]
        gaps.append(float(logits[yes] - logits[no]))
        labels.append(clip.label == "sarcastic")
    return {layer: np.array(v) for layer, v in states.items()}, np.array(labels), np.array(gaps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[5, 10, 20, 24, 29],
                        help="hidden-state indices (0 = embeddings; i = the input of layer i)")
    args = parser.parse_args(argv)
    from sklearn.linear_model import LogisticRegression
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from affectgym.models import resolve_model

    path = resolve_model("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    train_x, train_y, _ = hidden_states("train", args.layers, tokenizer, model)
    eval_x, eval_y, eval_gap = hidden_states("eval", args.layers, tokenizer, model)
    print(f"linear probe of the frozen model at the answer position ({len(train_y)} train clips, {len(eval_y)} held-out clips)")
    for layer in args.layers:
        probe = LogisticRegression(max_iter=2000).fit(train_x[layer], train_y)
        print(f"  hidden state {layer:2d}: held-out accuracy {probe.score(eval_x[layer], eval_y):.2f}")
    print(f"base model 'Yes' - 'No' logit gap: sarcastic clips {eval_gap[eval_y].mean():+.2f}, "
          f"sincere clips {eval_gap[~eval_y].mean():+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
