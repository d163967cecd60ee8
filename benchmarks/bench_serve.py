"""Sarcasm-v0 served over loopback (``affectgym serve``) against in process, as ratios measured in one run.

Each episode is what a tool-calling agent plays: reset on a scenario, one
``get_prosody_features`` call, a final answer (two steps), with an instant scripted
agent, so the numbers are the env's and the transport's cost alone. In process: the env
made by ``affectgym.make``; over loopback: :class:`~affectgym.integrations.openenv.client.RemoteEnv`
(OpenEnv's WebSocket client, one session per client thread) against ``affectgym serve``
started in a subprocess on 127.0.0.1 with 1 and with 2 uvicorn workers. Concurrency 1 is
one client; concurrency 32 is 32 client threads, each with its own env or session. Every
configuration first opens its sessions (one at a time) and plays each scenario once (the
prosody cache is then warm, as in a long run), and is then timed.

Printed: episodes per second, the mean and median latency of one step as the client sees
it, the per-step overhead of the wire at concurrency 1 (goal: at most 2 ms) and the
ratios (loopback / in process, 2 workers / 1 worker).

Usage: ``python benchmarks/bench_serve.py [--episodes-per-client 10] [--workers 1 2]``
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # served_env

SARCASM_ID = "affectgym/Sarcasm-v0"
SPLIT = "eval"
PROSODY_CALL = '<tool_call>{"name": "get_prosody_features", "arguments": {}}</tool_call>'
ANSWER = '<final>{"label": "sarcastic", "confidence": 0.7}</final>'


def play(env, scenario_ids: list[str], episodes: int, offset: int, step_s: list[float], failures: list[str]) -> None:
    """``episodes`` two-step episodes on ``env``, appending each step's latency to ``step_s``.

    A session the server closes (a keepalive ping unanswered on a starved machine) ends the
    client's episodes; the reason goes to ``failures`` and the table counts only whole episodes.
    """
    for index in range(episodes):
        try:
            env.reset(seed=index, options={"scenario_id": scenario_ids[(offset + index) % len(scenario_ids)]})
            for action in (PROSODY_CALL, ANSWER):
                tick = time.perf_counter()
                env.step(action)
                step_s.append(time.perf_counter() - tick)
        except ConnectionError as exc:
            failures.append(str(exc))
            return


def measure(make_env, scenario_ids: list[str], concurrency: int, episodes_per_client: int) -> dict[str, float]:
    """Episodes/s and step latencies of ``concurrency`` clients, each on its own env from ``make_env``."""
    envs = [make_env() for _ in range(concurrency)]
    for env in envs:  # one session each, opened (and its env made) before the clock starts
        env.reset(seed=0, options={"scenario_id": scenario_ids[0]})
    failures: list[str] = []
    play(envs[0], scenario_ids, len(scenario_ids), 0, [], failures)  # warm: every scenario once (prosody cache)
    latencies: list[list[float]] = [[] for _ in envs]
    threads = [
        threading.Thread(target=play, args=(env, scenario_ids, episodes_per_client, i * 7, latencies[i], failures))
        for i, env in enumerate(envs)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed_s = time.perf_counter() - started
    for env in envs:
        env.close()
    steps = [s for client in latencies for s in client]
    return {
        "episodes_per_s": len(steps) // 2 / elapsed_s,
        "failed_sessions": len(failures),
        "step_mean_ms": 1000 * statistics.fmean(steps),
        "step_median_ms": 1000 * statistics.median(steps),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes-per-client", type=int, default=10, help="timed episodes per client (concurrency 1 plays 5x as many)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="uvicorn worker counts to serve with")
    args = parser.parse_args()

    from served_env import serve_process

    import affectgym
    from affectgym.integrations.openenv.client import RemoteEnv

    scenario_ids = affectgym.make(SARCASM_ID, split=SPLIT).unwrapped.scenario_ids
    rows: dict[tuple[str, int], dict[str, float]] = {}
    for concurrency in (1, 32):
        episodes = args.episodes_per_client * (5 if concurrency == 1 else 1)
        make_local = functools.partial(affectgym.make, SARCASM_ID, split=SPLIT)
        rows[("in process", concurrency)] = measure(make_local, scenario_ids, concurrency, episodes)
    with tempfile.TemporaryDirectory() as tmp:
        for workers in args.workers:
            log = Path(tmp) / f"serve-{workers}.log"
            with serve_process(SARCASM_ID, "--split", SPLIT, "--workers", str(workers), "--max-sessions", "64",
                               "--log-level", "warning", log=log, startup_timeout_s=1800) as url:
                ws_url = url.replace("http://", "ws://")
                for concurrency in (1, 32):
                    episodes = args.episodes_per_client * (5 if concurrency == 1 else 1)
                    rows[(f"loopback, {workers} worker{'s' * (workers > 1)}", concurrency)] = measure(
                        functools.partial(RemoteEnv, ws_url), scenario_ids, concurrency, episodes
                    )

    print(f"{SARCASM_ID} ({SPLIT} split), 2-step episodes (a prosody tool call, an answer), instant scripted agent; "
          f"load average when done: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| where | concurrency | episodes/s | step mean (ms) | step median (ms) | episodes/s vs in process | sessions lost |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (where, concurrency), row in rows.items():
        ratio = row["episodes_per_s"] / rows[("in process", concurrency)]["episodes_per_s"]
        print(f"| {where} | {concurrency} | {row['episodes_per_s']:.1f} | {row['step_mean_ms']:.2f} | "
              f"{row['step_median_ms']:.2f} | {ratio:.2f}x | {row['failed_sessions']} |")
    print()
    local = rows[("in process", 1)]
    for where, concurrency in rows:
        if where != "in process" and concurrency == 1:
            overhead = rows[(where, 1)]["step_median_ms"] - local["step_median_ms"]
            print(f"per-step overhead of the wire, {where}, concurrency 1 (median): {overhead:.2f} ms (goal: <= 2 ms)")
    one, two = ("loopback, 1 worker", 32), ("loopback, 2 workers", 32)
    if one in rows and two in rows:
        print(f"2 workers / 1 worker at concurrency 32: {rows[two]['episodes_per_s'] / rows[one]['episodes_per_s']:.2f}x episodes/s")


if __name__ == "__main__":
    main()
