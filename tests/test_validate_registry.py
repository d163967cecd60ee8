"""``affectgym validate``'s checks as a registry: the built-in ten in order, ``--check NAME``, and plug-in checks
added through the entry-point group ``affectgym.validation_checks`` of an installed distribution."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from affectgym.cli import main
from affectgym.envs import validation
from affectgym.envs.validation import (
    BUILTIN_CHECKS,
    CHECKS,
    ENTRY_POINT_GROUP,
    REDTEAM_CHECKS,
    Check,
    CheckPluginError,
    registered_checks,
    validate,
)

#: Today's checks, in the order they are reported.
TEN_CHECKS = [
    "runtime.reward_well_formed", "runtime.seed_control", "runtime.episode_determinism", "semantic.oracle_max",
    "semantic.floor_gap", "semantic.canary_floor", "semantic.reward_pays_skill", "semantic.hack_surface",
    "semantic.no_solution_leakage", "semantic.verifier_determinism",
]
#: A cheap run: two scenarios, two replays, no red team.
CHEAP = {"max_scenarios": 2, "replays": 2}
#: The module of the test plug-in, written in the test's folder.
PLUGIN_MODULE = "affectgym_test_checks"
#: The test plug-in's checks: one a Check, one a function returning one.
PLUGIN_SOURCE = '''
from affectgym.envs.validation import FAIL, PASS, Check, CheckResult


def check_two_scenarios(subject):
    """``plugin.two_scenarios``: the run visits at least two scenarios."""
    count = len(subject.scenarios)
    return CheckResult("plugin.two_scenarios", PASS if count >= 2 else FAIL, {"scenarios": count},
                       [f"{count} scenarios visited"])


TWO_SCENARIOS = Check("plugin.two_scenarios", "scenarios to visit", check_two_scenarios)


def make_tools_check():
    def check_has_tools(subject):
        tools = sorted(getattr(subject.base, "tools", {}) or {})
        return CheckResult("plugin.has_tools", PASS if tools else FAIL, {"tools": len(tools)}, [", ".join(tools)])

    return Check("plugin.has_tools", "tools the agent can call", check_has_tools)


def check_nan_reward(subject):
    subject.observed_rewards.append(float("nan"))
    return CheckResult("plugin.nan_reward", PASS, {}, ["scored a NaN"])


NAN_REWARD = Check("plugin.nan_reward", "nothing", check_nan_reward)
WRONG_ID = Check("plugin.wrong_id", "nothing", lambda subject: CheckResult("plugin.other_id", PASS))
SEED_CONTROL_AGAIN = Check("runtime.seed_control", "nothing", check_two_scenarios)
SEED_CONTROL_NAME = Check("mine.seed_control", "nothing", check_two_scenarios)
NOT_A_CHECK = "plugin.not_a_check"
'''


@pytest.fixture
def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``install(entry_points, source)``: a distribution installed in the test's folder (a ``*.dist-info`` with
    ``METADATA`` and ``entry_points.txt``, and the module :data:`PLUGIN_MODULE` holding ``source``), whose
    entry points of :data:`ENTRY_POINT_GROUP` are ``entry_points`` (name -> object of the module)."""

    def install(entry_points: dict[str, str], source: str = PLUGIN_SOURCE) -> None:
        (tmp_path / f"{PLUGIN_MODULE}.py").write_text(source, encoding="utf-8")
        info = tmp_path / "affectgym_test_checks-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: affectgym-test-checks\nVersion: 0.1\n", encoding="utf-8")
        lines = [f"{name} = {PLUGIN_MODULE}:{value}" for name, value in entry_points.items()]
        (info / "entry_points.txt").write_text("\n".join([f"[{ENTRY_POINT_GROUP}]", *lines, ""]), encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))  # also clears importlib's caches

    sys.modules.pop(PLUGIN_MODULE, None)
    yield install
    sys.modules.pop(PLUGIN_MODULE, None)


def ids_of(report) -> list[str]:
    return [result.check_id for result in report.results]


