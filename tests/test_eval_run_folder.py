"""One writer per eval folder: real ``affectgym eval`` processes, a second writer refused, a kill resumed.

The runs play the embedded Sarcasm-v0 eval split with the LLM-free ``majority`` baseline,
so an episode takes about a millisecond and a run is long only through its rollouts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from affectgym.eval.results import read_results

REPO = Path(__file__).resolve().parents[1]
ENV_ID = "affectgym/Sarcasm-v0"


def eval_command(out: Path, rollouts: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "affectgym.cli", "eval", ENV_ID, "--agent", "majority", "-r", str(rollouts),
            "--out", str(out), "--no-progress", *extra]


def cli_environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's affectgym, wherever pytest runs


def start_eval(out: Path, rollouts: int) -> subprocess.Popen:
    return subprocess.Popen(eval_command(out, rollouts), cwd=REPO, env=cli_environment(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def run_eval_cli(out: Path, rollouts: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(eval_command(out, rollouts, *extra), cwd=REPO, env=cli_environment(),
                          capture_output=True, text=True, timeout=600)


def complete_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def wait_for_lines(path: Path, lines: int, process: subprocess.Popen, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while complete_lines(path) < lines:
        if process.poll() is not None:
            pytest.fail(f"the eval ended (exit {process.returncode}) before writing {lines} lines: {process.stderr.read()}")
        if time.monotonic() > deadline:
            pytest.fail(f"the eval wrote no {lines} lines within {timeout_s} s")
        time.sleep(0.01)


def episode_keys(records: list[dict]) -> list[tuple[str, int]]:
    return [(r["scenario_id"], r["rollout"]) for r in records]


def test_a_second_eval_into_the_folder_of_a_running_one_is_refused_at_once_naming_its_pid(tmp_path):
    out = tmp_path / "run"
    first = start_eval(out, rollouts=1000)  # 50,000 episodes: still running when the others try
    try:
        wait_for_lines(out / "results.jsonl", 1, first)
        for extra in ((), ("--resume",)):  # a fresh run and a resume of the running one
            second = run_eval_cli(out, 1000, *extra)
            assert second.returncode == 1, second.stderr
            assert f"is being written by another process (pid {first.pid} " in second.stderr, second.stderr
        assert first.poll() is None, "the first run was still writing when the others were refused"
    finally:
        first.kill()
        first.wait()
    records, _ = read_results(out / "results.jsonl")
    assert len(set(episode_keys(records))) == len(records) > 0
    assert len(json.loads((out / "metadata.json").read_text())["sessions"]) == 1, "the refused runs wrote nothing"


def test_an_eval_killed_mid_run_and_resumed_has_every_planned_episode_exactly_once(tmp_path):
    out = tmp_path / "run"
    rollouts = 40
    first = start_eval(out, rollouts)
    wait_for_lines(out / "results.jsonl", 20, first)
    assert first.poll() is None
    first.send_signal(signal.SIGKILL)
    first.wait()
    kept, _ = read_results(out / "results.jsonl")

    resumed = run_eval_cli(out, rollouts, "--resume")  # the kernel released the killed run's lock
    assert resumed.returncode == 0, resumed.stderr
    records, bad = read_results(out / "results.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    planned = summary["planned_episodes"]
    assert 20 <= len(kept) < planned
    assert bad == 0 and len(records) == planned == summary["episodes"] and summary["status"] == "complete"
    assert len(set(episode_keys(records))) == planned, "no episode duplicated, so none lost"
    assert set(Counter(r["scenario_id"] for r in records).values()) == {rollouts}
    assert set(episode_keys(kept)) <= set(episode_keys(records))
    sessions = json.loads((out / "metadata.json").read_text())["sessions"]
    assert [s["resumed_records"] for s in sessions] == [0, len(kept)]
    assert not (out / ".lock").exists()
