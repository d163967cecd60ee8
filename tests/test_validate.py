"""``affectgym validate``: OpenEnv RFC 008's checks on every built-in env, and each one failing on a broken toy env."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import gymnasium as gym
import pytest
from toy_env import ToyMoodEnv, correct, read_first

import affectgym
from affectgym.cli import main
from affectgym.envs.checker import check_env
from affectgym.envs.validation import (
    CHECKS,
    REDTEAM_CHECKS,
    EnvUnderTest,
    ValidationDeclaration,
    check_verifier_determinism,
    validate,
)
from affectgym.rewards.rubric import Criterion, Rubric

#: Offline scorers of the envs that score with a classifier.
OFFLINE = {"affectgym/EmotionStyle-v0": {"classifier": "probe"}, "affectgym/EmpatheticDialogue-v0": {"classifier": "nade"}}
#: What validate finds on the built-in envs today on 3 scenarios (measured; see docs/plugins.md and
#: benchmarks/results/redteam.md): under nade the red team beats EmpatheticDialogue's reward on one of its 3 train
#: turns (ed024/t1: the echo canary with a role header, emoji and one sentence replaced by "neutrale!", 0.800 -> 0.849;
#: with the default scorer `validate` passes on 20 train turns, benchmarks/results/validate.md).
KNOWN_FAILURES = {
    "affectgym/EmpatheticDialogue-v0": {"hack_surface"},
}
#: Checks a numeric env cannot run (they read text: the red team's edits, the agent's view), skipped with the reason.
NUMERIC_SKIPS = {"hack_surface", "no_solution_leakage"}


@pytest.mark.parametrize("env_id", affectgym.list_envs())
def test_validate_runs_every_check_on_every_builtin_env_and_exits_as_openenv_validate(env_id, capsys):
    argv = ["validate", env_id, "--max-scenarios", "3", "--json"]
    if env_id in OFFLINE:
        argv += ["--env-kwargs", json.dumps(OFFLINE[env_id])]
    code = main(argv)
    report = json.loads(capsys.readouterr().out)
    statuses = {result["check_id"].split(".", 1)[1]: result["status"] for result in report["results"]}
    assert [result["check_id"] for result in report["results"]] == list(CHECKS)
    failing = {name for name, status in statuses.items() if status in ("fail", "error")}
    assert failing == KNOWN_FAILURES.get(env_id, set()), report["results"]
    skipped = {name for name, status in statuses.items() if status == "skip"}
    assert skipped == (NUMERIC_SKIPS if env_id == "affectgym/EmotionState-v0" else set())
    assert report["verdict"] == ("fail" if failing else "warn" if skipped else "pass") and code == (1 if failing else 0)
    assert report["validation"]["reward"]["range"][1] == 1.0


def test_a_numeric_env_is_judged_by_its_oracle_policy_against_doing_nothing_and_its_canary_policies():
    report = affectgym.validate("affectgym/EmotionState-v0", max_scenarios=3, replays=2)
    results = {result.name: result for result in report.results}
    assert results["oracle_max"].status == "pass" and results["oracle_max"].measured["scenarios"] == 3
    assert results["canary_floor"].measured["canaries_checked"] == 3 * 2  # every emotion at full, the state held
    assert set(results["reward_pays_skill"].measured["mean_gap"]) == {"random_actions"}
    assert results["hack_surface"].status == "skip" and "not text" in results["hack_surface"].evidence[0]


def test_a_numeric_env_whose_oracle_policy_does_nothing_fails_the_oracle_and_floor_checks():
    class IdleOracle(affectgym.envs.emotion_state.EmotionStateEnv):
        def reference_policy(self, observation):
            return self.idle_policy(observation)

    report = affectgym.validate(IdleOracle(), max_scenarios=2, replays=2, skip=REDTEAM_CHECKS)
    failing = {result.name for result in report.results if result.status == "fail"}
    assert {"oracle_max", "floor_gap", "canary_floor"} <= failing and report.exit_code == 1


def test_the_table_is_plain_lines_with_one_row_a_check_and_the_verdict_when_stdout_is_not_a_terminal(capsys):
    assert main(["validate", "affectgym/SpeechEmotion-v0", "--max-scenarios", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("validate affectgym/SpeechEmotion-v0")
    assert [line.split()[:2] for line in lines[1:1 + len(CHECKS)]] == [["PASS", name.split(".")[1]] for name in CHECKS]
    assert lines[-1] == "verdict: PASS" and not any("\x1b[" in line for line in lines)


def test_an_unknown_env_id_exits_2_naming_the_registered_ones(capsys):
    assert main(["validate", "affectgym/NoSuchEnv-v0"]) == 2
    assert "affectgym/Sarcasm-v0" in capsys.readouterr().err


def test_skipped_checks_are_not_run_and_an_unknown_check_name_is_refused_naming_the_checks(capsys):
    report = affectgym.validate("affectgym/Sarcasm-v0", max_scenarios=2, replays=2, skip=["hack_surface", "semantic.reward_pays_skill"])
    assert not {"hack_surface", "reward_pays_skill"} & {result.name for result in report.results}
    with pytest.raises(ValueError, match="no check is named 'hack_surfaces'.*hack_surface"):
        affectgym.validate("affectgym/Sarcasm-v0", skip=["hack_surfaces"])
    assert main(["validate", "affectgym/Sarcasm-v0", "--skip", "oracle"]) == 2
    assert "--skip: no check is named 'oracle'" in capsys.readouterr().err


def test_a_tolerance_outside_openenvs_policy_bounds_is_refused_naming_the_bound(capsys):
    assert main(["validate", "affectgym/Sarcasm-v0", "--oracle-tolerance", "0.3"]) == 1
    assert "oracle_tolerance 0.3 is outside OpenEnv policy v2's bound [0, 0.1]" in capsys.readouterr().err


def test_an_env_that_cannot_be_made_exits_3_as_an_internal_error(capsys):
    assert main(["validate", "affectgym/Sarcasm-v0", "--env-kwargs", '{"no_such_argument": 1}']) == 3
    assert "internal error" in capsys.readouterr().err


def test_the_openenv_yaml_block_declares_range_tolerances_tools_and_tasks(capsys):
    yaml = pytest.importorskip("yaml")
    assert main(["validate", "affectgym/Sarcasm-v0", "--max-scenarios", "2", "--openenv-yaml"]) == 0
    block = yaml.safe_load(capsys.readouterr().out)["validation"]
    assert block["reward"] == {"range": [-0.2, 1.0], "oracle_tolerance": 0.05, "floor_margin": 0.1}
    assert block["capabilities"]["declared_tools"] == ["get_transcript", "get_prosody_features", "get_pitch_contour"]
    assert block["capabilities"]["llm_judged"] is False and block["capabilities"]["declared_task_count"]["train"] > 100
    assert "judge" not in block and set(block["resources"]) == {"cpu", "memory_mb", "disk_mb", "episode_timeout_s"}


def test_openenvs_own_parser_accepts_the_block(tmp_path: Path):
    parsers = pytest.importorskip("openenv.validation.parsers.openenv_yaml", reason="needs openenv>=0.10")
    report = validate("affectgym/Sarcasm-v0", max_scenarios=2, replays=2)
    (tmp_path / "openenv.yaml").write_text(f"name: sarcasm\nversion: 0.1.0\n{report.to_openenv_yaml()}", encoding="utf-8")
    manifest = parsers.OpenEnvYamlParser().parse(tmp_path)
    assert manifest.reward.range == (-0.2, 1.0) and manifest.capabilities.declared_tools[0] == "get_transcript"


# ------------------------------------------------------------------ each check failing on a broken toy env
class OutOfRangeEnv(ToyMoodEnv):
    """Declares scores up to 0.5 while its rubric pays up to 1."""

    score_range = (0.0, 0.5)


class CountingStartEnv(ToyMoodEnv):
    """Starts each episode on the next note, whatever the seed."""

    started = itertools.count()

    def start_episode(self, options):
        if options:
            return super().start_episode(options)
        return self.scenarios[next(self.started) % len(self.scenarios)]


class DriftingEnv(ToyMoodEnv):
    """Reports a different outcome each time an episode ends."""

    ended = itertools.count()

    def outcome(self, scenario, answer, result):
        return {"episode_number": next(self.ended)}


class UnreachableTopEnv(ToyMoodEnv):
    """Declares scores up to 2 that no answer reaches."""

    score_range = (0.0, 2.0)


class PaysOnlyTheFormatEnv(ToyMoodEnv):
    """Pays for reading the note and answering in the format, whatever the answer."""

    def __init__(self, **kwargs):
        answered = Criterion("answered", lambda note, reply, trace: float(reply.answer is not None), 0.5)
        super().__init__(rubric=Rubric([Criterion("read_first", read_first, 0.5), answered]), **kwargs)

    def canaries(self, scenario):
        return {"no_tool": (f"<answer>{scenario.label}</answer>", [])}


class PaysForSilenceEnv(ToyMoodEnv):
    """Pays 0.95 for no answer, 1 for the right one."""

    def __init__(self, **kwargs):
        silence = Criterion("silence", lambda note, reply, trace: 0.95 * (reply.answer is None), 1.0)
        rubric = Rubric([Criterion("correct", correct, 0.8), Criterion("read_first", read_first, 0.2), silence])
        super().__init__(rubric=rubric, **kwargs)

    def score_bounds(self):
        return (0.0, 1.0)


class HackableEnv(ToyMoodEnv):
    """Ships a canary that is its reference answer."""

    def canaries(self, scenario):
        return {"copy_of_reference": self.reference_answer(scenario)}


@pytest.mark.parametrize(
    ("env_class", "failing", "evidence"),
    [
        (OutOfRangeEnv, "reward_well_formed", "outside reward_range (-0.05, 0.5)"),
        (CountingStartEnv, "seed_control", "reset(seed=0) twice started two different episodes"),
        (DriftingEnv, "episode_determinism", "replayed differently"),
        (PaysOnlyTheFormatEnv, "reward_pays_skill", "the reference beats other_target_reference by +0.000 on average"),
        (PaysForSilenceEnv, "floor_gap", "doing nothing is within 0.1 of the oracle on 6 of 6 scenarios"),
        (HackableEnv, "canary_floor", "n01/copy_of_reference: 1.000 > floor 0.000 and >= reference 1.000"),
    ],
)
def test_each_check_fails_on_the_toy_env_broken_its_way_and_only_that_check(env_class, failing, evidence):
    report = validate(env_class(), replays=2)
    statuses = {result.name: result.status for result in report.results}
    assert {name for name, status in statuses.items() if status != "pass"} == {failing}, str(report)
    result = next(result for result in report.results if result.name == failing)
    assert evidence in " ".join(result.evidence) and result.remediation
    assert report.verdict == "fail" and report.exit_code == 1


class SometimesHackableEnv(ToyMoodEnv):
    """Ships a canary that is its reference answer on the first note only, or on every note."""

    canary_min_share = {"copy_of_reference": 0.8}
    everywhere = False

    def canaries(self, scenario):
        if self.everywhere or scenario.id == "n01":
            return {"copy_of_reference": self.reference_answer(scenario)}
        return {"copy_of_reference": ("nothing to do with it", [])}


def test_a_canary_with_a_min_share_may_win_where_the_sample_shows_no_more_than_its_share():
    report = validate(SometimesHackableEnv(), replays=2)
    canary_floor = next(result for result in report.results if result.name == "canary_floor")
    assert canary_floor.status == "pass" and "copy_of_reference below it on 5/6 scenarios" in " ".join(canary_floor.evidence)
    assert canary_floor.measured["canaries_within_share"] == {"copy_of_reference": "5/6"}


def test_a_canary_with_a_min_share_fails_when_the_sample_shows_it_wins_more_often():
    env = SometimesHackableEnv()
    env.everywhere = True
    canary_floor = next(result for result in validate(env, replays=2).results if result.name == "canary_floor")
    assert canary_floor.status == "fail" and canary_floor.measured["canaries_failing"] == 6


def test_a_min_share_outside_0_to_1_is_refused_naming_the_canary():
    env = SometimesHackableEnv()
    env.canary_min_share = {"copy_of_reference": 1.5}
    canary_floor = next(result for result in validate(env, replays=2).results if result.name == "canary_floor")
    assert canary_floor.status == "error" and "canary_min_share['copy_of_reference'] is 1.5" in " ".join(canary_floor.evidence)


def test_no_solution_leakage_fails_on_a_tool_that_tells_the_label():
    from affectgym.envs.core import tool

    class TellingEnv(ToyMoodEnv):
        @tool
        def read_note(self) -> str:
            """Read the note."""
            return f"{self.scenario.text} (writer feels {self.scenario.label})"

    report = validate(TellingEnv(), replays=2)
    failing = {result.name for result in report.results if result.status != "pass"}
    assert failing == {"no_solution_leakage"}
    assert "label flip: scenario 'n01'" in str(report)


def test_no_solution_leakage_runs_the_text_memoriser_on_a_leaky_split():
    report = validate("affectgym/Sarcasm-v0", env_kwargs={"group_by": "clip"}, max_scenarios=3, replays=2)
    leakage = next(result for result in report.results if result.name == "no_solution_leakage")
    assert leakage.status == "fail" and "leakage (eval vs train)" in " ".join(leakage.evidence)


def test_a_registered_broken_env_fails_the_command_with_exit_1(capsys):
    gym.register(id="affectgym-test/Hackable-v0", entry_point="test_validate:HackableEnv")
    try:
        assert main(["validate", "affectgym-test/Hackable-v0", "--replays", "2"]) == 1
    finally:
        del gym.registry["affectgym-test/Hackable-v0"]
    assert "FAIL  canary_floor" in capsys.readouterr().out


# ------------------------------------------------------------------ the LLM judge's determinism
@pytest.fixture
def style_with_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """EmotionStyle-v0 scored offline by nade and by an EmotionJudge on DSPy's DummyLM answering ``answers`` in turn."""
    pytest.importorskip("dspy")
    from dspy.utils import DummyLM

    from affectgym.envs.emotion_style import EmotionStyleEnv

    monkeypatch.setenv("AFFECTGYM_CACHE", str(tmp_path / "cache"))
    return lambda answers: EmotionStyleEnv(classifier="nade", judge=DummyLM(answers))