# ------------------------------------------------------------------------------- the built-in registry
def test_the_registry_lists_todays_ten_checks_in_todays_order_each_with_its_name_needs_and_function():
    assert [check.check_id for check in BUILTIN_CHECKS] == TEN_CHECKS == list(CHECKS)
    for check in BUILTIN_CHECKS:
        assert check.name == check.check_id.split(".", 1)[1]
        assert check.run is getattr(validation, f"check_{check.name}") is CHECKS[check.check_id]
        assert check.needs.strip() and "\n" not in check.needs
    assert registered_checks() == BUILTIN_CHECKS  # no plug-in installed here


@pytest.mark.parametrize(("fields", "message"), [
    (("oracle_max", "an oracle", print), "a check's id is <lane>.<name> in lower case"),
    (("semantic.Oracle-Max", "an oracle", print), "a check's id is <lane>.<name> in lower case"),
    (("mine.x", "", print), "needs is one line"),
    (("mine.x", "two\nlines", print), "needs is one line"),
])
def test_a_check_with_an_id_not_of_the_form_lane_dot_name_or_no_one_line_needs_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        Check(*fields)
    with pytest.raises(TypeError, match="run is a function"):
        Check("mine.x", "nothing", "not a function")


# ------------------------------------------------------------------------------------- --check NAME
def test_check_runs_only_the_named_checks_by_name_or_id_and_reports_them_as_a_whole_run_does(capsys):
    argv = ["validate", "affectgym/Sarcasm-v0", "--max-scenarios", "2", "--replays", "2", "--json"]
    assert main([*argv, "--check", "seed_control", "--check", "semantic.floor_gap"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [result["check_id"] for result in report["results"]] == ["runtime.seed_control", "semantic.floor_gap"]
    whole = validate("affectgym/Sarcasm-v0", **CHEAP, skip=REDTEAM_CHECKS)
    alone = validate("affectgym/Sarcasm-v0", **CHEAP, checks=["seed_control"])
    assert ids_of(alone) == ["runtime.seed_control"]
    assert alone.results[0].evidence == whole.results[1].evidence and alone.results[0].measured == whole.results[1].measured


def test_an_unknown_check_name_exits_2_naming_the_known_checks(capsys):
    assert main(["validate", "affectgym/Sarcasm-v0", "--check", "seed_control", "--check", "oracle"]) == 2
    err = capsys.readouterr().err
    assert "--check: no check is named 'oracle'; the checks: " + ", ".join(name.split(".")[1] for name in TEN_CHECKS) in err
    with pytest.raises(ValueError, match="no check is named 'oracle'"):
        validate("affectgym/Sarcasm-v0", checks=["oracle"])


def test_check_and_skip_together_are_refused_with_exit_2(capsys):
    assert main(["validate", "affectgym/Sarcasm-v0", "--check", "seed_control", "--skip", "hack_surface"]) == 2
    assert "give --check (the only checks run) or --skip (the checks left out), not both" in capsys.readouterr().err
    with pytest.raises(ValueError, match="not both"):
        validate("affectgym/Sarcasm-v0", checks=["seed_control"], skip=["hack_surface"])
    with pytest.raises(ValueError, match="names no check"):
        validate("affectgym/Sarcasm-v0", checks=[])


# ----------------------------------------------------------------------------- plug-ins' checks
def test_an_installed_plugins_checks_run_after_the_builtin_ones_and_report_their_results(install_plugin, capsys):
    install_plugin({"b-tools": "make_tools_check", "a-scenarios": "TWO_SCENARIOS"})  # reported by entry-point name
    assert [check.check_id for check in registered_checks()] == [*TEN_CHECKS, "plugin.two_scenarios", "plugin.has_tools"]
    report = validate("affectgym/Sarcasm-v0", **CHEAP, skip=REDTEAM_CHECKS)
    builtin = [check_id for check_id in TEN_CHECKS if check_id not in REDTEAM_CHECKS]
    assert ids_of(report) == [*builtin, "plugin.two_scenarios", "plugin.has_tools"]
    two, tools = report.results[-2:]
    assert (two.status, two.measured, two.evidence) == ("pass", {"scenarios": 2}, ["2 scenarios visited"])
    assert tools.status == "pass" and tools.evidence == ["get_pitch_contour, get_prosody_features, get_transcript"]
    assert report.verdict == "pass" and str(report).splitlines()[-3].split() == ["PASS", "two_scenarios", "2", "scenarios", "visited"]
    assert main(["validate", "affectgym/Sarcasm-v0", "--max-scenarios", "2", "--check", "has_tools", "--json"]) == 0
    assert [result["check_id"] for result in json.loads(capsys.readouterr().out)["results"]] == ["plugin.has_tools"]


def test_reward_well_formed_checks_the_rewards_a_plugin_check_scored(install_plugin):
    install_plugin({"nan": "NAN_REWARD"})
    report = validate("affectgym/Sarcasm-v0", **CHEAP, checks=["reward_well_formed", "nan_reward"])
    assert ids_of(report) == ["runtime.reward_well_formed", "plugin.nan_reward"]
    assert report.results[0].status == "fail" and "non-finite reward nan" in report.results[0].evidence[0]


def test_a_plugin_check_returning_another_checks_result_is_an_error_result(install_plugin):
    install_plugin({"wrong": "WRONG_ID"})
    (result,) = validate("affectgym/Sarcasm-v0", **CHEAP, checks=["wrong_id"]).results
    assert result.check_id == "plugin.wrong_id" and result.status == "error"
    assert "not a CheckResult of 'plugin.wrong_id'" in result.evidence[0]


@pytest.mark.parametrize(("value", "taken"), [
    ("SEED_CONTROL_AGAIN", "gives the check 'runtime.seed_control', whose id is taken by runtime.seed_control"),
    ("SEED_CONTROL_NAME", "gives the check 'mine.seed_control', whose name 'seed_control' is taken by runtime.seed_control"),
])
def test_a_plugin_check_reusing_a_builtin_id_or_name_is_refused_naming_the_entry_point(install_plugin, capsys, value, taken):
    install_plugin({"mine": value})
    named = f"validation check plug-in 'mine' ({PLUGIN_MODULE}:{value}, entry-point group affectgym.validation_checks) "
    with pytest.raises(CheckPluginError, match=f"^{re.escape(named + taken)}.* of its own$"):
        validate("affectgym/Sarcasm-v0", **CHEAP)
    assert main(["validate", "affectgym/Sarcasm-v0", "--check", "seed_control"]) == 3
    assert named + taken in capsys.readouterr().err


#: What an entry point of the group may name, as the refusals say.
ACCEPTED = "an entry point of the group names a Check (affectgym.envs.validation.Check) or a function of no arguments returning one"


@pytest.mark.parametrize(("value", "source", "problem"), [
    ("check_two_scenarios", PLUGIN_SOURCE,  # a check's function, not its Check
     "raised TypeError: check_two_scenarios() missing 1 required positional argument: 'subject'; " + ACCEPTED),
    ("NOT_A_CHECK", PLUGIN_SOURCE, "gave str 'plugin.not_a_check'; " + ACCEPTED),
    ("BROKEN", "from affectgym.envs.validation import Check\nBROKEN = Check('broken', 'x', print)\n",
     "failed to load: ValueError: a check's id is <lane>.<name> in lower case, e.g. 'semantic.oracle_max'; got 'broken'"),
])
def test_a_malformed_plugin_is_refused_naming_the_entry_point_and_what_is_accepted(install_plugin, value, source, problem):
    install_plugin({"mine": value}, source)
    with pytest.raises(CheckPluginError) as refused:
        registered_checks()
    message = str(refused.value)
    assert message.startswith(f"validation check plug-in 'mine' ({PLUGIN_MODULE}:{value}, entry-point group {ENTRY_POINT_GROUP})")
    assert message.endswith(problem)
