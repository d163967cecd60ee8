"""The experiment runner keeps the protocol: a recipe is chosen on validation by its declared rule and frozen,
eval is played only for a frozen recipe and once per seed, and every way of breaking that is refused."""

from __future__ import annotations

import dataclasses
import json

import pytest

from affectgym.agents.base import FunctionAgent
from affectgym.experiments import (
    Arm,
    Comparison,
    Experiment,
    ExperimentRunner,
    ProtocolError,
    ProtocolLedger,
    Sweep,
)
from affectgym.experiments.runner import DECLARED

ENV_ID = "affectgym/Sarcasm-v0"


def answering(label: str):
    """A policy builder whose agent always answers ``label`` (the recipe's, when it names one)."""
    def build(run):
        answer = run.recipe.get("answer", label)
        return FunctionAgent(lambda observation, info: f"<answer>{answer}</answer>", name=f"says-{answer}")
    return build


def highest_reward(means):
    return max(means, key=lambda name: means[name]["reward"])


def experiment(**changes) -> Experiment:
    arms = (
        Arm("says-no", answering("no")),
        Arm("tuned", answering("no"), recipe={"answer": "no"},
            sweep=Sweep({"yes": {"answer": "yes"}, "no": {"answer": "no"}}, rule="highest validation reward",
                        choose=highest_reward)),
    )
    fields = {"name": "toy", "env_id": ENV_ID, "arms": arms, "seeds": (0, 1), "episodes": 4,
              "comparisons": (Comparison("tuned", "says-no", "reward"),)}
    return Experiment(**{**fields, **changes})


@pytest.fixture
def runner(tmp_path):
    return ExperimentRunner(experiment(), tmp_path / "toy", progress=False)


def test_eval_is_refused_for_an_arm_whose_recipe_was_never_frozen(runner):
    with pytest.raises(ProtocolError, match="no frozen recipe"):
        runner.play()
    assert not (runner.results / "eval").exists()


def test_the_sweep_plays_validation_only_and_freezes_what_its_rule_chose(runner):
    freezes = runner.choose()
    assert not (runner.results / "eval").exists()
    assert sorted(p.name for p in (runner.results / "validation" / "tuned").iterdir()) == ["no", "yes"]
    tuned = freezes["tuned"]
    candidates = tuned.measured["candidates"]
    assert tuned.split == "validation" and tuned.rule == "highest validation reward"
    assert tuned.measured["chosen"] == highest_reward(candidates)
    assert tuned.recipe == {"answer": tuned.measured["chosen"]}
    assert freezes["says-no"].split == DECLARED


def test_eval_is_played_once_per_frozen_recipe_and_seed_and_a_replay_is_recorded(runner):
    runner.choose()
    summary = runner.play()
    assert [(p.arm, p.seed, p.replay) for p in runner.ledger.plays()] == [
        ("says-no", 0, False), ("says-no", 1, False), ("tuned", 0, False), ("tuned", 1, False)]
    runner.play()  # finished plays are not played again
    assert len(runner.ledger.plays()) == 4
    with pytest.raises(ProtocolError, match="already played on eval for seed 0"):
        runner.ledger.claim_eval("says-no", {}, seed=0)
    replayed = runner.play(replay=True)
    assert replayed["arms"]["says-no"]["replays"] == 2 and summary["arms"]["says-no"]["replays"] == 0
    assert (runner.results / "eval" / "says-no" / "s0-replay1" / "results.jsonl").is_file()


def test_a_stopped_play_resumes_without_a_second_claim_and_a_first_play_is_never_a_replay(runner):
    runner.choose()
    runner.ledger.claim_eval("says-no", {}, seed=0)  # claimed, then stopped before any episode was written
    runner.play(replay=True)
    plays = [(p.arm, p.seed, p.replay) for p in runner.ledger.plays()]
    assert plays.count(("says-no", 0, False)) == 1 and not any(replay for *_, replay in plays)
    assert (runner.results / "eval" / "says-no" / "s0" / "summary.json").is_file()
    assert not any(path.name.endswith("replay0") for path in (runner.results / "eval").rglob("*"))


def test_eval_is_refused_once_the_declared_recipe_differs_from_the_frozen_one(tmp_path):
    ExperimentRunner(experiment(), tmp_path, progress=False).choose()
    edited = experiment(arms=(Arm("says-no", answering("no"), recipe={"answer": "yes"}),), comparisons=())
    with pytest.raises(ProtocolError, match="is not the one frozen"):
        ExperimentRunner(edited, tmp_path, progress=False).play()


