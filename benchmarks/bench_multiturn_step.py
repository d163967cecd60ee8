"""Where a multi-turn GRPO step spends its time on CPU: generation between tool calls, the tools, the reward, the loss.

The multi-turn transfer recipe (:func:`affectgym.train.recipes.sarcasm_multiturn_grpo_config`:
2 prompts x 4 rollouts, the policy's own tool calls through TRL's ``environment_factory``)
runs a few steps on SmolLM2-135M from the protocol warm start (``runs/bench_transfer/s0/sft``
when ``bench_transfer.py`` made it; a fresh LoRA otherwise). The trainer's own methods are
timed on its instance (``_generate_and_score_completions`` is the rollout phase), the env's
tools on the factory's class, and the whole step by a callback:

* generation: ``_generate_single_turn``, every turn of every rollout (the opening message,
  then each message after tool results);
* tools: the env's tool methods that TRL calls between turns (prosody features, rendering);
* reward: ``_calculate_rewards`` (the env's one reward path on the finished rollouts);
* the rest of the rollout phase: tokenizing, the tool-message suffixes, bookkeeping;
* loss and backward: the rest of the optimizer step (forward over prompt + rollout with the
  tool results masked, backward on the LoRA layers, the optimizer).

Reported per step (median after a warm-up step) and written to
``benchmarks/results/multiturn_step.json``.

Usage: ``python benchmarks/bench_multiturn_step.py [--steps 4] [--threads 1]``
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench_train import timed  # the same wall-time wrapper as the reward-overhead benchmark

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "multiturn_step.json"
WARM_START = ROOT / "runs" / "bench_transfer" / "s0" / "sft" / "adapter"
PHASES = ("generation", "tools", "reward", "other rollout work", "loss and backward")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4, help="optimizer steps; the first is a warm-up")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    args = parser.parse_args(argv)
    import torch
    from transformers import TrainerCallback

    from affectgym.train.grpo import build_trainer
    from affectgym.train.recipes import sarcasm_multiturn_grpo_config

    if args.threads:
        torch.set_num_threads(args.threads)
    init = str(WARM_START.relative_to(ROOT)) if (WARM_START / "adapter_config.json").is_file() else None
    with tempfile.TemporaryDirectory() as out:
        config = sarcasm_multiturn_grpo_config(out, init, max_steps=args.steps, save_steps=0)
        trainer = build_trainer(config, gpu=False)
        buckets: dict[str, list[float]] = defaultdict(list)
        for name, phase in (("_generate_single_turn", "generation"), ("_calculate_rewards", "reward"),
                            ("_generate_and_score_completions", "rollout")):
            setattr(trainer, name, timed(getattr(trainer, name), buckets[phase]))
        environment_class = type(next(iter(trainer._environment_pool.values()))[0])  # affectgym's factory class
        for name, function in inspect.getmembers(environment_class, predicate=inspect.isfunction):
            if name not in ("reset", "get_reward") and not name.startswith("_"):  # the tools, as TRL lists them
                setattr(environment_class, name, timed(function, buckets["tools"]))
        rows: list[dict[str, float]] = []

        class Split(TrainerCallback):
            """Closes each step's sums into one row."""

            def on_step_begin(self, *_, **__) -> None:
                self.started = time.perf_counter()

            def on_step_end(self, *_, **__) -> None:
                buckets["step"].append(time.perf_counter() - self.started)
                sums = {phase: sum(values) for phase, values in buckets.items()}
                rows.append({
                    "generation": sums.get("generation", 0.0), "tools": sums.get("tools", 0.0),
                    "reward": sums.get("reward", 0.0),
                    "other rollout work": sums.get("rollout", 0.0) - sums.get("generation", 0.0)
                    - sums.get("tools", 0.0) - sums.get("reward", 0.0),
                    "loss and backward": sums.get("step", 0.0) - sums.get("rollout", 0.0),
                    "step": sums.get("step", 0.0),
                })
                for values in buckets.values():  # in place: the timed methods hold these lists
                    values.clear()

        trainer.add_callback(Split())
        trainer.train()
        history = trainer.state.log_history
    counted = rows[1:] or rows
    medians = {key: statistics.median(row[key] for row in counted) for key in (*PHASES, "step")}
    lengths = [row["completions/mean_length"] for row in history if "completions/mean_length" in row]
    result = {
        "recipe": "sarcasm_multiturn_grpo_config", "model": config.model, "warm_start": init, "steps": args.steps,
        "rollouts_per_step": config.batch_size, "threads": torch.get_num_threads(),
        "median_s": {key: round(value, 2) for key, value in medians.items()},
        "share": {phase: round(medians[phase] / medians["step"], 3) for phase in PHASES},
        "mean_completion_tokens": round(statistics.mean(lengths), 1) if lengths else None,
        "per_step": rows,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"multi-turn GRPO step, {config.batch_size} rollouts, {torch.get_num_threads()} thread(s), median of "
          f"{len(counted)} step(s):")
    for phase in (*PHASES, "step"):
        share = f"{medians[phase] / medians['step']:6.1%}" if phase != "step" else ""
        print(f"  {phase:20s} {medians[phase]:7.2f} s {share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