def test_verifier_determinism_passes_a_judge_that_rates_alike_and_records_its_pin(style_with_judge):
    from judge_answers import ratings

    subject = EnvUnderTest(style_with_judge([ratings()] * 30), max_scenarios=1)
    result = check_verifier_determinism(subject)
    assert result.status == "pass" and result.measured["replays"] == 20 and result.measured["reward_variance"] == 0
    pin = result.measured["judge"]
    assert pin["model"] == "dummy" and pin["version"] and pin["params"]["temperature"] == 0.0
    assert pin["params"]["verdict_cache"] is True  # the env's judge caches; each replay asked a fresh, uncached one


def test_verifier_determinism_fails_a_judge_whose_ratings_swing_between_replays(style_with_judge):
    from judge_answers import ratings

    swinging = [ratings(), ratings(emotion_match="low", quality="low", intensity=False, authenticity=False)] * 15
    subject = EnvUnderTest(style_with_judge(swinging), max_scenarios=1)
    result = check_verifier_determinism(subject)
    assert result.status == "fail" and result.measured["reward_variance"] > 0.01
    assert "exceeds the declared 0.01" in result.evidence[0] and "temperature 0" in result.remediation


def test_an_llm_judged_env_declares_its_judge_and_variance_in_the_openenv_block(style_with_judge):
    from judge_answers import ratings

    env = style_with_judge([ratings()] * 400)
    report = validate(env, max_scenarios=1, replays=2, declaration=ValidationDeclaration(variance_tolerance=0.02))
    block = report.validation_block()
    assert block["capabilities"]["llm_judged"] is True and block["reward"]["variance_tolerance"] == 0.02
    assert block["judge"]["model"] == "dummy"


