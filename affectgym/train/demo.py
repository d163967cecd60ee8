"""The training demo: a short, offline GRPO run that shows the whole loop on a CPU.

:func:`run_demo` trains the embedded SmolLM2-135M-Instruct (alias ``smollm2-135m``) with
LoRA, flat mode, on ``affectgym/EmotionStyle-v0`` (answer an instruction in a requested
emotion) scored offline (``classifier="nade"``: the probability of the requested emotion,
minus the rule penalties), then evaluates the base model and the trained adapter on
held-out instructions through the eval runner and draws the figures.

Why EmotionStyle-v0 and not Sarcasm-v0: cost per step and density of the signal. A flat
sarcasm prompt (transcript, prosody table, pitch contour) is about 600 tokens; on a shared
2-core CPU one GRPO step of 4 completions of 48 tokens took 7.5 minutes, so ten minutes
buy a handful of steps. An EmotionStyle prompt is about 30 tokens and its reward is
continuous (a classifier probability, not a right/wrong label), so GRPO has a gradient
from the first step. Sarcasm-v0 training is the GPU recipe of the README.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from affectgym.train.config import TrainConfig

DEMO_ENV_ID = "affectgym/EmotionStyle-v0"


def demo_config(output_dir: str | Path, *, model: str = "smollm2-135m", max_steps: int = 30,
                eval_episodes: int = 32, seed: int = 0, n_train: int | None = None) -> TrainConfig:
    """The demo's training options (see the module docstring).

    Args:
        output_dir: Where everything goes.
        model: Policy model (the tests pass a tiny one).
        max_steps: GRPO steps.
        eval_episodes: Held-out instructions evaluated.
        seed: Seed of data order, sampling and LoRA initialisation.
        n_train: Training rows (default: one balanced pass over the train split).
    """
    return TrainConfig(
        env_id=DEMO_ENV_ID,
        model=model,
        mode="flat",
        max_steps=max_steps,
        num_generations=4,
        batch_size=8,
        learning_rate=2e-4,
        max_completion_length=64,
        temperature=1.0,
        lora_r=16,
        lora_alpha=32,
        output_dir=str(output_dir),
        eval_episodes=eval_episodes,
        env_kwargs={"classifier": "nade"},
        seed=seed,
        n_train=n_train,
    )


def run_demo(output_dir: str | Path = "runs/demo-train", **overrides: Any) -> dict[str, Any]:
    """Train, evaluate base vs trained on held-out clips, draw the figures, print where they are.

    Args:
        output_dir: Output folder.
        **overrides: Keyword arguments of :func:`demo_config` (``model``, ``max_steps``,
            ``eval_episodes``, ``seed``, ``n_train``).

    Returns:
        The run summary of :func:`affectgym.train.grpo.train`.
    """
    import affectgym
    from affectgym.train.grpo import train

    config = demo_config(output_dir, **overrides)
    if config.env_id not in affectgym.list_envs():
        raise RuntimeError(f"the demo needs {config.env_id}, which is not registered (affectgym list)")
    print(
        f"affectgym training demo: GRPO (flat, LoRA r={config.lora_r}) of {config.model} on {config.env_id} "
        f"(embedded instructions, offline nade scorer), {config.max_steps} steps of {config.batch_size} completions, seed {config.seed}"
    )
    summary = train(config)
    out = Path(config.output_dir)
    lines = [
        f"trained {summary['steps']} steps in {summary['train_s']:.0f} s; "
        f"mean training reward {_fmt(summary['first_reward'])} (first step) -> {_fmt(summary['last_reward'])} (last step)",
    ]
    comparison = summary.get("eval") or {}
    if "base" in comparison:
        base, trained = comparison["base"], comparison["trained"]
        lines.append(
            f"held-out reward ({base['episodes']} eval episodes): base {_fmt(base['reward_mean'])} +/- {_fmt(base['reward_ci95'])}, "
            f"trained {_fmt(trained['reward_mean'])} +/- {_fmt(trained['reward_ci95'])} (delta {_fmt(comparison['delta_reward'])})"
        )
    lines += [
        f"config:        {out / 'config.yaml'}",
        f"log history:   {out / 'log_history.json'}",
        f"reward curves: {out / 'figures'}/reward_*.png",
        f"adapter:       {out / 'adapter'}",
    ]
    if "base" in comparison:
        lines += [f"evaluation:    {out / 'eval'}/{{base,trained}}/results.jsonl, comparison.json, comparison.png"]
    print("\n".join(lines))
    (out / "demo.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def _fmt(value: Any) -> str:
    """A number with 3 decimals, or ``n/a``.

    >>> _fmt(0.12345), _fmt(None)
    ('0.123', 'n/a')
    """
    return "n/a" if value is None else f"{value:.3f}"


__all__ = ["DEMO_ENV_ID", "demo_config", "run_demo"]


if __name__ == "__main__":  # python -m affectgym.train.demo [OUTPUT_DIR]
    import sys

    run_demo(sys.argv[1] if len(sys.argv) > 1 else "runs/demo-train")
