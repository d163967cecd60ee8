"""Sarcasm-v0 benchmark: env cost per episode, flattening speed, and the MUStARD text probe.

Prints, in one run:
* the median env time of a full episode (reset, three tool calls, final answer) with a warm
  feature cache (target: under 1 ms), beside the time of the same episode's tool outputs
  computed without the in-process memo (the disk cache only);
* the time to build 10,000 flattened single-shot prompts (target: under 20 s on one core);
* the text probe's weighted F1 on MUStARD's 5 speaker-dependent folds beside the published
  text-only SVM (64.6), and the speaker-independent figure (needs shared/data/mustard).

Run: python benchmarks/bench_sarcasm.py  (pin one core with `taskset -c 0` for per-core figures)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import affectgym
from affectgym.data.speech_splits import ClipSplit, mustard_fold
from affectgym.features import cache as cache_module

MUSTARD = Path(__file__).resolve().parents[2] / "shared" / "data" / "mustard"
PUBLISHED_TEXT_SVM_F1 = 64.6
TOOLS = ("get_transcript", "get_prosody_features", "get_pitch_contour")


def episode_times_ms(env, episodes: int) -> list[float]:
    base = env.unwrapped
    calls = [f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>' for name in TOOLS]
    final = '<final>{"label": "sarcastic", "confidence": 0.8}</final>'
    ids = base.scenario_ids
    times = []
    for i in range(episodes):
        start = time.perf_counter()
        env.reset(options={"scenario_id": ids[i % len(ids)]})
        for text in calls:
            env.step(text)
        env.step(final)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def forget_in_process_features() -> None:
    """Drop the prosody cache's in-process memo, as a new process would start (the disk stays)."""
    cache_module._cache_for(None).clear_memo()
    cache_module._FILE_DIGESTS.clear()


def main() -> int:
    env = affectgym.make("affectgym/Sarcasm-v0", split="all")
    base = env.unwrapped
    episode_times_ms(env, len(base.scenarios))  # warm the feature cache and the norms
    warm = statistics.median(episode_times_ms(env, 2_000))
    forget_in_process_features()
    fresh = affectgym.make("affectgym/Sarcasm-v0", split="all")
    disk = statistics.median(episode_times_ms(fresh, len(base.scenarios)))
    print(f"episode env time, warm: median {warm:.3f} ms (target < 1 ms)")
    print(
        f"episode env time, new env reading the disk cache (norms + rendering on first use): "
        f"median {disk:.3f} ms ({disk / warm:.1f}x warm)"
    )

    forget_in_process_features()
    base = affectgym.make("affectgym/Sarcasm-v0", split="all").unwrapped
    start = time.perf_counter()
    scenarios = base.scenarios
    for i in range(10_000):
        base.flat_prompt(scenarios[i % len(scenarios)])
    flat_s = time.perf_counter() - start
    print(f"10,000 flattened prompts: {flat_s:.2f} s (target < 20 s; {10_000 / flat_s:,.0f} prompts/s)")

    if not (MUSTARD / "sarcasm_data.json").exists():
        print(f"MUStARD annotations not found at {MUSTARD}: probe figures skipped")
        return 0
    from sklearn.metrics import f1_score

    from affectgym.agents.label_baselines import ProbeAgent
    from affectgym.envs.sarcasm import SPEAKER_INDEPENDENT

    kwargs = {"dataset": "mustard", "data_dir": str(MUSTARD)}

    def weighted_f1(train_split: ClipSplit, test_split: ClipSplit) -> float:
        agent = ProbeAgent(features="text", env_kwargs=kwargs, train_split=train_split)
        test_env = affectgym.make("affectgym/Sarcasm-v0", split=test_split, **kwargs)
        gold, predicted = [], []
        for scenario_id in test_env.unwrapped.scenario_ids:
            observation, info = test_env.reset(options={"scenario_id": scenario_id})
            done = False
            while not done:
                observation, _, terminated, truncated, info = test_env.step(agent.act(observation, info))
                done = terminated or truncated
            gold.append(info["outcome"]["label"])
            predicted.append(info["outcome"]["prediction"])
        return 100 * f1_score(gold, predicted, average="weighted")

    folds = [weighted_f1(mustard_fold(k, part="train"), mustard_fold(k)) for k in range(1, 6)]
    mean = statistics.mean(folds)
    print(
        f"MUStARD text probe, 5 speaker-dependent folds: weighted F1 {mean:.1f} "
        f"(folds {', '.join(f'{f:.1f}' for f in folds)}) vs published text SVM {PUBLISHED_TEXT_SVM_F1} "
        f"(difference {mean - PUBLISHED_TEXT_SVM_F1:+.1f}; target within 5)"
    )
    independent = weighted_f1(SPEAKER_INDEPENDENT.with_part("train"), SPEAKER_INDEPENDENT)
    print(f"MUStARD text probe, speaker-independent (test FRIENDS): weighted F1 {independent:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
