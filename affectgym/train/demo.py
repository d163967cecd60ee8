"""The training demo: a short, offline GRPO run on Sarcasm-v0 that shows held-out learning on a CPU.

:func:`run_demo` trains the embedded SmolLM2-135M-Instruct (alias ``smollm2-135m``) with
the CPU recipe of :mod:`affectgym.train.recipes` (Sarcasm-v0's short form: the line and
one line of delivery cues, a yes/no answer; LoRA on the last layers; both deliveries of
a line in one batch) for a few minutes, evaluates the base model and the trained adapter
greedily on the held-out lines (the line-grouped eval split: no eval line is heard in
train, and its pivot pairs say the same words both ways), and prints both side by side
with 95% intervals over the eval clips, next to the committed result of the long run
(``benchmarks/results/learning.json``, several seeds and a format-only control) when the
repository holds it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from affectgym.train.config import TrainConfig
from affectgym.train.recipes import SARCASM_ENV_ID, sarcasm_cpu_config

DEMO_ENV_ID = SARCASM_ENV_ID
#: GRPO steps of the demo (a few seconds each on 2 CPU cores; the long run's seeds told the
#: deliveries apart from step 40-50 on).
DEMO_STEPS = 60
#: The long run's committed result, relative to the repository root.
LONG_RUN_RESULT = Path("benchmarks") / "results" / "learning.json"


def demo_config(output_dir: str | Path, *, model: str = "smollm2-135m", max_steps: int = DEMO_STEPS,
                seed: int = 0, **overrides: Any) -> TrainConfig:
    """The demo's training options: the CPU recipe, evaluated at the first and the last step.

    Args:
        output_dir: Where everything goes.
        model: Policy model (the tests pass a tiny one).
        max_steps: GRPO steps.
        seed: Seed of data order, sampling and LoRA initialisation.
        **overrides: Other :class:`~affectgym.train.config.TrainConfig` fields.
    """
    return sarcasm_cpu_config(output_dir, max_steps=max_steps, seed=seed, model=model,
                              eval_every_steps=max_steps, **overrides)


def accuracy_interval(correct: int, total: int) -> tuple[float, float]:
    """The 95% Wilson interval of an accuracy of ``correct`` out of ``total``.

    >>> low, high = accuracy_interval(40, 50)
    >>> round(low, 3), round(high, 3)
    (0.67, 0.888)
    """
    from scipy.stats import binomtest

    interval = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="wilson")
    return float(interval.low), float(interval.high)


def result_table(curve: list[dict[str, Any]], long_run: dict[str, Any] | None, steps: int) -> str:
    """Base vs trained on the held-out lines, and the long run's arms when known."""
    first, last = curve[0], curve[-1]
    lines = [
        f"held-out {DEMO_ENV_ID}: {first['episodes']} clips of lines never seen in training "
        "(greedy answers; unanswered counts as wrong)",
        f"{'':34s} {'accuracy (95% CI)':>22s} {'answered':>9s} {'pivot acc.':>10s} {'reward':>7s}",
    ]
    for name, row in (("base model (step 0)", first), (f"trained here ({steps} steps)", last)):
        low, high = accuracy_interval(round(row["accuracy"] * row["episodes"]), row["episodes"])
        lines.append(
            f"{name:34s} {row['accuracy']:>6.3f} ({low:.2f}-{high:.2f}){'':5s} {row['answered_rate']:>9.2f} "
            f"{row.get('pivot_accuracy', float('nan')):>10.2f} {row['reward']:>7.3f}"
        )
    if long_run:
        lines.append(
            f"long run ({LONG_RUN_RESULT}, {long_run['steps']} steps, "
            f"{len(long_run.get('trained', {}).get('seeds', []))} seeds, mean +/- 95% CI over seeds):"
        )
        for arm in ("base", "control", "trained"):
            entry = long_run.get(arm, {})
            if "accuracy_mean" in entry:
                lines.append(
                    f"  {arm:32s} {entry['accuracy_mean']:>6.3f} +/- {entry['accuracy_ci95']:.3f}{'':6s}"
                    f"{entry.get('answered_rate_mean', float('nan')):>9.2f} {entry.get('pivot_accuracy_mean', float('nan')):>10.2f} "
                    f"{entry.get('reward_mean', float('nan')):>7.3f}"
                )
        delta = long_run.get("delta_vs_control")
        if delta:
            lines.append(
                f"  trained - control accuracy: {delta['mean']:+.3f} (95% CI {delta['ci95_low']:+.3f} to {delta['ci95_high']:+.3f})"
            )
    return "\n".join(lines)


def run_demo(output_dir: str | Path = "runs/demo-train", **overrides: Any) -> dict[str, Any]:
    """Train, evaluate base vs trained on held-out lines, print the table, write ``demo.json``.

    Args:
        output_dir: Output folder.
        **overrides: Keyword arguments of :func:`demo_config` (``model``, ``max_steps``, ``seed``, ...).

    Returns:
        The run summary of :func:`affectgym.train.grpo.train`, with the held-out curve.
    """
    import affectgym
    from affectgym.train.grpo import train

    config = demo_config(output_dir, **overrides)
    if config.env_id not in affectgym.list_envs():
        raise RuntimeError(f"the demo needs {config.env_id}, which is not registered (affectgym list)")
    print(
        f"affectgym training demo: GRPO (flat, LoRA r={config.lora_r} on the last {config.lora_layers} layers) of "
        f"{config.model} on {config.env_id} (short form: line + delivery cues, yes/no answer), "
        f"{config.max_steps} steps of {config.batch_size} completions, seed {config.seed}",
        flush=True,
    )
    summary = train(config)
    out = Path(config.output_dir)
    curve = [json.loads(line) for line in (out / "heldout.jsonl").read_text(encoding="utf-8").splitlines()]
    long_run_file = Path.cwd() / LONG_RUN_RESULT
    long_run = json.loads(long_run_file.read_text(encoding="utf-8")) if long_run_file.is_file() else None
    print(f"trained {summary['steps']} steps in {summary['train_s']:.0f} s")
    print(result_table(curve, long_run, summary["steps"]))
    print("\n".join([
        f"config:        {out / 'config.yaml'}",
        f"log history:   {out / 'log_history.json'}",
        f"held-out:      {out / 'heldout.jsonl'}",
        f"reward curves: {out / 'figures'}/reward_*.png",
        f"adapter:       {out / 'adapter'}",
    ]))
    summary["heldout"] = curve
    (out / "demo.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


__all__ = ["DEMO_ENV_ID", "DEMO_STEPS", "accuracy_interval", "demo_config", "result_table", "run_demo"]


if __name__ == "__main__":  # python -m affectgym.train.demo [OUTPUT_DIR]
    import sys

    run_demo(sys.argv[1] if len(sys.argv) > 1 else "runs/demo-train")
