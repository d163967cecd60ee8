"""A multi-turn GRPO step on CPU, affectgym's trainer beside TRL's own, on the same rollouts, phase by phase.

The multi-turn transfer recipe (:func:`affectgym.train.recipes.sarcasm_multiturn_grpo_config`:
2 prompts x 4 rollouts, the policy's own tool calls through TRL's ``environment_factory``)
runs from the protocol warm start of ``bench_transfer.py`` (seed 0; trained first when it is
not there) on SmolLM2-135M, in two trainers:

* ``trl``: TRL's ``GRPOTrainer`` (``share_prompts=False``): every turn after tool results
  prefills the whole conversation again, and the loss pass runs every rollout whole;
* ``affectgym``: :class:`~affectgym.train.shared_prefix.SharedPrefixGRPOTrainer`: the
  group's opening prompt runs once, each rollout keeps its cache across its turns, and the
  loss pass runs the shared prompt once.

Both run with ``learning_rate=0`` from the same seed, so they sample the same rollouts step
after step (the benchmark counts the rollouts whose tokens agree) and only the trainer's
arithmetic differs. Runs alternate (trl, affectgym, affectgym, trl, ...) to spread the
machine's load over both; the first step of each run is a warm-up and is not counted. The
trainer's own methods are timed on its instance (``_generate_and_score_completions`` is the
rollout phase), the env's tools on the factory's class, and the whole step by a callback:

* generation: ``_generate_single_turn``, every turn of every rollout;
* tools: the env's tool methods that TRL calls between turns;
* reward: ``_calculate_rewards`` (the env's one reward path on the finished rollouts);
* the rest of the rollout phase: tokenizing, the tool-message suffixes, bookkeeping;
* loss and backward: the rest of the optimizer step.

Reported per trainer: the median of every phase over the counted steps, and the ratio
``trl / affectgym`` of each; written to ``benchmarks/results/multiturn_step.json``.

Usage: ``python benchmarks/bench_multiturn_step.py [--steps 3] [--rounds 2] [--threads 1]``
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
from typing import Any

from bench_train import timed  # the same wall-time wrapper as the reward-overhead benchmark

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "multiturn_step.json"
PHASES = ("generation", "tools", "reward", "other rollout work", "loss and backward")
TRAINERS = ("trl", "affectgym")


def warm_start() -> Path:
    """The seed-0 protocol warm start of ``bench_transfer.py`` (trained there first when missing)."""
    from bench_transfer import SFT_STEPS, sft_stage

    adapter, _ = sft_stage(0, SFT_STEPS)
    return adapter


def run(trainer_name: str, init: Path, steps: int) -> tuple[list[dict[str, float]], list[list[list[int]]], dict]:
    """One run of ``steps`` steps in ``trainer_name``'s trainer: each step's phases, each step's rollouts (their
    completion ids) and the run's last logged metrics."""
    from transformers import TrainerCallback

    from affectgym.train.grpo import build_trainer
    from affectgym.train.recipes import sarcasm_multiturn_grpo_config

    with tempfile.TemporaryDirectory() as out:
        config = sarcasm_multiturn_grpo_config(out, str(init), max_steps=steps, save_steps=0, learning_rate=0.0,
                                               share_prompts=trainer_name == "affectgym")
        trainer = build_trainer(config, gpu=False)
        buckets: dict[str, list[float]] = defaultdict(list)
        for name, phase in (("_generate_single_turn", "generation"), ("_calculate_rewards", "reward")):
            setattr(trainer, name, timed(getattr(trainer, name), buckets[phase]))
        rollouts: list[list[list[int]]] = []
        score = trainer._generate_and_score_completions

        def scored(inputs: Any) -> dict[str, Any]:
            tick = time.perf_counter()
            try:
                output = score(inputs)
            finally:
                buckets["rollout"].append(time.perf_counter() - tick)
            rollouts.append([row[mask.bool()].tolist() for row, mask in
                             zip(output["completion_ids"], output["completion_mask"], strict=True)])
            return output

        trainer._generate_and_score_completions = scored
        environment_class = type(next(iter(trainer._environment_pool.values()))[0])  # affectgym's factory class
        originals = {}
        for name, function in inspect.getmembers(environment_class, predicate=inspect.isfunction):
            if name not in ("reset", "get_reward") and not name.startswith("_"):  # the tools, as TRL lists them
                originals[name] = function
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
        try:
            trainer.train()
        finally:
            for name, function in originals.items():
                setattr(environment_class, name, function)
        logged = [row for row in trainer.state.log_history if "completions/mean_length" in row]
    return rows, rollouts, logged


