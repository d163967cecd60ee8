"""Is there anything for GRPO to reinforce on EmotionStyle-v0? Best-of-K headroom of the base policy.

GRPO can only raise what the policy already samples now and then. For each of ``--prompts``
train scenarios (the flat prompts the recipe ``emotion-style-grpo`` trains on), the base
SmolLM2-135M-Instruct samples ``--samples`` replies as the recipe does (temperature 1, at
most :data:`~affectgym.train.recipes.STYLE_MAX_NEW_TOKENS` tokens), and the env's own scorer
reads each: the classifier's top emotion, P(target), the rules. Printed, side by side:

* ``sample``: the share of single samples whose top emotion is the target (target accuracy
  of one sample), and their mean P(target);
* ``best-of-K``: the share of prompts where at least one of the K samples has the target on
  top (the ceiling a reward that picks the best sample could pull the policy to), and the
  mean of each prompt's highest P(target);
* ``neutral on top``: the share of samples the classifier reads as neutral;
* for reference, chance (1/7) and the target's rank among the seven, averaged.

Every sample, scored, is written to ``benchmarks/results/emotion_style_headroom_samples.jsonl``
and the table to ``benchmarks/results/emotion_style_headroom.json``. About 7 minutes on one
core for 64 prompts x 8 samples.

Usage::

    python benchmarks/bench_style_headroom.py [--prompts 64] [--samples 8] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SAMPLES_FILE = RESULTS / "emotion_style_headroom_samples.jsonl"
SUMMARY_FILE = RESULTS / "emotion_style_headroom.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=64, help="train scenarios sampled (default 64)")
    parser.add_argument("--samples", type=int, default=8, help="replies sampled per prompt (default 8: the recipe's group)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch
    from transformers import set_seed

    import affectgym
    from affectgym.emotions import EMOTIONS
    from affectgym.train.policy import load_policy
    from affectgym.train.recipes import (
        EMOTION_STYLE_ENV_ID,
        STYLE_MAX_NEW_TOKENS,
        emotion_style_grpo_config,
    )
    from affectgym.train.sampling import sample_replies

    torch.set_num_threads(1)
    recipe = emotion_style_grpo_config(ROOT / "runs" / "bench_style_headroom", seed=args.seed)
    env = affectgym.make(EMOTION_STYLE_ENV_ID, **{**recipe.env_kwargs, "split": "train"}).unwrapped
    scenarios = list(env.scenarios)[: args.prompts]
    prompts = [env.flat_prompt(scenario) for scenario in scenarios]
    model, tokenizer, _ = load_policy(recipe, gpu=False)
    set_seed(args.seed)
    started = time.perf_counter()
    replies = sample_replies(model, tokenizer, prompts, samples=args.samples, max_new_tokens=STYLE_MAX_NEW_TOKENS,
                             temperature=1.0)
    sampling_s = time.perf_counter() - started

    rows = []
    for scenario, group in zip(scenarios, replies, strict=True):
        distributions = env.distributions(group)
        results = env.score_batch([scenario] * len(group), group, [env.flat_trace(scenario)] * len(group))
        for reply, distribution, result in zip(group, distributions, results, strict=True):
            ranked = sorted(EMOTIONS, key=lambda label: -distribution[label])
            rows.append({
                "scenario_id": scenario.id, "target": scenario.emotion, "reply": reply,
                "classifier_top": ranked[0], "target_rank": ranked.index(scenario.emotion) + 1,
                "target_probability": distribution[scenario.emotion], "reward": float(result.total),
                "components": dict(result.components),
            })
    by_prompt: dict[str, list[dict]] = {}
    for row in rows:
        by_prompt.setdefault(row["scenario_id"], []).append(row)
    summary = {
        "prompts": len(by_prompt), "samples_per_prompt": args.samples, "seed": args.seed,
        "max_new_tokens": STYLE_MAX_NEW_TOKENS, "temperature": 1.0, "sampling_s": round(sampling_s, 1),
        "chance": 1 / len(EMOTIONS),
        "sample_target_accuracy": statistics.fmean(r["classifier_top"] == r["target"] for r in rows),
        "sample_target_probability": statistics.fmean(r["target_probability"] for r in rows),
        "best_of_k_target_accuracy": statistics.fmean(
            any(r["classifier_top"] == r["target"] for r in group) for group in by_prompt.values()),
        "best_of_k_target_probability": statistics.fmean(
            max(r["target_probability"] for r in group) for group in by_prompt.values()),
        "neutral_on_top": statistics.fmean(r["classifier_top"] == "neutral" for r in rows),
        "mean_target_rank": statistics.fmean(r["target_rank"] for r in rows),
        "mean_reward_spread_in_group": statistics.fmean(
            max(r["reward"] for r in group) - min(r["reward"] for r in group) for group in by_prompt.values()),
        "mean_target_probability_spread_in_group": statistics.fmean(
            max(r["target_probability"] for r in group) - min(r["target_probability"] for r in group)
            for group in by_prompt.values()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    SAMPLES_FILE.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    SUMMARY_FILE.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"EmotionStyle-v0 headroom of the base policy: {summary['prompts']} train prompts x {args.samples} samples "
          f"(temperature 1, <= {STYLE_MAX_NEW_TOKENS} tokens; sampling {sampling_s:.0f} s)")
    print(f"{'':<28}{'one sample':>12}{'best of ' + str(args.samples):>12}")
    print(f"{'target accuracy':<28}{summary['sample_target_accuracy']:>12.3f}{summary['best_of_k_target_accuracy']:>12.3f}"
          f"   (chance {summary['chance']:.3f})")
    print(f"{'P(target)':<28}{summary['sample_target_probability']:>12.3f}{summary['best_of_k_target_probability']:>12.3f}")
    print(f"neutral on top {summary['neutral_on_top']:.3f}; the target's mean rank {summary['mean_target_rank']:.2f} of "
          f"{len(EMOTIONS)}; within a group: reward spread {summary['mean_reward_spread_in_group']:.3f}, "
          f"P(target) spread {summary['mean_target_probability_spread_in_group']:.3f}")
    if not math.isfinite(summary["sample_target_probability"]):
        raise SystemExit("no sample was scored")


if __name__ == "__main__":
    main()
