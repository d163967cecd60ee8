"""The checks as a registry: each a :class:`Check`, the built-in ones in the order they are reported, then
the plug-ins' (entry-point group :data:`ENTRY_POINT_GROUP`); :func:`run_checks` runs them on an env.

A package adds a check through the entry-point group: the entry point names a :class:`Check`, or a
function of no arguments returning one, e.g. in the plug-in's ``setup.cfg``::

    [options.entry_points]
    affectgym.validation_checks =
        short-answers = mypkg.checks:SHORT_ANSWERS

Its id must be new and of the form ``<lane>.<name>``, and its name new too (``--check`` and
``--skip`` take names). The plug-ins' checks are reported after the built-in ones, in the order
of their entry points' names; a plug-in that fails to load, gives something else or takes an id
or a name already taken stops the run with a :class:`CheckPluginError` naming its entry point.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from importlib import metadata

from affectgym.envs.validation.leakage_checks import (
    check_no_solution_leakage,
    check_verifier_determinism,
)
from affectgym.envs.validation.redteam_checks import check_hack_surface, check_reward_pays_skill
from affectgym.envs.validation.report import ERROR, FAIL, PASS, SKIP, CheckResult
from affectgym.envs.validation.reward_checks import (
    check_canary_floor,
    check_floor_gap,
    check_oracle_max,
)
from affectgym.envs.validation.runtime_checks import (
    check_episode_determinism,
    check_reward_well_formed,
    check_seed_control,
)
from affectgym.envs.validation.subject import EnvUnderTest

#: The entry-point group through which a package adds checks.
ENTRY_POINT_GROUP = "affectgym.validation_checks"
#: The form of a check's id: ``<lane>.<name>``, lower case, e.g. ``semantic.oracle_max``.
CHECK_ID = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*")
#: The check that runs after all the others, whatever their order: it checks every reward they scored.
RUNS_LAST = "runtime.reward_well_formed"
#: What an entry point of :data:`ENTRY_POINT_GROUP` may name.
ACCEPTED_PLUGIN = (
    "an entry point of the group names a Check (affectgym.envs.validation.Check) or a function of no "
    "arguments returning one"
)


@dataclass(frozen=True)
class Check:
    """One check of ``affectgym validate``: its id, what it needs of the env, and its function.

    Attributes:
        check_id: ``<lane>.<name>``, e.g. ``runtime.seed_control`` (OpenEnv's ids are
            ``runtime.`` and ``semantic.``; a plug-in's lane may be its package's name).
        needs: One line: what the check needs of the env to run rather than be skipped
            (text replies, an oracle, canaries, a judge, policies...).
        run: ``run(subject) -> CheckResult``, the result's ``check_id`` being this one; a
            check that raises gives an ``error`` result.

    >>> BUILTIN_CHECKS[1].name, BUILTIN_CHECKS[1].run is check_seed_control
    ('seed_control', True)
    >>> Check("seed_control", "nothing", check_seed_control)
    Traceback (most recent call last):
    ...
    ValueError: a check's id is <lane>.<name> in lower case, e.g. 'semantic.oracle_max'; got 'seed_control'
    """

    check_id: str
    needs: str
    run: Callable[[EnvUnderTest], CheckResult]

    def __post_init__(self) -> None:
        if not isinstance(self.check_id, str) or not CHECK_ID.fullmatch(self.check_id):
            raise ValueError(
                f"a check's id is <lane>.<name> in lower case, e.g. 'semantic.oracle_max'; got {self.check_id!r}"
            )
        if not isinstance(self.needs, str) or not self.needs.strip() or "\n" in self.needs:
            raise ValueError(
                f"{self.check_id}: needs is one line saying what the check needs of the env; got {self.needs!r}"
            )
        if not callable(self.run):
            raise TypeError(
                f"{self.check_id}: run is a function (EnvUnderTest) -> CheckResult; got {type(self.run).__name__}"
            )

    @property
    def name(self) -> str:
        """The check's name without its lane, e.g. ``oracle_max``."""
        return self.check_id.split(".", 1)[1]


#: The built-in checks, in the order they are reported.
BUILTIN_CHECKS: tuple[Check, ...] = (
    Check(
        "runtime.reward_well_formed",
        "step rewards and score() totals, and reward_range (OpenEnv's (0, 1) when the env declares none)",
        check_reward_well_formed,
    ),
    Check(
        "runtime.seed_control",
        "reset(seed=...) and reset(options={'scenario_id': ...}) over scenario_ids",
        check_seed_control,
    ),
    Check(
        "runtime.episode_determinism",
        "an episode to replay: the oracle's turns, else fuzz_actions() (a numeric env: its action space)",
        check_episode_determinism,
    ),
    Check(
        "semantic.oracle_max",
        "an oracle: reference_answer(scenario), or a numeric env's reference_policy(observation)",
        check_oracle_max,
    ),
    Check(
        "semantic.floor_gap",
        "an oracle, and what doing nothing scores (a numeric env: its idle_policy(observation))",
        check_floor_gap,
    ),
    Check(
        "semantic.canary_floor",
        "canaries(scenario), or a numeric env's canary_policies(), and an oracle to score them below",
        check_canary_floor,
    ),
    Check(
        "semantic.reward_pays_skill",
        "an oracle on two scenarios or more; other_target(scenario), bare_answer(scenario); text for the red team",
        check_reward_pays_skill,
    ),
    Check(
        "semantic.hack_surface",
        "text replies and an oracle: the red team edits the reference, the bare answer and the canaries",
        check_hack_surface,
    ),
    Check(
        "semantic.no_solution_leakage",
        "an AffectEnv: flip_label(scenario), label_set; scenario_text(scenario) and gym.make for the memoriser",
        check_no_solution_leakage,
    ),
    Check(
        "semantic.verifier_determinism",
        "an oracle to replay; the env's judge attribute when a criterion has scorer='judge'",
        check_verifier_determinism,
    ),
)
#: The built-in checks' functions by id, in the order they are reported.
CHECKS: dict[str, Callable[[EnvUnderTest], CheckResult]] = {check.check_id: check.run for check in BUILTIN_CHECKS}
#: Checks whose failure ``check_env`` reports as a warning: they calibrate the reward scale
#: rather than break the env contract (``affectgym validate`` fails them, as OpenEnv's policy does).
CHECK_ENV_WARNINGS = frozenset({"semantic.oracle_max", "semantic.floor_gap"})
#: The checks that run the red team: ``validate`` runs them, ``check_env`` (a quick contract check) does not.
REDTEAM_CHECKS = frozenset({"semantic.reward_pays_skill", "semantic.hack_surface"})


