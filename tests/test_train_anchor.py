"""The supervised anchor of GRPO: demonstrations' assistant turns in every step's loss."""

from __future__ import annotations

import json

import pytest
from tiny_models import tiny_causal_lm

from affectgym.eval import EvalConfig, run_eval
from affectgym.train.config import TrainConfig
from affectgym.train.demos import assistant_token_mask, episode_demonstrations

ENV_ID = "affectgym/Sarcasm-v0"
FORM = {"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "rubric": "label", "max_turns": 3}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos")
    run_eval(EvalConfig(env_id=ENV_ID, agent="protocol", out=out, split="train", n=4, env_kwargs=FORM, progress=False))
    return out


def anchored_config(tiny_model, demos, tmp_path, **options) -> TrainConfig:
    values = {
        "env_id": ENV_ID, "model": str(tiny_model), "prompt_form": "chat", "max_steps": 3, "num_generations": 4,
        "batch_size": 8, "max_completion_length": 1, "learning_rate": 1e-2, "lora_r": 4, "eval_episodes": 0,
        "env_kwargs": FORM, "demos": [str(demos)], "anchor_coef": 1.0, "output_dir": str(tmp_path / "run"),
    }
    return TrainConfig(**{**values, **options})


def test_anchor_batches_train_exactly_the_assistant_tokens_of_the_tool_call_turns(tiny_model, demos):
    from transformers import AutoTokenizer

    from affectgym.train.anchor import SupervisedAnchor

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    rows, _ = episode_demonstrations([demos], ENV_ID, tool_turns_only=True)
    anchor = SupervisedAnchor(tokenizer, rows, rows_per_step=len(rows))
    input_ids, attention_mask, labels = anchor.next_batch()  # every demonstration once, in a seeded order
    served = sorted(
        (input_ids[row, : int(attention_mask[row].sum())].tolist(), labels[row, : int(attention_mask[row].sum())].tolist())
        for row in range(len(rows))
    )
    expected = []
    for row in rows:
        tool_call = [m for m in row["messages"] if m["role"] != "tool"]  # the results after the call teach nothing
        assert tool_call[-1]["role"] == "assistant" and len(tool_call) < len(row["messages"])
        ids, mask = assistant_token_mask(tokenizer, tool_call, json.loads(row["tools"]))
        assert tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m]).endswith("<|im_end|>")
        expected.append((ids, [t if m else -100 for t, m in zip(ids, mask, strict=True)]))
    assert served == sorted(expected)


def test_anchored_grpo_lowers_the_demonstrations_nll_when_the_reward_teaches_nothing(tiny_model, demos, tmp_path):
    from affectgym.train.grpo import build_trainer

    def constant_reward(completions, **kwargs):
        return [1.0] * len(completions)

    config = anchored_config(tiny_model, demos, tmp_path, anchor_rows=4)
    trainer = build_trainer(config, gpu=False, reward_funcs=[constant_reward])
    trainer.train()
    nll = [row["anchor_nll"] for row in trainer.state.log_history if "anchor_nll" in row]
    assert len(nll) == 3 and nll[-1] < nll[0]  # every advantage is 0: only the anchor moves the adapter


def test_grpo_demos_and_anchor_coef_come_together():
    with pytest.raises(ValueError, match="--anchor-coef > 0"):
        TrainConfig(env_id=ENV_ID, demos=["runs/demos"])
    with pytest.raises(ValueError, match="--anchor-coef > 0"):
        TrainConfig(env_id=ENV_ID, anchor_coef=0.5)
    with pytest.raises(ValueError, match="anchor_coef must be a finite number"):
        TrainConfig(env_id=ENV_ID, demos=["runs/demos"], anchor_coef=float("nan"))
    with pytest.raises(ValueError, match="--anchor-coef"):
        TrainConfig(env_id=ENV_ID, algo="sft", demos=["runs/demos"], anchor_coef=0.5)