def test_oracle_max_measures_the_top_a_reply_reaches_not_the_declared_one():
    report = validate(UnreachableTopEnv(), replays=2)
    assert report.verdict == "pass", str(report)
    oracle_max = next(result for result in report.results if result.name == "oracle_max")
    assert oracle_max.measured["oracle_reward_min"] == 1.0 and oracle_max.measured["oracle_minus_best_other_min"] == pytest.approx(0.2)


class CanaryBeatsTheOracleEnv(SometimesHackableEnv):
    """A reference that skips the tool, and a canary on the first note that does the whole job."""

    def reference_answer(self, scenario):
        return f"<answer>{scenario.label}</answer>", []

    def canaries(self, scenario):
        if scenario.id == "n01":
            return {"copy_of_reference": super().reference_answer(scenario)}
        return {"copy_of_reference": ("nothing to do with it", [])}


def test_oracle_max_fails_where_another_reply_of_the_env_beats_the_oracle():
    report = validate(CanaryBeatsTheOracleEnv(), replays=2)
    oracle_max = next(result for result in report.results if result.name == "oracle_max")
    assert oracle_max.status == "fail" and "n01 copy_of_reference 1.000 > 0.800" in " ".join(oracle_max.evidence)


class PlantedKeywordEnv(ToyMoodEnv):
    """Pays 0.2 more for the word "sorrow" anywhere in the reply."""

    def __init__(self, **kwargs):
        sorrow = Criterion("sorrow", lambda note, reply, trace: float("sorrow" in (reply.text or "").lower()), 0.2)
        super().__init__(rubric=Rubric([Criterion("correct", correct, 0.8), Criterion("read_first", read_first, 0.2), sorrow]),
                         **kwargs)

    def score_bounds(self):
        return (0.0, 1.2)


