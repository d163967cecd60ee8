"""Calibration is measured only on confidences an agent stated: a one-word answer states none."""

from __future__ import annotations

import io

from rich.console import Console

import affectgym
from affectgym.agents.base import FunctionAgent
from affectgym.eval.runner import EvalConfig, run_eval

SARCASM = "affectgym/Sarcasm-v0"


def test_a_yes_no_agents_outcomes_carry_no_confidence_and_its_table_says_calibration_is_not_applicable(tmp_path):
    console = Console(file=io.StringIO(), width=200)
    config = EvalConfig(env_id=SARCASM, agent="always-yes", out=tmp_path / "run", n=4, progress=False,
                        env_kwargs={"task_format": "yesno"}, command="test")
    result = run_eval(config, agent=FunctionAgent(lambda observation, info: "Yes", name="always-yes"), console=console)
    classification = result.summary["classification"]
    assert classification["n_with_confidence"] == 0 and classification["ece"] is None and classification["brier"] is None
    table = console.file.getvalue()
    assert "ece" in table and "n/a (no answer stated a confidence)" in table


def test_a_json_answers_stated_confidence_is_its_outcomes_confidence():
    env = affectgym.make(SARCASM, split="eval")
    env.reset(seed=0)
    *_, info = env.step('<final>{"label": "sincere", "confidence": 0.7}</final>')
    assert info["outcome"]["confidence"] == 0.7
