"""Overhead of affectgym's reward path in a GRPO step, side by side with a constant reward.

Two trainers on the same model, data order and seed, with ``learning_rate=0`` so that both
generate exactly the same completions at every step: one scores with affectgym's reward
functions (one per rubric component, one ``score_batch`` per batch), the other with a
single constant reward. The step times differ only by the reward path. Runs alternate
(A, B, A, B) to spread the load of a shared machine over both; the first step of each run
is a warm-up and is not counted.

Reported: median step time of each, their ratio (the overhead; target <= 5%), the time
inside the affectgym reward functions per step, and, separately, the time of the env's
batched scorers (a classifier or judge, when the env's rubric has one) inside them.

Usage: ``python benchmarks/bench_train.py [--env affectgym/Sarcasm-v0] [--model smollm2-135m|tiny]
[--steps 4] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tiny_models


def constant_reward(completions, **kwargs):
    """The trivial reward: 0.5 for every completion."""
    return [0.5] * len(completions)


def timed(func, bucket):
    """``func`` with its wall time added to ``bucket`` (same ``__name__``, so TRL logs it the same)."""

    def wrapper(*args, **kwargs):
        tick = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            bucket.append(time.perf_counter() - tick)

    wrapper.__name__ = func.__name__
    return wrapper


def step_times(config, reward_funcs=None, reward_weights=None):
    """Seconds of each optimizer step of a run (TrainerCallback timestamps)."""
    from transformers import TrainerCallback

    from affectgym.train.grpo import build_trainer

    class Clock(TrainerCallback):
        def __init__(self):
            self.times = []
            self.start = None

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.start)

    trainer = build_trainer(config, gpu=False, reward_funcs=reward_funcs, reward_weights=reward_weights)
    clock = Clock()
    trainer.add_callback(clock)
    trainer.train()
    return clock.times[1:]


def batched_scorer_seconds(env_id, env_kwargs):
    """Wrap the env's batched criteria (classifier, judge) with timers; return the list they fill."""
    import dataclasses

    from affectgym.train.flatten import shared_env

    env = shared_env(env_id, {"split": "train", **env_kwargs})
    spent = []
    criteria = []
    for criterion in env.rubric.criteria:
        if criterion.batched:
            criterion = dataclasses.replace(criterion, fn=timed(criterion.fn, spent))
        criteria.append(criterion)
    env.rubric = dataclasses.replace(env.rubric, criteria=tuple(criteria))
    return spent


def main(argv=None) -> int:
    """Run the benchmark and print the side-by-side numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="affectgym/Sarcasm-v0")
    parser.add_argument("--env-kwargs", default='{"rubric": "single"}', help="JSON")
    parser.add_argument("--model", default="smollm2-135m", help="an alias or folder, or 'tiny' (a test model)")
    parser.add_argument("--steps", type=int, default=4, help="measured steps per run (plus one warm-up)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--completion-tokens", type=int, default=32)
    args = parser.parse_args(argv)

    import json

    import torch

    from affectgym.train.config import TrainConfig
    from affectgym.train.rewards import reward_functions

    torch.set_num_threads(2)
    env_kwargs = json.loads(args.env_kwargs)
    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    model = args.model
    if model == "tiny":
        from tiny_models import tiny_causal_lm

        model = str(tiny_causal_lm(work))
    config = TrainConfig(
        env_id=args.env, model=model, max_steps=args.steps + 1, num_generations=4, batch_size=8,
        max_completion_length=args.completion_tokens, learning_rate=0.0, lora_r=8, eval_episodes=0,
        output_dir=str(work / "run"), env_kwargs=env_kwargs, seed=0,
    )
    scorer_s = batched_scorer_seconds(args.env, env_kwargs)
    affect_steps, const_steps, reward_s = [], [], []
    for _ in range(args.rounds):
        funcs, weights = reward_functions(args.env, {"split": "train", **env_kwargs})
        affect_steps += step_times(config, [timed(f, reward_s) for f in funcs], weights)
        const_steps += step_times(config, [constant_reward], [1.0])
    affect, const = statistics.median(affect_steps), statistics.median(const_steps)
    measured = args.rounds * (args.steps + 1)  # reward calls happen on every step, warm-up included
    reward_per_step = sum(reward_s) / measured
    scorer_per_step = sum(scorer_s) / measured
    print(f"GRPO step, {args.env} {env_kwargs}, model {args.model}, 8 completions x {args.completion_tokens} tokens, "
          f"{args.rounds} rounds x {args.steps} steps")
    print(f"  constant reward        median step {const:7.3f} s")
    print(f"  affectgym rewards      median step {affect:7.3f} s")
    print(f"  ratio                  {affect / const:7.3f}  (overhead {100 * (affect / const - 1):+.1f}%)")
    print(f"  inside affectgym reward functions: {reward_per_step * 1000:.1f} ms/step "
          f"({100 * reward_per_step / const:.2f}% of a step), of which batched scorers "
          f"(classifier/judge) {scorer_per_step * 1000:.1f} ms/step")
    print(f"  reward path without scorers: {100 * (reward_per_step - scorer_per_step) / const:.2f}% of a step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
