"""Side-by-side speed of the reward stack: emotion classifier and LLM judge.

Prints ratios measured in one run (not a timed test):

- classifier: 256 replies of about 120 tokens, 2 CPU threads, a randomly initialised model
  of the distilroberta shape built from a config (the hub model is not downloaded). The
  default path (auto precision, length-bucketed batches) against the naive path (fp32,
  one reply at a time), and every target probability's largest difference between them.
  Also each precision on its own, to back the per-device default.
- judge: 64 calls against a local OpenAI-compatible server with a fixed latency, at
  concurrency 16 against sequential, and a repeated batch served from the on-disk cache.

Usage: ``python benchmarks/bench_rewards.py [--only classifier|judge] [--replies 256]``
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for openai_server, judge_answers, tiny_emotion_model

DISTILROBERTA_SHAPE = {
    "hidden_size": 768,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "vocab_size": 50265,
    "max_position_embeddings": 514,
    "initializer_range": 0.02,
}


def _synthetic_replies(count: int, mean_words: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ren", "tas", "vu", "po", "ished", "ner", "sa", "dim", "or"]
    vocabulary = sorted({"".join(rng.choices(syllables, k=rng.randint(1, 3))) for _ in range(6000)})
    replies = [
        " ".join(rng.choices(vocabulary, k=max(8, int(rng.gauss(mean_words, mean_words / 3)))))
        for _ in range(count)
    ]
    return replies, vocabulary


def bench_classifier(replies_count: int, threads: int, initializer_range: float = 0.02) -> None:
    """Default CPU path against the naive path on a distilroberta-shaped random model."""
    import torch
    from tiny_emotion_model import save_random_emotion_model

    from affectgym.emotions import EMOTIONS
    from affectgym.rewards.classifier import EmotionClassifier

    torch.set_num_threads(threads)
    replies, vocabulary = _synthetic_replies(replies_count, mean_words=118)
    targets = [EMOTIONS[i % len(EMOTIONS)] for i in range(len(replies))]
    with tempfile.TemporaryDirectory() as tmp:
        shape = DISTILROBERTA_SHAPE | {"initializer_range": initializer_range}
        directory = save_random_emotion_model(
            Path(tmp) / "model", corpus=[" ".join(vocabulary)], **shape
        )
        default = EmotionClassifier(model=directory)
        tokens = [len(ids) for ids in default._loaded()[0](replies)["input_ids"]]
        print(
            "classifier: hub model j-hartmann/emotion-english-distilroberta-base could not be "
            "downloaded (no hub access); random model of its shape built from a config"
        )
        print(
            f"  {len(replies)} replies, mean {sum(tokens) / len(tokens):.0f} tokens, {threads} threads"
        )

        def timed(classifier: EmotionClassifier) -> tuple[float, float, list[float]]:
            classifier.target_probability(replies[:4], targets[:4])  # load + warm up
            wall, cpu = time.perf_counter(), time.process_time()
            probabilities = classifier.target_probability(replies, targets)
            return time.perf_counter() - wall, time.process_time() - cpu, probabilities

        # The machine may be shared: time the default path before and after the naive one and
        # keep the faster run, and report process CPU time, which other processes disturb less.
        first = timed(default)
        naive_s, naive_cpu_s, naive = timed(
            EmotionClassifier(model=directory, precision="fp32", batch_size=1)
        )
        second = timed(default)
        print(
            f"  naive fp32, one at a time              wall {naive_s:7.2f} s  cpu {naive_cpu_s:7.2f} s"
            f"  (target probabilities span {min(naive):.3f}..{max(naive):.3f}, weights std {initializer_range})"
        )
        results = [("default", default, min(first, second, key=lambda r: r[0]))]
        for precision in ("fp32", "bf16", "int8-dynamic"):
            classifier = EmotionClassifier(model=directory, precision=precision)
            results.append((precision, classifier, timed(classifier)))
        for name, classifier, (seconds, cpu_s, probabilities) in results:
            worst = max(abs(a - b) for a, b in zip(probabilities, naive, strict=True))
            label = f"{name} ({classifier.precision}, batch {classifier.batch_size})"
            print(
                f"  {label:39s}wall {seconds:7.2f} s  cpu {cpu_s:7.2f} s  "
                f"x{naive_s / seconds:5.2f} wall, x{naive_cpu_s / cpu_s:5.2f} cpu vs naive  "
                f"max |dp| {worst:.4f}"
            )


def bench_judge(calls: int, concurrency: int, latency_s: float) -> None:
    """Concurrent judge calls against sequential ones, and a cached repeat."""
    from judge_answers import format_judge_reply
    from openai_server import OpenAIServer

    from affectgym.rewards.judge import EmotionJudge, JudgeConfig

    prompts = [f"Explain item {i} of the list." for i in range(calls)]
    targets = ["anger"] * calls
    replies = [f"Item {i}? Again? Unbelievable." for i in range(calls)]
    verdict = format_judge_reply(emotion_match="high", quality="medium")
    with (
        OpenAIServer(lambda body: verdict, latency_s=latency_s) as server,
        tempfile.TemporaryDirectory() as cache,
    ):

        def run(max_concurrency: int, cache_dir: str | None, batch_prompts: list[str]) -> float:
            config = JudgeConfig(
                max_concurrency=max_concurrency, cache=cache_dir is not None, cache_dir=cache_dir
            )
            judge = EmotionJudge.from_url(server.url, "test-model", api_key="local", config=config)
            # Warm up (DSPy and its HTTP client set up per thread on first use), uncached.
            warm = [f"warm-up {time.perf_counter()} {i}" for i in range(max_concurrency)]
            judge.score_batch(warm, targets[: len(warm)], replies[: len(warm)])
            start = time.perf_counter()
            verdicts = judge.score_batch(batch_prompts, targets, replies)
            elapsed = time.perf_counter() - start
            assert all(v is not None for v in verdicts), f"judge failures: {judge.failures}"
            return elapsed

        sequential_s = run(1, None, prompts)
        concurrent_s = run(concurrency, None, [p + " " for p in prompts])
        first_s = run(concurrency, cache, [p + "  " for p in prompts])
        cached_s = run(concurrency, cache, [p + "  " for p in prompts])
        print(f"judge: {calls} calls, server latency {latency_s * 1000:.0f} ms")
        print(f"  sequential                  {sequential_s:7.3f} s")
        print(
            f"  concurrency {concurrency:<3d}             {concurrent_s:7.3f} s  x{sequential_s / concurrent_s:6.1f} vs sequential"
        )
        print(f"  first batch, cache on       {first_s:7.3f} s")
        print(
            f"  repeated batch from cache   {cached_s:7.4f} s  x{first_s / cached_s:6.0f} vs first"
        )


def main() -> int:
    """Run the benchmarks named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["classifier", "judge"], default=None)
    parser.add_argument("--replies", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--init-range", type=float, default=0.02, help="std of the random weights (0.02: RoBERTa's)"
    )
    parser.add_argument("--judge-calls", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    if args.only in (None, "classifier"):
        bench_classifier(args.replies, args.threads, args.init_range)
    if args.only in (None, "judge"):
        bench_judge(args.judge_calls, args.concurrency, args.latency_ms / 1000)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