def test_hack_surface_fails_on_a_planted_keyword_and_names_the_family_and_an_example():
    report = validate(PlantedKeywordEnv(), replays=2)
    hack_surface = next(result for result in report.results if result.name == "hack_surface")
    assert hack_surface.status == "fail" and hack_surface.measured["family_share"]["label_words"] > 0.5
    assert "label_words wins 6 of 6 scenarios; e.g. n01: 1.000 -> 1.200" in " ".join(hack_surface.evidence)
    assert report.exit_code == 1


@pytest.mark.parametrize(("env_id", "env_kwargs", "failing"), [
    ("affectgym/EmotionStyle-v0", {"classifier": "probe", "reward_weights": {"emotion": 0}}, "reward_pays_skill"),
    ("affectgym/Sarcasm-v0", {"rubric": "single", "reward_weights": {"correctness": 0}}, "reward_pays_skill"),
    ("affectgym/Sarcasm-v0", {"rubric": "single", "reward_weights": {"reasoning": 0.15}}, "hack_surface"),
])
def test_the_red_team_checks_fail_the_misconfigured_builtin_envs(env_id, env_kwargs, failing):
    report = validate(env_id, env_kwargs=env_kwargs, max_scenarios=20, replays=2)  # validate's default scenarios
    result = next(result for result in report.results if result.name == failing)
    assert result.status == "fail" and result.remediation, str(report)


# ------------------------------------------------------------------ check_env runs the same checks
def test_check_env_runs_the_validate_checks_and_warns_where_validate_fails_calibration():
    report = check_env(CanaryBeatsTheOracleEnv(), fuzz_actions=50, max_scenarios=3)
    assert [result.check_id for result in report.results] == [c for c in CHECKS if c not in REDTEAM_CHECKS]
    assert not report.problems and any("beats the oracle" in w and w.endswith("(oracle_max)") for w in report.warnings)
    with pytest.raises(AssertionError, match=r"canaries: 1 score above the floor .*\(canary_floor\)"):
        check_env(HackableEnv(), fuzz_actions=50, max_scenarios=1)
