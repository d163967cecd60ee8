"""One ``affectgym eval`` run over 1, 2 and 3 local replicas of Sarcasm-v0, side by side (not a timed test).

Each replica is an ``affectgym serve`` process (one uvicorn worker) on 127.0.0.1; the run's
sessions go to them in turn (``--env-url`` repeated). Two agents: a stub that calls the
prosody tool and answers at once (the numbers are the env's and the wire's cost), and the
``prosody-rule`` baseline (it reads the same tool output and decides by rule). For each
setting: episodes a second, and the CPU seconds the client (this process: the runner and
the agent) and the servers spent, so the table says which side was the limit. Every
replica first serves one warm-up run (its prosody cache is then warm, as in a long run).

Usage: ``python benchmarks/bench_replicas.py [--episodes 184] [--concurrency 12]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # served_env, test_serve

import psutil

ENV_ID = "affectgym/Sarcasm-v0"
RESULT = Path(__file__).resolve().parent / "results" / "replicas.json"
SCENARIOS = 46  # the eval split


def agents() -> dict:
    from test_serve import scripted_reply

    from affectgym.agents.base import FunctionAgent
    from affectgym.agents.registry import make_agent

    return {"stub": FunctionAgent(scripted_reply, name="stub"), "prosody-rule": make_agent("prosody-rule", env_id=ENV_ID)}


def timed_run(urls: list[str], agent, episodes: int, concurrency: int, servers: list[psutil.Process]) -> dict:
    from affectgym.eval import EvalConfig, run_eval

    me = psutil.Process()
    client_before = sum(me.cpu_times()[:2])
    servers_before = [sum(server.cpu_times()[:2]) for server in servers]
    with tempfile.TemporaryDirectory() as folder:
        config = EvalConfig(env_id=ENV_ID, agent=agent.name, n=SCENARIOS, rollouts=max(1, episodes // SCENARIOS),
                            concurrency=concurrency, env_url=urls, out=Path(folder) / "run", progress=False)
        started = time.perf_counter()
        result = run_eval(config, agent=agent)
        elapsed_s = time.perf_counter() - started
    errors = result.summary["errors"]["count"]
    return {
        "episodes": result.episodes_played, "errors": errors, "elapsed_s": round(elapsed_s, 2),
        "episodes_per_s": round(result.episodes_played / elapsed_s, 1),
        "client_cpu_s": round(sum(me.cpu_times()[:2]) - client_before, 1),
        "servers_cpu_s": [round(sum(server.cpu_times()[:2]) - before, 1) for server, before in zip(servers, servers_before, strict=True)],
    }


def main() -> None:
    from served_env import serve_process

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=184)
    parser.add_argument("--concurrency", type=int, default=12)
    args = parser.parse_args()
    rows = []
    with ExitStack() as stack, tempfile.TemporaryDirectory() as logs:
        processes: list = []
        urls = [stack.enter_context(serve_process(ENV_ID, "--split", "eval", log=Path(logs) / f"serve{index}.log",
                                                  processes=processes)).replace("http://", "ws://")
                for index in range(3)]
        servers = [psutil.Process(process.pid) for process in processes]
        by_name = agents()
        for index, url in enumerate(urls):  # warm every replica's prosody cache
            timed_run([url], by_name["stub"], SCENARIOS, args.concurrency, [servers[index]])
        for name, agent in by_name.items():
            for replicas in (1, 2, 3):
                row = {"agent": name, "replicas": replicas, "concurrency": args.concurrency,
                       **timed_run(urls[:replicas], agent, args.episodes, args.concurrency, servers[:replicas])}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(f"\n{'agent':<14}{'replicas':>9}{'episodes/s':>12}{'client CPU s':>14}{'servers CPU s':>22}{'elapsed s':>11}")
    for row in rows:
        print(f"{row['agent']:<14}{row['replicas']:>9}{row['episodes_per_s']:>12}{row['client_cpu_s']:>14}"
              f"{' + '.join(map(str, row['servers_cpu_s'])):>22}{row['elapsed_s']:>11}")
    RESULT.write_text(json.dumps({"env": ENV_ID, "cores": os.cpu_count(), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
