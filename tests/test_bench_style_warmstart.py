"""The warm-start benchmark chooses its KL coefficient on the validation split and plays only that one on eval."""

from __future__ import annotations

import pytest
from test_docs import repo_module


@pytest.fixture(scope="module")
def bench():
    return repo_module("benchmarks", "bench_style_warmstart")


def sweep(accuracy: dict[str, float], hacked: dict[str, float]) -> dict[str, dict]:
    return {arm: {"target_accuracy": {"mean": accuracy.get(arm, 0.0)}, "hacked": {"mean": rate}}
            for arm, rate in hacked.items()}


def test_the_most_accurate_coefficient_within_the_hack_margin_of_the_warm_start_is_chosen(bench):
    arms = sweep({"sft-grpo-heap-rule": 0.40, "sft-grpo-kl0.02": 0.31, "sft-grpo-kl0.05": 0.30, "sft-grpo-kl": 0.28},
                 {"sft": 0.20, "sft-grpo-heap-rule": 0.50, "sft-grpo-kl0.02": 0.26, "sft-grpo-kl0.05": 0.24,
                  "sft-grpo-kl": 0.20, "sft-grpo-kl-2x": 0.40})
    assert bench.choose_on_validation(arms) == "sft-grpo-kl0.05"  # 0.02's 0.26 is past 0.20 + 0.05


def test_a_tie_goes_to_the_tighter_anchor_then_fewer_steps_and_none_within_the_margin_to_the_tightest(bench):
    level = {arm: 0.3 for arm in bench.ANCHOR_BETAS}
    assert bench.choose_on_validation(sweep(level, {"sft": 0.2, **dict.fromkeys(bench.ANCHOR_BETAS, 0.2)})) == "sft-grpo-kl"
    assert bench.choose_on_validation(sweep(level, {"sft": 0.0, **dict.fromkeys(bench.ANCHOR_BETAS, 0.3)})) == "sft-grpo-kl"


def reply(arm: str, index: int, *, top: str) -> dict:
    return {"arm": arm, "seed": 0, "scenario_id": f"es{index:03d}:joy", "target": "joy", "classifier_top": top,
            "reply": "We laughed all the way home.", "reward": 0.1, "reward_components": {"emotion_probability": 0.5}}


def test_nothing_is_chosen_until_the_warm_start_and_every_coefficient_were_played_on_validation(bench):
    played = ["sft", *bench.ANCHOR_BETAS]
    rows = [{"arm": arm, "seed": 0, "split": "validation", "beta": bench.ANCHOR_BETAS.get(arm),
             "grpo_steps": 0 if arm == "sft" else 48, "episodes": 2, "reward": 0.1} for arm in played]
    samples = [reply(arm, i, top="joy" if arm == "sft-grpo-kl0.02" else "sadness") for arm in played for i in (1, 2)]
    assert bench.validation_summary(rows[:-1], samples) is None
    found = bench.validation_summary(rows, samples)
    assert found["chosen"] == "sft-grpo-kl0.02" and found["episodes"] == 2
    assert found["arms"]["sft-grpo-kl0.02"]["beta"] == 0.02 and found["arms"]["sft"]["beta"] is None
    assert "validation split" in "\n".join(bench.validation_lines(found))


def test_a_coefficient_the_sweep_did_not_choose_is_not_played_on_eval(bench, tmp_path, capsys):
    assert bench.main(["--arms", "sft-grpo-kl0.02", "--seeds", "0", "--results", str(tmp_path),
                       "--work", str(tmp_path / "runs")]) == 0
    assert "not played on eval: sft-grpo-kl0.02 (the validation sweep has not run" in capsys.readouterr().out
    assert not (tmp_path / "runs").exists()
