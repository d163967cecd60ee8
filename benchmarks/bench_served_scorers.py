"""Model-scored envs served to 16 sessions at once against in process: time per step, memory, equal rewards.

EmotionStyle-v0 (the SmolLM2 probe) and EmpatheticDialogue-v0 (nade and the SmolLM2
relevance model) each score 16 replies of 32 KB that still parse, one per scenario, so every
scorer reads them. In process: one env plays them one after another. Served: ``affectgym
serve``'s app (uvicorn in a thread of this process, so the scorers' models are the ones
already loaded) takes 16 WebSocket sessions at once, one reply each. Both start with cold
memos (a fresh env per phase, fresh sessions), so every reply is scored.

Printed and written to ``benchmarks/results/served_scorers.json``: seconds per step (in
process, and as each served client sees it), replies per second, the served/in-process
throughput ratio, the largest difference between a served and an in-process reward, and the
process's peak resident memory after each phase.

Usage: ``python benchmarks/bench_served_scorers.py [--sessions 16]``
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # served_env

RESULTS = Path(__file__).resolve().parent / "results" / "served_scorers.json"
#: The envs served, with their offline scorers.
SERVED = {"affectgym/EmotionStyle-v0": {"classifier": "probe", "split": "eval"},
          "affectgym/EmpatheticDialogue-v0": {"split": "eval"}}


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_process(env_id: str, sessions: int) -> tuple[list[str], list[str], list[float], list[float], float]:
    """The scenario ids, replies, rewards and step seconds of one fresh env playing them in turn; wall seconds."""
    from served_env import long_reply

    import affectgym

    warm = affectgym.make(env_id, **SERVED[env_id]).unwrapped
    warm.score(warm.scenarios[-1], *warm.reference_answer(warm.scenarios[-1]))  # loads the models the phases share
    env = affectgym.make(env_id, **SERVED[env_id]).unwrapped
    scenarios = env.scenarios[:sessions]
    replies = [long_reply(env, scenario) for scenario in scenarios]
    rewards, seconds = [], []
    started = time.perf_counter()
    for scenario, reply in zip(scenarios, replies, strict=True):
        env.reset(seed=0, options={"scenario_id": scenario.id})
        begun = time.perf_counter()
        rewards.append(env.step(reply)[1])
        seconds.append(time.perf_counter() - begun)
    return [s.id for s in scenarios], replies, rewards, seconds, time.perf_counter() - started


def served(env_id: str, scenario_ids: list[str], replies: list[str]) -> tuple[list[float], list[float], float]:
    """Rewards and step seconds of ``len(replies)`` concurrent WebSocket sessions, one reply each; wall seconds."""
    from served_env import ServedEnv

    from affectgym.integrations.openenv.client import RemoteEnv

    def play(index: int) -> tuple[float, float]:
        env = RemoteEnv(server.ws_url, message_timeout_s=1800)
        try:
            env.reset(seed=0, options={"scenario_id": scenario_ids[index]})
            begun = time.perf_counter()
            reward = env.step(replies[index])[1]
            return reward, time.perf_counter() - begun
        finally:
            env.close()

    with ServedEnv(env_id, SERVED[env_id], max_sessions=len(replies)) as server, ThreadPoolExecutor(len(replies)) as pool:
        started = time.perf_counter()
        played = list(pool.map(play, range(len(replies))))
        wall_s = time.perf_counter() - started
    return [reward for reward, _ in played], [seconds for _, seconds in played], wall_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=16, help="replies, and concurrent served sessions (default 16)")
    args = parser.parse_args(argv)
    if args.sessions < 1:
        parser.error(f"--sessions must be a positive integer, got {args.sessions}")
    rows = []
    for env_id in SERVED:
        ids, replies, local_rewards, local_s, local_wall = in_process(env_id, args.sessions)
        memory_local = peak_rss_mib()
        served_rewards, served_s, served_wall = served(env_id, ids, replies)
        rows.append({
            "env": env_id, "sessions": len(replies), "reply_bytes": len(replies[0].encode()),
            "in_process_step_s_mean": statistics.fmean(local_s), "served_step_s_mean": statistics.fmean(served_s),
            "served_step_s_max": max(served_s), "in_process_replies_per_s": len(replies) / local_wall,
            "served_replies_per_s": len(replies) / served_wall, "served_over_in_process": local_wall / served_wall,
            "largest_reward_difference": max(abs(a - b) for a, b in zip(served_rewards, local_rewards, strict=True)),
            "peak_rss_mib_after_in_process": memory_local, "peak_rss_mib_after_served": peak_rss_mib(),
        })
    header = "| env | sessions | step s in process | step s served (mean, max) | replies/s in process | served | ratio | largest reward difference | peak RSS MiB (in process, served) |"
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['env']} | {row['sessions']} | {row['in_process_step_s_mean']:.2f} | {row['served_step_s_mean']:.2f}, "
              f"{row['served_step_s_max']:.2f} | {row['in_process_replies_per_s']:.2f} | {row['served_replies_per_s']:.2f} | "
              f"{row['served_over_in_process']:.2f} | {row['largest_reward_difference']:.1e} | "
              f"{row['peak_rss_mib_after_in_process']:.0f}, {row['peak_rss_mib_after_served']:.0f} |")
    RESULTS.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
