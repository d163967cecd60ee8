"""The dialogue learning benchmark keeps runs of other settings apart and pairs each arm with its own control."""

from __future__ import annotations

import json

import pytest
from test_docs import repo_module


@pytest.fixture(scope="module")
def bench():
    return repo_module("benchmarks", "bench_dialogue_learning")


def row(bench, arm, seed, reward, *, sft_steps=90, dpo_rounds=0):
    metrics = {name: 0.5 for name in bench.METRICS}
    return {"arm": arm, "seed": seed, "sft_steps": sft_steps, "dpo_rounds": dpo_rounds, "dpo_steps_per_round": 12,
            "turns": 54, "steps_per_min": 1.0, **metrics, "reward": reward}


def test_the_recipes_summary_is_the_named_file_and_other_settings_get_their_own(bench):
    assert bench.summary_file(bench.SFT_STEPS, bench.DPO_ROUNDS) == bench.SUMMARY_FILE
    assert bench.summary_file(30, 2).name == "dialogue_listening_sft30_r2.json"
    assert bench.summary_file(90, 4).name == "dialogue_listening_sft90_r4.json"


def test_run_folders_carry_a_suffix_except_at_the_first_settings(bench):
    assert bench.steps_suffix(30) == "" and bench.steps_suffix(30, 2) == ""
    assert bench.steps_suffix(90) == "-sft90" and bench.steps_suffix(90, 3) == "-sft90-r3"


def test_dpo_is_paired_by_seed_with_the_sft_arm(bench):
    rows = [row(bench, "sft", seed, reward) for seed, reward in ((0, 0.70), (1, 0.80), (2, 0.75))]
    rows += [row(bench, "sft+dpo", seed, reward, dpo_rounds=3) for seed, reward in ((0, 0.80), (1, 0.90), (2, 0.85))]
    summary = bench.summarise(rows)
    delta = summary["arms"]["sft+dpo"]["delta_vs_sft"]["reward"]
    assert delta["mean"] == pytest.approx(0.10) and delta["ci95_low"] == pytest.approx(0.10)
    assert summary["sft_steps"] == 90 and summary["dpo_rounds"] == 3


def test_a_copy_of_a_shorter_dpo_run_is_not_done_until_it_has_every_round(bench, tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"rounds": [{"round": 0}, {"round": 1}]}), encoding="utf-8")
    assert bench.dpo_done(tmp_path, 2) and not bench.dpo_done(tmp_path, 3)
    assert not bench.dpo_done(tmp_path / "missing", 2)


def test_each_arm_records_zero_for_the_stages_it_does_not_run(bench):
    assert bench.arm_settings("base", 90, 3) == {"sft_steps": 0, "dpo_rounds": 0}
    assert bench.arm_settings("sft", 90, 3) == {"sft_steps": 90, "dpo_rounds": 0}
    assert bench.arm_settings("sft+dpo", 90, 3) == {"sft_steps": 90, "dpo_rounds": 3}
