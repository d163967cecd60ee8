"""A measured CPU recipe: GRPO of a small model on Sarcasm-v0's short form.

On two CPU cores a GRPO step costs a forward and a backward pass over the prompt of every
completion, so the prompt is the budget. :func:`sarcasm_cpu_config` trains on the short
form of ``affectgym/Sarcasm-v0``, through its public options:

* ``flat_prompt="compact"``: the line and one line of delivery cues, ~130 tokens instead of ~600;
* ``answer="yesno"``: "yes" or "no" to "is the line sarcastic?". The base model starts
  "sarcastic" and "sincere" with the same token and all but never samples "sincere", so
  GRPO would never see it rewarded; "yes" and "no" it samples alike;
* ``reward="label"`` with the format weight lowered from 0.30 to 0.05
  (``reward_weights={"format": 0.05}``): 0.70 signed correctness (+1 right, -1 wrong, 0
  unanswered) + 0.05 format (an answer could be read). A right answer earns 0.75, none 0,
  a wrong one -0.65. Some credit for answering is needed (without it the policy learns to
  say nothing), but while the policy is learning to answer, that credit is shared by both
  answers and raises the one it already favours most: at 0.30 the yes/no split collapsed
  onto one answer within 20 steps; at 0.05 the sampled answers stayed mixed for 60 steps
  (entropy above 1.2), though the greedy answer still settled on one label;
* 1-token answers ("Yes", "No"), read leniently, sampled at temperature 1.0: with the
  question asked last, about a third of the base model's samples answer, and the format
  credit makes every sample answer within ~10 steps; at 0.7, or with a peak learning rate
  of 1e-3 or more, the yes/no split collapsed onto one answer within 20 steps (every group
  then has zero reward variance and gives no gradient). A second token (the end of the
  turn) carried nothing and doubled the cost of a step;
* 128 completions of each prompt (2 prompts a step): GRPO's gradient is a sampled estimate,
  and with 8 completions its noise carries the yes/no split shared by both deliveries onto
  one answer, after which every group is constant and gives no gradient. With 64, one seed
  of three still collapsed; with 128 the groups stay mixed until the deliveries part.
  :class:`~affectgym.train.shared_prefix.SharedPrefixGRPOTrainer` runs each prompt once a
  step, so a step of 256 completions costs less than one of 16 in TRL's own trainer;
* learning rate 5e-4, constant after a linear warmup over the first sixth of the steps (a
  linear decay to 0 slows the late steps in which the deliveries part);
* LoRA on the last 10 of 30 layers: a linear probe of the frozen model's hidden state at
  the answer position tells held-out sarcastic from sincere clips apart at 0.98 from the
  input of layer 20 but at 0.74 from the top layers, so the adapter must reach that deep;
* both deliveries of a line in one batch (``group_batches``), no reference model (``beta=0``).

``benchmarks/bench_learning.py`` measures it against the base model and a format-only
control; ``affectgym demo`` runs a short version.

>>> config = sarcasm_cpu_config("runs/x", max_steps=5)
>>> config.env_kwargs["flat_prompt"], config.lora_layers, config.group_batches
('compact', 10, True)
>>> sarcasm_cpu_config("runs/x", control=True).env_kwargs["reward_weights"]
{'format': 0.05, 'correctness': 0.0}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from affectgym.train.config import TrainConfig

SARCASM_ENV_ID = "affectgym/Sarcasm-v0"
#: The short form of Sarcasm-v0 (public env options; scored by the env's own rubric).
SARCASM_SHORT_FORM: dict[str, Any] = {"reward": "label", "answer": "yesno", "flat_prompt": "compact"}


def sarcasm_cpu_config(output_dir: str | Path, *, max_steps: int = 80, seed: int = 0, control: bool = False,
                       eval_every_steps: int = 10, model: str = "smollm2-135m", **overrides: Any) -> TrainConfig:
    """The recipe's options (see the module docstring).

    Args:
        output_dir: Where the run writes.
        max_steps: GRPO steps (256 completions each: 2 prompts x 128).
        seed: Seed of data order, sampling and LoRA initialisation.
        control: Reward only the answer format (correctness weight 0): the control arm.
        eval_every_steps: Greedy held-out evaluation every N steps (``heldout.jsonl``).
        model: Policy model (an alias, a folder or a hub id).
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    env_kwargs = dict(SARCASM_SHORT_FORM)
    env_kwargs["reward_weights"] = {"format": 0.05}
    if control:
        env_kwargs["reward_weights"]["correctness"] = 0.0
    options: dict[str, Any] = {
        "env_id": SARCASM_ENV_ID,
        "model": model,
        "mode": "flat",
        "max_steps": max_steps,
        "num_generations": 128,
        "batch_size": 256,
        "learning_rate": 5e-4,
        "warmup_steps": max_steps // 6,
        "lr_scheduler": "constant",
        "max_completion_length": 1,
        "temperature": 1.0,
        "beta": 0.0,
        "lora_r": 16,
        "lora_alpha": 32,
        "lora_dropout": 0.0,
        "lora_layers": 10,
        "n_train": max_steps * 2,
        "group_batches": True,
        "eval_every_steps": eval_every_steps,
        "eval_episodes": 0,
        "env_kwargs": env_kwargs,
        "seed": seed,
        "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


__all__ = ["SARCASM_ENV_ID", "SARCASM_SHORT_FORM", "sarcasm_cpu_config"]