class CheckPluginError(RuntimeError):
    """An entry point of :data:`ENTRY_POINT_GROUP` failed to load, gave no :class:`Check`, or one whose id or name is taken."""


def registered_checks() -> tuple[Check, ...]:
    """The built-in checks, then each installed plug-in's, in the order of their entry points' names.

    Raises:
        CheckPluginError: An entry point failed to load or gave no :class:`Check`, or its check's
            id or name is another check's.
    """
    found = list(BUILTIN_CHECKS)
    for entry_point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda entry: entry.name):
        check = _plugin_check(entry_point)
        taken = next((other for other in found if other.name == check.name), None)
        if taken is not None:
            what = "id" if taken.check_id == check.check_id else f"name {check.name!r}"
            raise CheckPluginError(
                f"{_plugin(entry_point)} gives the check {check.check_id!r}, whose {what} is taken by "
                f"{taken.check_id}; a plug-in's check has an id and a name (--check and --skip take names) of its own"
            )
        found.append(check)
    return tuple(found)


def _plugin(entry_point: metadata.EntryPoint) -> str:
    return f"validation check plug-in {entry_point.name!r} ({entry_point.value}, entry-point group {ENTRY_POINT_GROUP})"


def _plugin_check(entry_point: metadata.EntryPoint) -> Check:
    """The :class:`Check` an entry point names, or the one the function it names returns."""
    try:
        loaded = entry_point.load()
    except Exception as exc:  # the plug-in's own error, named with its entry point
        raise CheckPluginError(f"{_plugin(entry_point)} failed to load: {type(exc).__name__}: {exc}") from exc
    if not isinstance(loaded, Check) and callable(loaded):
        try:
            loaded = loaded()
        except Exception as exc:
            raise CheckPluginError(
                f"{_plugin(entry_point)}: calling {loaded!r} raised {type(exc).__name__}: {exc}; {ACCEPTED_PLUGIN}"
            ) from exc
    if not isinstance(loaded, Check):
        raise CheckPluginError(f"{_plugin(entry_point)} gave {type(loaded).__name__} {loaded!r:.80}; {ACCEPTED_PLUGIN}")
    return loaded


def check_ids(names: Collection[str]) -> frozenset[str]:
    """The ids of registered checks given by name (``hack_surface``) or id (``semantic.hack_surface``).

    Raises:
        ValueError: A name no check has; the message lists the names there are.
        CheckPluginError: A plug-in's check could not be registered (see :func:`registered_checks`).
    """
    by_name = {check.name: check.check_id for check in registered_checks()}
    ids = set(by_name.values())
    unknown = [name for name in names if name not in by_name and name not in ids]
    if unknown:
        raise ValueError(f"no check is named {', '.join(map(repr, unknown))}; the checks: {', '.join(by_name)}")
    return frozenset(by_name.get(name, name) for name in names)


def run_checks(
    subject: EnvUnderTest, skip: Collection[str] = (), *, checks: Collection[str] | None = None
) -> list[CheckResult]:
    """The registered checks (:func:`registered_checks`) on ``subject``, but those in ``skip``, or only those in
    ``checks``; a check that raises, or returns anything but a :class:`CheckResult` of its own id, gives an
    ``error`` result.

    ``reward_well_formed`` runs last so that it sees the totals every other check scored, and
    ``skip`` does not leave it out (``checks`` without it does); the results come back in the
    order of the registry.

    Args:
        subject: The env under test.
        skip: Ids of the checks not run.
        checks: Ids of the only checks run; ``None``: every registered check.

    Raises:
        CheckPluginError: A plug-in's check could not be registered (see :func:`registered_checks`).
    """
    chosen = [
        check for check in registered_checks()
        if (checks is None or check.check_id in checks) and (check.check_id == RUNS_LAST or check.check_id not in skip)
    ]
    by_id: dict[str, CheckResult] = {}
    for check in sorted(chosen, key=lambda check: check.check_id == RUNS_LAST):
        started = time.monotonic()
        try:
            result = check.run(subject)
            own = isinstance(result, CheckResult) and result.check_id == check.check_id
            if not own or result.status not in (PASS, FAIL, SKIP, ERROR):
                raise TypeError(f"{check.check_id} returned {result!r:.200}, not a CheckResult of {check.check_id!r} "
                                f"with a status of {PASS}, {FAIL}, {SKIP} or {ERROR}")
        except Exception as exc:  # a crashing check is a finding (OpenEnv: ERROR fails closed), not the end of the run
            result = CheckResult(check.check_id, ERROR, evidence=[f"{type(exc).__name__}: {exc}"[:2_000]])
        result.duration_s = time.monotonic() - started
        by_id[check.check_id] = result
    return [by_id[check.check_id] for check in chosen]
