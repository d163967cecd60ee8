"""``affectgym validate``: an env's reward, determinism and leakage checks, after OpenEnv's RFC 008.

OpenEnv 0.10's ``openenv validate`` grades a served package with named checks; the ones that
speak of an environment's task rather than its container are run here on an affectgym env,
under OpenEnv's names and meanings (check ids, the ``pass``/``fail``/``skip``/``error`` status
of a check, the ``pass``/``warn``/``fail`` verdict of severity policy v2, exit codes 0/1/2/3).

Each check is a :class:`Check` of a registry (:mod:`~affectgym.envs.validation.registry`): its id,
what it needs of the env, and its function, whose docstring says what it checks. The built-in
checks, in the order they are reported:

* :mod:`~affectgym.envs.validation.runtime_checks`: ``runtime.reward_well_formed`` (every
  reward observed is finite and inside ``reward_range``), ``runtime.seed_control`` (the same seed
  starts the same episode, ``scenario_id`` picks its scenario) and ``runtime.episode_determinism``
  (the same seed, scenario and messages give the same episode and reward);
* :mod:`~affectgym.envs.validation.reward_checks`: ``semantic.oracle_max`` (the env's oracle
  scores within ``oracle_tolerance`` of the best of its other replies), ``semantic.floor_gap``
  (doing nothing scores ``floor_margin`` below the oracle) and ``semantic.canary_floor`` (every
  shipped reward-hacking canary scores at most the floor or below the oracle);
* :mod:`~affectgym.envs.validation.redteam_checks`, affectgym's own: ``semantic.reward_pays_skill``
  (the oracle beats cheap and wrong replies by ``skill_margin``) and ``semantic.hack_surface`` (no
  family of the red team wins more than ``max_hack_share`` of the scenarios);
* :mod:`~affectgym.envs.validation.leakage_checks`: ``semantic.no_solution_leakage`` (nothing an
  agent sees tells the gold label) and ``semantic.verifier_determinism`` (the oracle's reply
  scored ``replays`` times gives one reward, within ``variance_tolerance`` with an LLM judge).

A package adds checks through the entry-point group ``affectgym.validation_checks``; they are
reported after the built-in ones (:func:`registered_checks`). :func:`validate` runs every check
but those in ``skip=``, or only those in ``checks=`` (``affectgym validate --skip NAME...`` and
``--check NAME``).

:func:`affectgym.check_env` runs the same check functions (:func:`run_checks`) after
Gymnasium's checker and its fuzz, under its own policy (:data:`CHECK_ENV_WARNINGS`).

A numeric env (actions are arrays, not text) takes part in the reward checks through policies:
its oracle is ``reference_policy(observation) -> action``, doing nothing is
``idle_policy(observation)``, and ``canary_policies()`` names cheap policies that must earn less.
Each is scored by its mean step reward over :data:`POLICY_EPISODES` seeded episodes of each
scenario (``scenario_ids``); the red team and the leakage checks, which read text, are skipped.

The package, bottom up: :mod:`~affectgym.envs.validation.report` (statuses, exit codes, the
declaration, a check's result and the run's report), :mod:`~affectgym.envs.validation.subject`
(:class:`EnvUnderTest`, what the checks share), :mod:`~affectgym.envs.validation.episodes` (how
the checks play an env), the four modules of checks above, and
:mod:`~affectgym.envs.validation.registry`; :func:`validate` is here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import gymnasium as gym

from affectgym.envs.registration import affectgym_env_ids, make
from affectgym.envs.validation.episodes import agent_view, scripted_episode, tool_call_text
from affectgym.envs.validation.leakage_checks import (
    check_no_solution_leakage,
    check_verifier_determinism,
    fresh_judge,
    split_memoriser,
)
from affectgym.envs.validation.redteam_checks import check_hack_surface, check_reward_pays_skill
from affectgym.envs.validation.registry import (
    BUILTIN_CHECKS,
    CHECK_ENV_WARNINGS,
    CHECKS,
    ENTRY_POINT_GROUP,
    REDTEAM_CHECKS,
    Check,
    CheckPluginError,
    check_ids,
    registered_checks,
    run_checks,
)
from affectgym.envs.validation.report import (
    ERROR,
    EXIT_FAIL,
    EXIT_INTERNAL,
    EXIT_PASS,
    EXIT_UNSUPPORTED,
    FAIL,
    MAX_ORACLE_TOLERANCE,
    MAX_VARIANCE_TOLERANCE,
    MIN_FLOOR_MARGIN,
    PASS,
    POLICY_VERSION,
    REWARD_SLACK,
    SKIP,
    WARN,
    CheckResult,
    UnknownEnvError,
    ValidationDeclaration,
    ValidationReport,
)
from affectgym.envs.validation.reward_checks import (
    CANARY_SHARE_ALPHA,
    check_canary_floor,
    check_floor_gap,
    check_oracle_max,
)
from affectgym.envs.validation.runtime_checks import (
    check_episode_determinism,
    check_reward_well_formed,
    check_seed_control,
    reward_problem,
)
from affectgym.envs.validation.subject import POLICY_EPISODES, EnvUnderTest, PolicyScenario


def validate(
    env: str | gym.Env,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    declaration: ValidationDeclaration | None = None,
    max_scenarios: int = 20,
    seed: int = 0,
    replays: int = 20,
    skip: Collection[str] = (),
    checks: Collection[str] | None = None,
) -> ValidationReport:
    """Run OpenEnv RFC 008's reward, determinism and leakage checks on an env.

    Args:
        env: A registered env id (made with ``env_kwargs``) or an environment.
        env_kwargs: Arguments of the env made from an id.
        declaration: Tolerances and resources to validate against (default:
            :class:`ValidationDeclaration`'s).
        max_scenarios: Scenarios the per-scenario checks visit, spread over the split.
        seed: Seed of the episodes played.
        replays: Identical replays of ``verifier_determinism`` (OpenEnv: 20).
        skip: Checks not run, by name (``hack_surface``) or id (``semantic.hack_surface``);
            e.g. the red-team checks, when a test only needs the canaries.
            ``reward_well_formed`` runs all the same (it checks what the others scored).
        checks: The only checks run, by name or id, in the registry's order; ``None``: every
            registered check (a plug-in's included). Not with ``skip``.

    Returns:
        A :class:`ValidationReport`: ``report.verdict``, ``report.exit_code``,
        ``report.to_json()``, ``report.to_openenv_yaml()``.

    Raises:
        UnknownEnvError: ``env`` is an id no environment is registered under.
        ValueError: ``skip`` or ``checks`` names a check there is not, ``checks`` names none,
            or both are given.
        CheckPluginError: A plug-in's check could not be registered (see :func:`registered_checks`).

    >>> import affectgym
    >>> report = affectgym.validate("affectgym/Sarcasm-v0", max_scenarios=2, replays=2)
    >>> report.verdict, [r.name for r in report.results][:3]
    ('pass', ['reward_well_formed', 'seed_control', 'episode_determinism'])
    >>> [r.check_id for r in affectgym.validate("affectgym/Sarcasm-v0", replays=2, checks=["seed_control"]).results]
    ['runtime.seed_control']
    """
    if checks is not None and skip:
        raise ValueError("give checks= (the only checks run) or skip= (the checks left out), not both")
    skipped = check_ids(skip)
    chosen = None if checks is None else check_ids(checks)
    if chosen is not None and not chosen:
        raise ValueError("checks= names no check; give None to run every check")
    if isinstance(env, str):
        if env not in gym.registry:
            registered = ", ".join(affectgym_env_ids())
            raise UnknownEnvError(f"no environment is registered as {env!r}; affectgym's: {registered}")
        made = make(env, **dict(env_kwargs or {}))
    else:
        made = env
    subject = EnvUnderTest(made, declaration, max_scenarios=max_scenarios, seed=seed, replays=replays)
    try:
        results = run_checks(subject, skip=skipped, checks=chosen)
    finally:
        if isinstance(env, str):
            made.close()
    base = made.unwrapped
    return ValidationReport(
        target=made.spec.id if made.spec is not None else type(base).__name__,
        declaration=subject.declaration,
        reward_range=subject.reward_range,
        llm_judged=bool(subject.judged_criteria),
        judge=subject.judge_pin if subject.judged_criteria else None,
        tools=list(getattr(base, "tools", {}) or {}),
        task_count=_task_count(base),
        results=results,
    )


def _task_count(base: Any) -> dict[str, int]:
    ids = getattr(base, "scenario_ids", None)
    if not ids:
        return {}
    split = getattr(base, "split", "all")
    return {split if isinstance(split, str) else str(getattr(split, "name", "split")): len(ids)}


__all__ = [
    "BUILTIN_CHECKS",
    "CANARY_SHARE_ALPHA",
    "CHECKS",
    "CHECK_ENV_WARNINGS",
    "ENTRY_POINT_GROUP",
    "ERROR",
    "EXIT_FAIL",
    "EXIT_INTERNAL",
    "EXIT_PASS",
    "EXIT_UNSUPPORTED",
    "FAIL",
    "MAX_ORACLE_TOLERANCE",
    "MAX_VARIANCE_TOLERANCE",
    "MIN_FLOOR_MARGIN",
    "PASS",
    "POLICY_EPISODES",
    "POLICY_VERSION",
    "REDTEAM_CHECKS",
    "REWARD_SLACK",
    "SKIP",
    "WARN",
    "Check",
    "CheckPluginError",
    "CheckResult",
    "EnvUnderTest",
    "PolicyScenario",
    "UnknownEnvError",
    "ValidationDeclaration",
    "ValidationReport",
    "agent_view",
    "check_canary_floor",
    "check_episode_determinism",
    "check_floor_gap",
    "check_hack_surface",
    "check_ids",
    "check_no_solution_leakage",
    "check_oracle_max",
    "check_reward_pays_skill",
    "check_reward_well_formed",
    "check_seed_control",
    "check_verifier_determinism",
    "fresh_judge",
    "registered_checks",
    "reward_problem",
    "run_checks",
    "scripted_episode",
    "split_memoriser",
    "tool_call_text",
    "validate",
]