def test_a_choice_after_eval_was_played_is_refused(runner):
    runner.choose()
    runner.play()
    with pytest.raises(ProtocolError, match="after seeing eval"):
        runner.ledger.freeze("tuned", {"answer": "maybe"}, rule="highest eval reward", split="validation")


def test_a_recipe_is_never_chosen_on_eval_and_a_rule_must_be_said(tmp_path):
    ledger = ProtocolLedger(tmp_path / "protocol.jsonl")
    with pytest.raises(ProtocolError, match="may not be chosen on the eval split"):
        ledger.freeze("kl", {"beta": 0.1}, rule="highest accuracy", split="eval")
    with pytest.raises(ProtocolError, match="say which rule"):
        ledger.freeze("kl", {"beta": 0.1}, rule=" ", split="validation")
    with pytest.raises(ProtocolError, match="JSON values"):
        ledger.freeze("kl", {"beta": object()}, rule="highest accuracy", split="validation")
    assert not ledger.path.exists()


def test_the_ledger_records_which_rule_chose_what_on_which_split(runner):
    runner.choose()
    rows = [json.loads(line) for line in runner.ledger.path.read_text().splitlines()]
    tuned = next(r for r in rows if r["event"] == "freeze" and r["arm"] == "tuned")
    assert {"rule", "split", "recipe", "recipe_hash", "measured", "time"} <= set(tuned)
    assert set(tuned["measured"]["candidates"]) == {"yes", "no"}


def test_the_summary_pairs_arms_by_seed_and_scenario_and_reads_goals(runner):
    runner.choose()
    summary = runner.play()
    comparison = summary["comparisons"][0]
    assert comparison["goal"] is None and comparison["met"] is None
    assert summary["arms"]["tuned"]["reward"]["seeds"] == 2 and summary["arms"]["tuned"]["reward"]["items"] == 4
    assert json.loads((runner.results / "summary.json").read_text()) == json.loads(json.dumps(summary))


@pytest.mark.parametrize("change, message", [
    ({"arms": ()}, "distinct names"),
    ({"seeds": ()}, "seeds must be"),
    ({"env_kwargs": {"split": "eval"}}, "must not hold 'split'"),
    ({"comparisons": (Comparison("tuned", "nobody", "reward"),)}, "unknown arm"),
    ({"comparisons": (Comparison("tuned", "says-no", "accuracy"),)}, "unknown arm .* or metric"),
])
def test_a_declaration_with_a_mistake_is_refused_with_what_is_accepted(change, message):
    with pytest.raises(ValueError, match=message):
        experiment(**change)


def test_a_rule_choosing_outside_its_candidates_is_refused(tmp_path):
    arm = experiment().arms[1]
    bad = dataclasses.replace(arm, sweep=dataclasses.replace(arm.sweep, choose=lambda means: "maybe"))
    with pytest.raises(ProtocolError, match="not one of its candidates"):
        ExperimentRunner(experiment(arms=(bad,), comparisons=()), tmp_path, progress=False).choose()


DECLARATION = '''
from affectgym.agents.base import FunctionAgent
from affectgym.experiments import Arm, Experiment

def says_no(run):
    return FunctionAgent(lambda observation, info: "<answer>no</answer>", name="says-no")

EXPERIMENT = Experiment("cli", "affectgym/Sarcasm-v0", arms=(Arm("says-no", says_no),), seeds=(0,), episodes=2)
'''


def test_the_command_line_refuses_eval_before_choose_then_reports_what_was_played(tmp_path, capsys):
    from affectgym.experiments.__main__ import main

    declaration = tmp_path / "cli_bench.py"
    declaration.write_text(DECLARATION, encoding="utf-8")
    spec, results = f"{declaration}:EXPERIMENT", str(tmp_path / "results")
    assert main(["play", spec, results]) == 2
    assert "no frozen recipe" in capsys.readouterr().err
    assert main(["choose", spec, results]) == 0 and main(["play", spec, results]) == 0
    played = capsys.readouterr().out
    assert main(["report", spec, results]) == 0
    table = capsys.readouterr().out
    assert "| says-no |" in table and table in played
    assert main(["report", f"{declaration}:NOTHING", results]) == 2
    assert "must name an affectgym.experiments.Experiment" in capsys.readouterr().err
