"""The demo's printout: the short run's multi-step result beside the committed long run, and one plain sentence."""

from __future__ import annotations

import json
from pathlib import Path

from affectgym.train.demo import LONG_RUN_RESULT, plain_verdict, result_table

ROOT = Path(__file__).resolve().parents[1]
SHORT_RUN = {"classification": {"accuracy": 0.55, "n": 20, "subsets": {"pivot": {"true": {"accuracy": 0.5}}}},
             "tool_use": {"answered_rate": 1.0, "tool_use_rate": 1.0, "mean_tool_calls": 2.0}}


def test_demo_table_prints_each_committed_long_run_arm_with_its_bootstrap_interval():
    long_run = json.loads((ROOT / LONG_RUN_RESULT).read_text(encoding="utf-8"))
    printed = result_table(SHORT_RUN, long_run, (20, 6))
    assert "trained here (20 SFT, 6 anchored GRPO steps)" in printed and "0.550 (0.34-0.74)" in printed
    assert long_run["intervals"] in printed
    for arm, entry in long_run["arms"].items():
        line = next(row for row in printed.splitlines() if row.strip().startswith(arm + " "))
        assert f"{entry['accuracy']['mean']:.3f} (" in line


def test_demo_verdict_says_chance_when_the_interval_reaches_it_and_a_gain_when_it_does_not():
    assert "not yet the answer (accuracy 0.55" in plain_verdict(SHORT_RUN)
    sure = {**SHORT_RUN, "classification": {"accuracy": 0.9, "n": 20}}
    assert "the answer beats chance (accuracy 0.90, 95% CI 0.70-0.97)" in plain_verdict(sure)
