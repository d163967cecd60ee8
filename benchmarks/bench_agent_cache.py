"""The local agent with and without its prefix cache, on the same episodes in one run (not a timed test).

SmolLM2-135M-Instruct (base, greedy, 64 tokens a message) plays Sarcasm-v0 eval episodes to
the env's own turn limit (8 messages), where re-reading the chat every turn is most of the
cost. Four settings, each a fresh agent on the same scenarios:

- one episode at a time: ``prefix_cache=0`` (every prompt read whole) against the default cache;
- four at a time (``-c 4``): left-padded batches without the cache against the cache, whose
  requests are generated one after another, each from its own prefix.

For each: episodes a minute, prompt tokens read and reused, and the generation time split
into prefill (start of ``generate`` to its first new token) and decode (the rest), from a
streamer's clock. Every episode is kept (``results.jsonl`` under ``--out``), and greedy
replies are compared across settings.

With ``--adapter PATH`` (the demo's trained adapter, ``runs/demo/flat-grpo/adapter`` after
``affectgym demo``) the same four settings play that adapter in the env form it was trained for
(``SARCASM_AGENT_FORM``: the short form, 4 messages), written to ``agent_cache_adapter.json``.

Usage: ``python benchmarks/bench_agent_cache.py [--episodes 8] [--adapter PATH] [--out DIR]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ENV_ID = "affectgym/Sarcasm-v0"
MAX_NEW_TOKENS = 64
SETTINGS = (  # name, concurrency, prefix_cache
    ("c1, no cache", 1, 0),
    ("c1, prefix cache", 1, 8),
    ("c4, prefix cache", 4, 8),
    ("c4, batched, no cache", 4, 0),
)
RESULT = Path(__file__).resolve().parent / "results" / "agent_cache.json"
ADAPTER_RESULT = RESULT.with_name("agent_cache_adapter.json")


class GenerationClock:
    """Wraps a model's ``generate`` to time its prefill (to the first new token) and its decode."""

    def __init__(self, model):
        from transformers.generation.streamers import BaseStreamer

        self.prefill_s = self.decode_s = 0.0
        clock = self

        class Stamps(BaseStreamer):
            def __init__(self):
                self.started, self.first, self.puts = time.perf_counter(), None, 0

            def put(self, value):
                self.puts += 1
                if self.puts == 2:  # the prompt comes first, then the first new token(s)
                    self.first = time.perf_counter()

            def end(self):
                ended = time.perf_counter()
                first = self.first or ended
                clock.prefill_s += first - self.started
                clock.decode_s += ended - first

        original = model.generate

        def timed_generate(*args, **kwargs):
            return original(*args, streamer=Stamps(), **kwargs)  # generate calls its end()

        model.generate = timed_generate


def play(name: str, concurrency: int, prefix_cache: int, episodes: int, out: Path, adapter: str | None = None) -> dict:
    from affectgym.agents.transformers_agent import TransformersAgent
    from affectgym.eval import EvalConfig, run_eval
    from affectgym.train.recipes import SARCASM_AGENT_FORM

    agent = TransformersAgent("smollm2-135m", adapter=adapter, max_new_tokens=MAX_NEW_TOKENS, temperature=0.0,
                              prefix_cache=prefix_cache, max_batch_size=concurrency, batch_wait_s=0.05)
    clock = GenerationClock(agent.model)
    folder = out / name.replace(", ", "_").replace(" ", "-")
    config = EvalConfig(env_id=ENV_ID, agent="smollm2-135m", out=folder, n=episodes, concurrency=concurrency, split="eval",
                        env_kwargs=dict(SARCASM_AGENT_FORM) if adapter else {}, progress=False, resume=folder.exists())
    result = run_eval(config, agent=agent)
    agent.close()
    records = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    replies = {r["scenario_id"]: [m["content"] for m in r["messages"] if m["role"] == "assistant"] for r in records}
    stats = agent.prefix_cache
    row = {
        "setting": name, "concurrency": concurrency, "prefix_cache": prefix_cache,
        "episodes": result.episodes_played,
        "messages": sum(len(v) for v in replies.values()), "elapsed_s": round(result.elapsed_s, 1),
        "episodes_per_minute": round(60 * result.episodes_played / result.elapsed_s, 2),
        "prefill_s": round(clock.prefill_s, 1), "decode_s": round(clock.decode_s, 1),
        "tokens_generated": agent.tokens_generated(),
        "prompt_tokens_read": stats.prefilled_tokens if stats else None,
        "prompt_tokens_reused": stats.reused_tokens if stats else None,
        "mean_reward": result.summary["reward"]["mean"],
    }
    print(json.dumps(row), flush=True)
    return {"row": row, "replies": replies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--adapter", default=None, help="a trained LoRA adapter to play (default: the base model)")
    parser.add_argument("--out", type=Path, default=None,
                        help="episode folders (default: results/agent_cache, or results/agent_cache_adapter)")
    args = parser.parse_args()
    result = ADAPTER_RESULT if args.adapter else RESULT
    out = args.out or result.with_suffix("")
    played = {setting[0]: play(*setting, args.episodes, out, args.adapter) for setting in SETTINGS}
    rows = [entry["row"] for entry in played.values()]
    baseline = played["c1, no cache"]["replies"]
    for entry in played.values():
        same = sum(entry["replies"][sid] == baseline[sid] for sid in baseline)
        entry["row"]["episodes_with_replies_equal_to_c1_no_cache"] = f"{same}/{len(baseline)}"
    speedups = {
        "c1: prefix cache / no cache": round(rows[1]["episodes_per_minute"] / rows[0]["episodes_per_minute"], 2),
        "c4: prefix cache / batched no cache": round(rows[2]["episodes_per_minute"] / rows[3]["episodes_per_minute"], 2),
    }
    print(f"\n{'setting':<24}{'ep/min':>8}{'prefill s':>11}{'decode s':>10}{'read':>8}{'reused':>8}{'equal':>8}")
    for row in rows:
        print(f"{row['setting']:<24}{row['episodes_per_minute']:>8}{row['prefill_s']:>11}{row['decode_s']:>10}"
              f"{row['prompt_tokens_read'] or '-':>8}{row['prompt_tokens_reused'] or '-':>8}"
              f"{row['episodes_with_replies_equal_to_c1_no_cache']:>8}")
    for label, ratio in speedups.items():
        print(f"{label}: {ratio}x")
    result.write_text(json.dumps({"env": ENV_ID, "model": "smollm2-135m", "adapter": args.adapter,
                                  "max_new_tokens": MAX_NEW_TOKENS, "episodes": args.episodes, "rows": rows,
                                  "speedups": speedups}, indent=2) + "\n")


if __name__ == "__main__":
    main()
