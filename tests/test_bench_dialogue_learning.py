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


def test_the_dpo_round_count_with_the_best_validation_reward_is_chosen_and_a_tie_goes_to_fewer(bench):
    rewards = {0: (0.80, 0.82), 1: (0.86, 0.84), 2: (0.84, 0.86), 3: (0.70, 0.75)}
    rows = [{**row(bench, "sft" if after == 0 else "sft+dpo", seed, reward, dpo_rounds=after), "split": "validation"}
            for after, pair in rewards.items() for seed, reward in enumerate(pair)]
    found = bench.validation_summary(rows, [])
    assert found["chosen_dpo_rounds"] == 1 and found["seeds"] == [0, 1]
    assert found["dpo_rounds"][3]["reward"]["mean"] == pytest.approx(0.725)
    assert "Chosen: 1 DPO round." in "\n".join(bench.validation_lines(found))


def test_no_round_count_is_chosen_until_every_count_has_the_same_seeds(bench):
    rows = [row(bench, "sft", seed, 0.8) for seed in (0, 1)] + [row(bench, "sft+dpo", 0, 0.9, dpo_rounds=1)]
    assert bench.validation_summary(rows, []) is None
    assert bench.validation_summary([row(bench, "sft+dpo", 0, 0.9, dpo_rounds=1)], []) is None


def test_the_round_adapters_are_the_sft_adapter_then_each_rounds_checkpoint(bench):
    assert bench.round_adapter(1, 90, 3, 0) == bench.WORK / "s1" / "sft-sft90" / "adapter"
    assert bench.round_adapter(1, 90, 3, 2) == bench.WORK / "s1" / "dpo-sft90-r3" / "rounds" / "1" / "adapter"


def test_a_run_of_fewer_rounds_is_a_finished_longer_runs_adapter_after_those_rounds(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "WORK", tmp_path)
    longer = tmp_path / "s1" / "dpo-sft90-r3"
    longer.mkdir(parents=True)
    (longer / "summary.json").write_text(json.dumps({"rounds": [{"pairs": 29}, {"pairs": 28}, {"pairs": 31}]}))
    (longer / "log_history.json").write_text(json.dumps([{"train_runtime": 900.0, "round": 0}, {"loss": 0.6, "round": 1},
                                                         {"train_runtime": 500.0, "round": 1},
                                                         {"train_runtime": 510.0, "round": 2}]))
    adapter, cost = bench.dpo_stage(1, 2, 12, tmp_path / "sft-adapter", 90)
    assert adapter == longer / "rounds" / "1" / "adapter"
    assert cost == {"steps": 24, "train_s": None, "pairs": [29, 28], "dpo_trainer_s": 1400.0}
    assert not (tmp_path / "s1" / "dpo-sft90-r2").exists()


def test_the_round_count_quoted_as_chosen_is_the_one_the_committed_validation_runs_choose(bench):
    summary = json.loads(bench.SUMMARY_FILE.read_text(encoding="utf-8"))
    assert summary["validation"]["chosen_dpo_rounds"] == bench.CHOSEN_DPO_ROUNDS
    assert json.loads(bench.CHOSEN_SUMMARY_FILE.read_text(encoding="utf-8"))["selection"] == bench.CHOSEN_SELECTION
