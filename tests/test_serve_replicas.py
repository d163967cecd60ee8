"""A run over served replicas survives losing one: its unfinished episodes are played again elsewhere, once each.

Three ``affectgym serve`` processes on 127.0.0.1 serve one run of 322 episodes; one is killed
(SIGKILL, no goodbye) once a third of them are recorded. Every episode must be on disk exactly
once, with no error, and the summary must equal the same run made in process.
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import ExitStack

from served_env import needs_openenv, serve_process
from test_serve import SARCASM, scripted_reply

from affectgym.agents.base import FunctionAgent
from affectgym.eval import EvalConfig, run_eval

pytestmark = needs_openenv

SCENARIOS, ROLLOUTS = 46, 7  # the whole eval split, seven rollouts each: 322 episodes


def kill_when_recorded(results, count: int, process, timeout_s: float = 600.0) -> threading.Thread:
    """A thread that kills ``process`` once ``results`` holds ``count`` lines."""

    def watch() -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if results.exists() and len(results.read_text().splitlines()) >= count:
                process.kill()
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_replica_killed_mid_run_loses_no_episode_and_repeats_none(tmp_path):
    agent = FunctionAgent(scripted_reply, name="scripted")
    config = {"env_id": SARCASM, "agent": "scripted", "n": SCENARIOS, "rollouts": ROLLOUTS, "progress": False}
    with ExitStack() as replicas:
        processes = []
        urls = [replicas.enter_context(serve_process(SARCASM, "--split", "eval", log=tmp_path / f"serve{index}.log",
                                                     processes=processes))
                for index in range(3)]
        results = tmp_path / "served" / "results.jsonl"
        killer = kill_when_recorded(results, SCENARIOS * ROLLOUTS // 3, processes[1])
        served = run_eval(EvalConfig(**config, out=tmp_path / "served", concurrency=6,
                                     env_url=[url.replace("http://", "ws://") for url in urls]), agent=agent)
        killer.join(timeout=5)
        assert processes[1].poll() is not None, "the replica was not killed during the run"
    local = run_eval(EvalConfig(**config, out=tmp_path / "local"), agent=agent)
    records = [json.loads(line) for line in results.read_text().splitlines()]
    keys = [(record["scenario_id"], record["rollout"]) for record in records]
    assert len(keys) == len(set(keys)) == SCENARIOS * ROLLOUTS
    assert [record["error"] for record in records if record["error"]] == []
    assert 1 <= sum(record["lost_sessions"] for record in records) <= 6  # the sessions the killed replica held
    assert served.summary["reward"] == local.summary["reward"]
    assert served.summary["errors"] == local.summary["errors"]


def test_behind_one_url_a_dead_worker_loses_no_episode_the_replay_reaching_another(tmp_path):
    """One port, two uvicorn worker processes: the kernel spreads connections over them, as a
    Kubernetes Service spreads them over pods, so a lost session is replayed on the same URL."""
    import psutil

    agent = FunctionAgent(scripted_reply, name="scripted")
    config = {"env_id": SARCASM, "agent": "scripted", "n": SCENARIOS, "rollouts": 3, "progress": False}
    processes: list = []
    with serve_process(SARCASM, "--split", "eval", "--workers", "2", log=tmp_path / "serve.log", processes=processes) as url:
        children = psutil.Process(processes[0].pid).children()
        workers = [child for child in children if "resource_tracker" not in " ".join(child.cmdline())]
        assert len(workers) == 2, [child.cmdline() for child in children]
        results = tmp_path / "served" / "results.jsonl"
        killer = kill_when_recorded(results, SCENARIOS, workers[0])
        served = run_eval(EvalConfig(**config, out=tmp_path / "served", concurrency=6,
                                     env_url=url.replace("http://", "ws://")), agent=agent)
        killer.join(timeout=5)
        assert not workers[0].is_running(), "the worker was not killed during the run"
    local = run_eval(EvalConfig(**config, out=tmp_path / "local"), agent=agent)
    records = [json.loads(line) for line in results.read_text().splitlines()]
    keys = [(record["scenario_id"], record["rollout"]) for record in records]
    assert len(keys) == len(set(keys)) == SCENARIOS * 3
    assert [record["error"] for record in records if record["error"]] == []
    assert sum(record["lost_sessions"] for record in records) >= 1
    assert served.summary["reward"] == local.summary["reward"]