def summarise(runs: dict[str, list[tuple[list[dict[str, float]], list, list[dict]]]], steps: int, rounds: int,
              threads: int, init: Path) -> dict[str, Any]:
    """Median phases of each trainer over its counted steps, the ``trl / affectgym`` ratios, and how many rollouts
    the two trainers sampled alike."""
    medians, logs = {}, {}
    for name, played in runs.items():
        counted = [row for rows, _, _ in played for row in (rows[1:] or rows)]
        medians[name] = {key: statistics.median(row[key] for row in counted) for key in (*PHASES, "step")}
        logs[name] = [row for _, _, logged in played for row in logged]
    same = total = 0
    for (_, ours, _), (_, theirs, _) in zip(runs["affectgym"], runs["trl"], strict=True):
        for our_step, their_step in zip(ours, theirs, strict=True):
            same += sum(a == b for a, b in zip(our_step, their_step, strict=True))
            total += len(our_step)

    def mean_of(name: str, key: str) -> float | None:
        values = [row[key] for row in logs[name] if key in row]
        return round(statistics.mean(values), 3) if values else None

    return {
        "recipe": "sarcasm_multiturn_grpo_config", "model": "smollm2-135m",
        "warm_start": str(init.relative_to(ROOT)) if init.is_relative_to(ROOT) else str(init),
        "learning_rate": 0.0, "steps_per_run": steps, "rounds": rounds, "rollouts_per_step": 8, "threads": threads,
        "counted_steps": {name: sum(len(rows[1:] or rows) for rows, _, _ in played) for name, played in runs.items()},
        "median_s": {name: {key: round(value, 2) for key, value in phase.items()} for name, phase in medians.items()},
        "trl_over_affectgym": {key: round(medians["trl"][key] / medians["affectgym"][key], 2)
                               for key in ("generation", "loss and backward", "step")},
        "rollouts_alike": {"same": same, "of": total},
        "mean_completion_tokens": {name: mean_of(name, "completions/mean_length") for name in runs},
        "tool_calls_per_rollout": {name: mean_of(name, "env/tool_calls") for name in runs},
        "rollout_cache_reused_fraction": mean_of("affectgym", "rollout_cache/reused_fraction"),
        "per_step": {name: [row for rows, _, _ in played for row in rows] for name, played in runs.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps a run; the first is a warm-up")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each trainer, alternated")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    args = parser.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    init = warm_start()
    runs: dict[str, list] = {name: [] for name in TRAINERS}
    for round_index in range(args.rounds):
        for name in TRAINERS if round_index % 2 == 0 else TRAINERS[::-1]:
            runs[name].append(run(name, init, args.steps))
            print(f"round {round_index + 1}, {name}: " + ", ".join(
                f"{row['step']:.1f} s" for row in runs[name][-1][0]), flush=True)
    result = summarise(runs, args.steps, args.rounds, torch.get_num_threads(), init)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"multi-turn GRPO step, 8 rollouts, {result['threads']} thread(s), median of "
          f"{result['counted_steps']['affectgym']} step(s) each; rollouts sampled alike: "
          f"{result['rollouts_alike']['same']} of {result['rollouts_alike']['of']}")
    print(f"  {'phase':20s} {'trl':>9s} {'affectgym':>10s} {'trl/affectgym':>14s}")
    for phase in (*PHASES, "step"):
        trl, ours = result["median_s"]["trl"][phase], result["median_s"]["affectgym"][phase]
        print(f"  {phase:20s} {trl:8.2f}s {ours:9.2f}s {trl / ours if ours else float('nan'):13.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
