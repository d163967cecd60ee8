"""Training runs under attack: two trainers in one folder, resumed runs, torn files, bad options and adapters.

Each test is one reproduction of issue 43, run on the tiny models of :mod:`tiny_models` and
the toy envs the training tests use.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_models import tiny_causal_lm

from affectgym.eval.results import RunFolderLocked
from affectgym.train import commands

REPO = Path(__file__).resolve().parents[1]
DIALOGUE_ID = "affectgym/EmpatheticDialogue-v0"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("models"))


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="affectgym")
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["train", *argv])
    return args.func(args)


def sft_argv(model: Path, run: Path, *extra: str) -> list[str]:
    return [DIALOGUE_ID, "--algo", "sft", "--references", "--model", str(model), "--lora-r", "4", "--batch-size", "1",
            "--eval-episodes", "0", "--save-steps", "0", "--output-dir", str(run), *extra]


def wait_for_holder(lock: Path, process: subprocess.Popen, timeout_s: float = 300.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the first trainer ended (exit {process.returncode}): {process.stderr.read()}")
        try:
            return json.loads(lock.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            time.sleep(0.05)
    pytest.fail(f"the first trainer held no {lock} within {timeout_s} s")


def test_second_trainer_into_a_busy_output_dir_is_refused_naming_the_first_pid(tiny_model, tmp_path):
    run = tmp_path / "run"
    first = subprocess.Popen(
        [sys.executable, "-m", "affectgym.cli", "train", *sft_argv(tiny_model, run, "--max-steps", "100000", "--seed", "0")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert wait_for_holder(run / ".lock", first)["pid"] == first.pid
        with pytest.raises(RunFolderLocked, match=rf"being written by another process \(pid {first.pid} .*--output-dir"):
            run_cli(sft_argv(tiny_model, run, "--max-steps", "1", "--seed", "1"))
        assert first.poll() is None, "the first trainer was still training when the second was refused"
    finally:
        first.kill()
        first.wait()
    config = run / "config.yaml"
    assert not config.exists() or "seed: 1" not in config.read_text(), "the refused trainer wrote nothing"
