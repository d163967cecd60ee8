"""``affectgym validate``: an env's reward, determinism and leakage checks, after OpenEnv's RFC 008.

OpenEnv 0.10's ``openenv validate`` grades a served package with named checks; the ones that
speak of an environment's task rather than its container are run here on an affectgym env,
under OpenEnv's names and meanings (check ids, the ``pass``/``fail``/``skip``/``error`` status
of a check, the ``pass``/``warn``/``fail`` verdict of severity policy v2, exit codes 0/1/2/3):

* ``runtime.reward_well_formed``: every reward observed (step rewards of scripted episodes,
  one step after the end, and the totals the other checks score) is finite and inside
  ``reward_range`` (OpenEnv's default ``(0, 1)`` for an env that declares none);
* ``runtime.seed_control``: the same seed starts the same episode, ``scenario_id`` picks its
  scenario (a text env's whatever the seed), and seeds reach more than one scenario of a text
  split that has several;
* ``runtime.episode_determinism``: the same seed and scenario with the same messages give the
  same episode (observations, rewards, ends, ``info``) and the same reward;
* ``semantic.oracle_max``: the env's oracle, its ``reference_answer(scenario)``, scores within
  ``oracle_tolerance`` of the best of the env's other replies on every scenario checked (no
  oracle fails, as in OpenEnv; restated from OpenEnv's "top of ``reward_range``", see
  :func:`check_oracle_max`);
* ``semantic.floor_gap``: doing nothing (no answer, or an empty one) scores at least
  ``floor_margin`` below the oracle on every scenario;
* ``semantic.canary_floor``: every shipped reward-hacking canary (``canaries(scenario)``) scores
  at most the floor or below the oracle (none shipped: skipped);
* ``semantic.reward_pays_skill`` (affectgym's): the oracle beats cheap and wrong replies (another
  item's reference, the reference for another target, the bare answer, the red team's best from
  a cheap base) by ``skill_margin`` on average;
* ``semantic.hack_surface`` (affectgym's): no family of the red team (:mod:`affectgym.redteam`)
  wins more than ``max_hack_share`` of the scenarios under ``redteam_budget``;
* ``semantic.no_solution_leakage``: with only the gold label changed, everything an agent sees
  is identical (observations, tool outputs, messages, tool schemas, the flat prompt); no
  scenario id holds a label word; and a text-only memoriser of the train split stays at chance on eval and validation
  (:mod:`affectgym.envs.leakage`; for envs made by ``gym.make`` with ``scenario_text``);
* ``semantic.verifier_determinism``: the oracle's reply scored ``replays`` times (20) gives one
  reward; with an LLM judge (``llm_judged``: a criterion with ``scorer="judge"``) each replay
  asks a fresh, uncached judge of the same LM and the rewards' variance stays within
  ``variance_tolerance``; the judge's model, version and parameters are recorded.

:func:`affectgym.check_env` runs the same check functions (:func:`run_checks`) after
Gymnasium's checker and its fuzz, under its own policy (:data:`CHECK_ENV_WARNINGS`).

A numeric env (actions are arrays, not text) takes part in the reward checks through policies:
its oracle is ``reference_policy(observation) -> action``, doing nothing is
``idle_policy(observation)``, and ``canary_policies()`` names cheap policies that must earn less.
Each is scored by its mean step reward over :data:`POLICY_EPISODES` seeded episodes of each
scenario (``scenario_ids``); the red team and the leakage checks, which read text, are skipped.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import statistics
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from affectgym.data.splits import spread
from affectgym.envs.core import AffectEnv
from affectgym.envs.registration import affectgym_env_ids, make
from affectgym.redteam.report import DEFAULT_MAX_SHARE
from affectgym.redteam.search import DEFAULT_BUDGET, DEFAULT_MARGIN, ItemResult, search_scenario

#: The severity policy whose check ids and verdict rules are followed (OpenEnv 0.10, local lane).
POLICY_VERSION = "v2"
#: OpenEnv policy v2's bounds on what a declaration may declare.
MAX_ORACLE_TOLERANCE, MIN_FLOOR_MARGIN, MAX_VARIANCE_TOLERANCE = 0.1, 0.1, 0.2
#: ``openenv validate``'s exit codes: pass or warn, fail, unrecognised target, internal error.
EXIT_PASS, EXIT_FAIL, EXIT_UNSUPPORTED, EXIT_INTERNAL = 0, 1, 2, 3
#: Check statuses (a check's finding) and verdicts (the run's outcome), as OpenEnv names them.
PASS, FAIL, SKIP, ERROR, WARN = "pass", "fail", "skip", "error", "warn"
#: Checks whose failure ``check_env`` reports as a warning: they calibrate the reward scale
#: rather than break the env contract (``affectgym validate`` fails them, as OpenEnv's policy does).
CHECK_ENV_WARNINGS = frozenset({"semantic.oracle_max", "semantic.floor_gap"})
#: The checks that run the red team: ``validate`` runs them, ``check_env`` (a quick contract check) does not.
REDTEAM_CHECKS = frozenset({"semantic.reward_pays_skill", "semantic.hack_surface"})
#: A reward may pass its range by this much (float sums of components).
REWARD_SLACK = 1e-9
#: Seeded episodes of each scenario a numeric env's policy plays to be scored (its mean step reward).
POLICY_EPISODES = 3
#: Significance at which a canary with a ``canary_min_share`` is shown to win too often.
CANARY_SHARE_ALPHA = 0.05


@dataclass(frozen=True)
class ValidationDeclaration:
    """What an env declares to be validated against: the ``validation:`` block of an ``openenv.yaml``.

    Attributes:
        oracle_tolerance: ``oracle_max`` passes when no other reply of the env scores more than
            this above the oracle (OpenEnv's bound: at most 0.1).
        floor_margin: ``floor_gap`` passes when doing nothing scores at least this below the
            oracle (OpenEnv's bound: at least 0.1).
        variance_tolerance: Largest variance of an LLM-judged reward over identical replays
            (OpenEnv's bound: at most 0.2); declared only for an ``llm_judged`` env.
        skill_margin: ``reward_pays_skill`` passes when the reference beats each cheap or wrong
            reply by at least this on average (affectgym's own check, as the two below).
        hack_margin: How far a red-team reply must beat the reference to win a scenario.
        max_hack_share: ``hack_surface`` passes when no red-team family wins more than this
            share of the scenarios.
        redteam_budget: Score calls per family per scenario of the red team.
        cpu: Cores one served env needs (OpenEnv's ``resources``).
        memory_mb: Memory one served env needs.
        disk_mb: Disk one served env needs.
        episode_timeout_s: Longest an episode may take.

    >>> ValidationDeclaration(oracle_tolerance=0.3)
    Traceback (most recent call last):
    ...
    ValueError: oracle_tolerance 0.3 is outside OpenEnv policy v2's bound [0, 0.1]
    """

    oracle_tolerance: float = 0.05
    floor_margin: float = 0.1
    variance_tolerance: float = 0.01
    skill_margin: float = 0.05
    hack_margin: float = DEFAULT_MARGIN
    max_hack_share: float = DEFAULT_MAX_SHARE
    redteam_budget: int = DEFAULT_BUDGET
    cpu: float = 1.0
    memory_mb: int = 2048
    disk_mb: int = 1024
    episode_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        bounds = {
            "oracle_tolerance": (0.0, MAX_ORACLE_TOLERANCE),
            "floor_margin": (MIN_FLOOR_MARGIN, math.inf),
            "variance_tolerance": (0.0, MAX_VARIANCE_TOLERANCE),
            "cpu": (0.0, math.inf),
            "memory_mb": (1, math.inf),
            "disk_mb": (1, math.inf),
            "episode_timeout_s": (0.0, 3600.0),
            "skill_margin": (0.0, 1.0),
            "hack_margin": (0.0, 1.0),
            "max_hack_share": (0.0, 1.0),
            "redteam_budget": (2, 1_000),
        }
        for name, (low, high) in bounds.items():
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"{name} {value!r} is outside OpenEnv policy {POLICY_VERSION}'s bound [{low:g}, {high:g}]")


@dataclass
class CheckResult:
    """The outcome of one check, as OpenEnv's ``CheckResult``.

    Attributes:
        check_id: ``runtime.<name>`` or ``semantic.<name>``, as in OpenEnv's policy.
        status: ``pass``, ``fail``, ``skip`` (with the reason in ``evidence``) or ``error``
            (the check itself raised).
        measured: What the check measured, e.g. ``{"oracle_reward_min": 0.975}``.
        evidence: Readable lines: what passed, or each failure found.
        remediation: What the env's author changes to pass.
        duration_s: Time the check took.
    """

    check_id: str
    status: str
    measured: dict[str, Any] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    remediation: str | None = None
    duration_s: float = 0.0

    @property
    def name(self) -> str:
        """The check's name without its level, e.g. ``oracle_max``."""
        return self.check_id.split(".", 1)[1]


@dataclass
class ValidationReport:
    """What :func:`validate` ran and found.

    Attributes:
        target: The env's id (or class name when it was not made by id).
        declaration: The tolerances and resources the env was validated against.
        reward_range: The range rewards were checked against.
        llm_judged: Whether a criterion of the env's reward asks an LLM judge.
        judge: The judge's pin (``model``, ``version``, ``params``) when ``llm_judged``.
        tools: The env's tool names.
        task_count: Scenarios of the split validated, by split name.
        results: One :class:`CheckResult` per check.
    """

    target: str
    declaration: ValidationDeclaration
    reward_range: tuple[float, float]
    llm_judged: bool
    judge: dict[str, Any] | None
    tools: list[str]
    task_count: dict[str, int]
    results: list[CheckResult]

    @property
    def verdict(self) -> str:
        """``fail`` when a check failed or raised, else ``warn`` when one was skipped, else ``pass``
        (OpenEnv's policy v2: every check here has severity ``fail``)."""
        statuses = {result.status for result in self.results}
        if statuses & {FAIL, ERROR}:
            return FAIL
        return WARN if SKIP in statuses else PASS

    @property
    def exit_code(self) -> int:
        """``openenv validate``'s exit code of the verdict: 0 for pass or warn, 1 for fail."""
        return EXIT_FAIL if self.verdict == FAIL else EXIT_PASS

    def validation_block(self) -> dict[str, Any]:
        """The ``validation:`` block of an ``openenv.yaml`` for this env (OpenEnv's manifest schema 1)."""
        declared = self.declaration
        reward: dict[str, Any] = {
            "range": list(self.reward_range),
            "oracle_tolerance": declared.oracle_tolerance,
            "floor_margin": declared.floor_margin,
        }
        if self.llm_judged:
            reward["variance_tolerance"] = declared.variance_tolerance
        block: dict[str, Any] = {
            "reward": reward,
            "resources": {
                "cpu": declared.cpu,
                "memory_mb": declared.memory_mb,
                "disk_mb": declared.disk_mb,
                "episode_timeout_s": declared.episode_timeout_s,
            },
            "capabilities": {
                "verifier": {"kind": "reward_channel"},
                "llm_judged": self.llm_judged,
                "declared_tools": list(self.tools),
                "declared_task_count": dict(self.task_count),
            },
            "types": {"tags": ["affectgym"]},
        }
        if self.llm_judged and self.judge is not None:
            block["judge"] = dict(self.judge)
        return block

    def to_openenv_yaml(self) -> str:
        """``validation:`` and its block as YAML, to paste into an ``openenv.yaml``.

        Raises:
            ImportError: PyYAML is not installed.
        """
        try:
            import yaml
        except ImportError as exc:
            raise ImportError("writing the openenv.yaml block needs PyYAML: pip install pyyaml") from exc
        return yaml.safe_dump({"validation": self.validation_block()}, sort_keys=False)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data, in the shape of OpenEnv's ``ValidationReport``."""
        return {
            "report_schema_version": "1",
            "target": self.target,
            "policy_version": POLICY_VERSION,
            "lane": "local",
            "levels_run": [2, 3],
            "validation": self.validation_block(),
            "results": [dataclasses.asdict(result) for result in self.results],
            "verdict": self.verdict,
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON."""
        return json.dumps(self.to_dict(), indent=2, default=_jsonable)

    def rows(self) -> list[tuple[str, str, str]]:
        """``(check, status, evidence)`` per check: the table's rows."""
        return [(result.name, result.status, "; ".join(result.evidence)) for result in self.results]

    def __str__(self) -> str:
        width = max(len(result.name) for result in self.results)
        lines = [f"validate {self.target} (OpenEnv RFC 008 checks, policy {POLICY_VERSION})"]
        for name, status, evidence in self.rows():
            lines.append(f"  {status.upper():5} {name:<{width}}  {evidence}")
        for result in self.results:
            if result.remediation and result.status in (FAIL, ERROR, SKIP):
                lines.append(f"  {result.name}: {result.remediation}")
        lines.append(f"verdict: {self.verdict.upper()}")
        return "\n".join(lines)


class UnknownEnvError(KeyError):
    """:func:`validate` was given an id that names no registered environment (exit code 2)."""

    def __str__(self) -> str:
        return str(self.args[0])


class EnvUnderTest:
    """The env a run checks, and what several checks share (each computed once).

    Args:
        env: The environment (checks run on ``env.unwrapped``; ``env.spec`` remakes its splits).
        declaration: Tolerances the checks hold the env to.
        max_scenarios: Scenarios the per-scenario checks visit, spread over the split.
        seed: Seed of the episodes the checks play.
        replays: Replays of ``verifier_determinism``.
    """

    def __init__(
        self,
        env: gym.Env,
        declaration: ValidationDeclaration | None = None,
        *,
        max_scenarios: int = 20,
        seed: int = 0,
        replays: int = 20,
    ):
        if not isinstance(max_scenarios, int) or max_scenarios < 1:
            raise ValueError(f"max_scenarios must be a positive integer, got {max_scenarios!r}")
        if not isinstance(replays, int) or replays < 2:
            raise ValueError(f"replays must be an integer >= 2, got {replays!r}")
        self.env = env
        self.base = env.unwrapped
        self.declaration = declaration or ValidationDeclaration()
        self.seed = seed
        self.replays = replays
        self.text = isinstance(self.base, AffectEnv)
        self.policies = not self.text and callable(getattr(self.base, "reference_policy", None))
        if self.text:
            self.scenarios: list[Any] = spread(self.base.scenarios, max_scenarios)
        elif self.policies:
            self.scenarios = [PolicyScenario(i) for i in spread(list(getattr(self.base, "scenario_ids", None) or [None]), max_scenarios)]
        else:
            self.scenarios = []
        self.observed_rewards: list[float] = []  # every reward a check scored, for reward_well_formed

    @functools.cached_property
    def reward_range(self) -> tuple[float, float]:
        """The env's ``reward_range``, or OpenEnv's default ``(0, 1)`` when it declares none."""
        declared = getattr(self.base, "reward_range", None)
        return (float(declared[0]), float(declared[1])) if declared is not None else (0.0, 1.0)

    @functools.cached_property
    def references(self) -> list[tuple[Any, str | None, list[dict[str, Any]], float]] | None:
        """``(scenario, final text, trace, total)`` of the oracle on each scenario; ``None`` without one.

        A numeric env's oracle is its ``reference_policy`` (no text, no trace; its mean step reward)."""
        if self.policies:
            return [(s, None, [], self.policy_return(s, self.base.reference_policy)) for s in self.scenarios]
        if not self.text:
            return None
        rows = []
        for scenario in self.scenarios:
            try:
                text, trace = self.base.reference_answer(scenario)
            except NotImplementedError:
                return None
            rows.append((scenario, text, trace, self.total(scenario, text, trace)))
        return rows

    @functools.cached_property
    def floors(self) -> list[float]:
        """What doing nothing scores on each scenario: the better of no answer and an empty one
        (a numeric env's ``idle_policy``)."""
        if self.policies:
            return [self.policy_return(s, self.base.idle_policy) for s in self.scenarios]
        return [max(self.total(s, None, []), self.total(s, "", [])) for s in self.scenarios]

    @functools.cached_property
    def judged_criteria(self) -> list[str]:
        """The criteria of the env's reward that ask an LLM judge."""
        rubric = getattr(self.base, "rubric", None)
        return [c.name for c in getattr(rubric, "criteria", ()) if getattr(c, "scorer", None) == "judge"]

    @property
    def judge_pin(self) -> dict[str, Any] | None:
        """The judge's ``model``, ``version`` and ``params`` (its LM's settings); ``None`` without a judge."""
        judge = getattr(self.base, "judge", None)
        if judge is None or not hasattr(judge, "lm"):
            return None
        params = {k: v for k, v in dict(getattr(judge.lm, "kwargs", {}) or {}).items() if _is_plain(v)}
        params["lm_cache"] = bool(getattr(judge.lm, "cache", False))
        params["verdict_cache"] = bool(judge.config.cache)
        return {"model": judge.model_id, "version": str(judge.version), "params": params}

    @functools.cached_property
    def canary_scores(self) -> list[dict[str, float]]:
        """What each shipped canary scores on each scenario (name -> total; a numeric env's ``canary_policies``)."""
        if self.policies:
            return [{name: self.policy_return(s, policy) for name, policy in self.base.canary_policies().items()}
                    for s in self.scenarios]
        return [{name: self.total(scenario, text, trace) for name, (text, trace) in self.base.canaries(scenario).items()}
                for scenario in self.scenarios] if self.text else []

    @functools.cached_property
    def wrong_replies(self) -> list[dict[str, float]] | None:
        """What cheap and wrong replies score on each scenario, each with its own trace: the reference of
        the next scenario checked with another gold label, where scenarios have one
        (``other_item_reference``), the reference of the scenario asking for
        another answer (``other_target_reference``, :meth:`~affectgym.envs.core.AffectEnv.other_target`)
        and its bare answer (``bare_answer``, or the scenario's own where there is no other target).
        A numeric env's are uniformly random actions (``random_actions``), seeded per episode."""
        if self.policies:
            return [{"random_actions": self.policy_return(s, self._random_policy())} for s in self.scenarios]
        if self.references is None or len(self.scenarios) < 2:
            return None
        env, rows = self.base, self.references
        found = []
        for index, (scenario, _, _, _) in enumerate(rows):
            scores = {}
            other_item = _next_with_another_answer(rows, index)
            if other_item is not None:
                scores["other_item_reference"] = self.total(scenario, other_item[1], other_item[2])
            other = env.other_target(scenario)
            if other is not None:
                scores["other_target_reference"] = self.total(scenario, *env.reference_answer(other))
            bare = env.bare_answer(other if other is not None else scenario)
            if bare is not None:
                scores["bare_answer"] = self.total(scenario, *bare)
            found.append(scores)
        return found

    @functools.cached_property
    def redteam(self) -> list[ItemResult]:
        """The red team's search (:mod:`affectgym.redteam`) on each scenario, under the declared budget
        (none for a numeric env: the red team edits text)."""
        if not self.text:
            return []
        declared = self.declaration
        items = [search_scenario(self.base, scenario, budget=declared.redteam_budget, seed=self.seed,
                                 margin=declared.hack_margin) for scenario in self.scenarios]
        self.observed_rewards += [float(a["score"]) for item in items for a in item.best.values()]
        return items

    def total(self, scenario: Any, text: str | None, trace: Sequence[Mapping[str, Any]]) -> float:
        """``score(...).total``, remembered for ``reward_well_formed``."""
        value = float(self.base.score(scenario, text, trace).total)
        self.observed_rewards.append(value)
        return value

    def policy_return(self, scenario: PolicyScenario, policy: Callable[[Any], Any]) -> float:
        """A numeric env's ``policy`` (observation -> action) on ``scenario``: its mean step reward over
        :data:`POLICY_EPISODES` episodes seeded from :attr:`seed`; every step reward is remembered."""
        options = {"scenario_id": scenario.id} if scenario.id is not None else None
        means = []
        for episode in range(POLICY_EPISODES):
            observation, _ = self.base.reset(seed=self.seed + episode, options=options)
            rewards: list[float] = []
            for _ in range(100_000):
                observation, reward, terminated, truncated, _ = self.base.step(policy(observation))
                rewards.append(float(reward))
                if terminated or truncated:
                    break
            self.observed_rewards += rewards
            means.append(statistics.fmean(rewards))
        return statistics.fmean(means)

    def _random_policy(self) -> Callable[[Any], Any]:
        """Uniform actions of the action space, from a generator seeded with :attr:`seed`."""
        space = self.base.action_space
        space.seed(self.seed)
        return lambda observation: space.sample()


def validate(
    env: str | gym.Env,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    declaration: ValidationDeclaration | None = None,
    max_scenarios: int = 20,
    seed: int = 0,
    replays: int = 20,
    skip: Collection[str] = (),
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

    Returns:
        A :class:`ValidationReport`: ``report.verdict``, ``report.exit_code``,
        ``report.to_json()``, ``report.to_openenv_yaml()``.

    Raises:
        UnknownEnvError: ``env`` is an id no environment is registered under.
        ValueError: ``skip`` names a check there is not.

    >>> import affectgym
    >>> report = affectgym.validate("affectgym/Sarcasm-v0", max_scenarios=2, replays=2)
    >>> report.verdict, [r.name for r in report.results][:3]
    ('pass', ['reward_well_formed', 'seed_control', 'episode_determinism'])
    """
    skipped = check_ids(skip)
    if isinstance(env, str):
        if env not in gym.registry:
            registered = ", ".join(affectgym_env_ids())
            raise UnknownEnvError(f"no environment is registered as {env!r}; affectgym's: {registered}")
        made = make(env, **dict(env_kwargs or {}))
    else:
        made = env
    subject = EnvUnderTest(made, declaration, max_scenarios=max_scenarios, seed=seed, replays=replays)
    try:
        results = run_checks(subject, skip=skipped)
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


def check_ids(names: Collection[str]) -> frozenset[str]:
    """The ids of checks given by name (``hack_surface``) or id (``semantic.hack_surface``).

    Raises:
        ValueError: A name no check has; the message lists the names there are.
    """
    by_name = {check_id.split(".", 1)[1]: check_id for check_id in CHECKS}
    unknown = [name for name in names if name not in by_name and name not in CHECKS]
    if unknown:
        raise ValueError(f"no check is named {', '.join(map(repr, unknown))}; the checks: {', '.join(by_name)}")
    return frozenset(by_name.get(name, name) for name in names)


def run_checks(subject: EnvUnderTest, skip: Collection[str] = ()) -> list[CheckResult]:
    """Every check of :data:`CHECKS` but those in ``skip`` on ``subject``, in order; a check that raises
    gives an ``error`` result.

    ``reward_well_formed`` runs last so that it sees the totals every other check scored;
    the results come back in the order of :data:`CHECKS`.
    """
    by_id: dict[str, CheckResult] = {}
    for check_id in [*(c for c in CHECKS if c != "runtime.reward_well_formed" and c not in skip), "runtime.reward_well_formed"]:
        started = time.monotonic()
        try:
            result = CHECKS[check_id](subject)
        except Exception as exc:  # a crashing check is a finding (OpenEnv: ERROR fails closed), not the end of the run
            result = CheckResult(check_id, ERROR, evidence=[f"{type(exc).__name__}: {exc}"[:2_000]])
        result.duration_s = time.monotonic() - started
        by_id[check_id] = result
    return [by_id[check_id] for check_id in CHECKS if check_id in by_id]


@dataclass(frozen=True)
class PolicyScenario:
    """A numeric env's scenario as the checks name it: the ``scenario_id`` a reset is given (``None``: any)."""

    id: str | None


# ------------------------------------------------------------------------------- runtime checks
def check_reward_well_formed(subject: EnvUnderTest) -> CheckResult:
    """``runtime.reward_well_formed``: every reward observed is finite and inside ``reward_range``."""
    rewards = list(subject.observed_rewards)
    episodes = min(3, len(subject.scenarios)) if subject.text else 2
    for index in range(episodes):
        rewards += [step[1] for step in scripted_episode(subject, subject.seed + index, index)[1:]]
    if subject.text:
        rewards += [step[1] for step in _idle_episode(subject)[1:]]
    low, high = subject.reward_range
    problems = [problem for problem in map(functools.partial(reward_problem, reward_range=(low, high)), rewards) if problem]
    finite = [r for r in rewards if isinstance(r, (int, float)) and math.isfinite(r)]
    measured = {
        "rewards_checked": len(rewards),
        "reward_min": min(finite, default=None),
        "reward_max": max(finite, default=None),
        "reward_range": [low, high],
        "range_declared": getattr(subject.base, "reward_range", None) is not None,
    }
    if problems:
        return CheckResult(
            "runtime.reward_well_formed", FAIL, measured,
            [f"{len(problems)} of {len(rewards)} rewards ill-formed: " + "; ".join(sorted(set(problems))[:5])],
            "keep every step reward and score() total finite and inside reward_range (derived from score_bounds())",
        )
    return CheckResult(
        "runtime.reward_well_formed", PASS, measured,
        [f"{len(rewards)} rewards finite, in [{low:g}, {high:g}]"],
    )


def reward_problem(reward: Any, reward_range: tuple[float, float]) -> str | None:
    """What is wrong with one reward (not a real number, not finite, outside ``reward_range``), or ``None``.

    >>> reward_problem(0.5, (0.0, 1.0)) is None, reward_problem(float("nan"), (0.0, 1.0))
    (True, 'non-finite reward nan')
    >>> reward_problem(1.5, (0.0, 1.0))
    'reward 1.5 outside reward_range (0.0, 1.0)'
    """
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        return f"reward {reward!r} is not a number ({type(reward).__name__})"
    if not math.isfinite(reward):
        return f"non-finite reward {reward}"
    low, high = reward_range
    if not low - REWARD_SLACK <= reward <= high + REWARD_SLACK:
        return f"reward {reward:.6g} outside reward_range {tuple(reward_range)}"
    return None


def check_seed_control(subject: EnvUnderTest) -> CheckResult:
    """``runtime.seed_control``: the same seed starts the same episode; ``scenario_id`` picks its scenario
    (a text env's whatever the seed); and seeds reach more than one scenario of a text split that has several."""
    base, seed = subject.base, subject.seed
    problems = []
    for s in (seed, seed + 1, seed + 97):
        if _start(base, seed=s) != _start(base, seed=s):
            problems.append(f"reset(seed={s}) twice started two different episodes")
    ids = list(getattr(base, "scenario_ids", []) or [])
    for scenario_id in ids[:3]:
        # a text env's start is its scenario's; a numeric env may add seeded noise to it, so one seed twice
        first = _start(base, seed=None if subject.text else seed, options={"scenario_id": scenario_id})
        second = _start(base, seed=seed + 5 if subject.text else seed, options={"scenario_id": scenario_id})
        if first != second:
            seeds = "under two seeds" if subject.text else f"with seed {seed} twice"
            problems.append(f"reset(options={{'scenario_id': {scenario_id!r}}}) started different episodes {seeds}")
    starts = {_start(base, seed=s) for s in range(seed, seed + 20)}
    distinct = len({start[0] for start in starts}) if subject.text else len(starts)
    if subject.text and len(ids) > 1 and distinct < 2:
        problems.append(f"20 seeds all started the same scenario of {len(ids)}: reset ignores its seed")
    measured = {"seeds_checked": 23, "scenario_ids_checked": min(3, len(ids)), "distinct_starts_of_20_seeds": distinct}
    if problems:
        return CheckResult(
            "runtime.seed_control", FAIL, measured, problems,
            "draw the scenario and every random start with self.np_random after super().reset(seed=seed)",
        )
    return CheckResult(
        "runtime.seed_control", PASS, measured,
        [f"same seed, same start (23 resets); {distinct} distinct starts from 20 seeds"],
    )


def check_episode_determinism(subject: EnvUnderTest) -> CheckResult:
    """``runtime.episode_determinism``: the same seed, scenario and messages give the same episode and reward."""
    problems = []
    episodes = min(2, len(subject.scenarios)) if subject.text else 2
    for index in range(episodes):
        first = scripted_episode(subject, subject.seed + index, index)
        second = scripted_episode(subject, subject.seed + index, index)
        if first != second:
            turn = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b) if len(first) == len(second) else None
            where = f"first differs at step {turn}" if turn is not None else f"{len(first) - 1} and {len(second) - 1} steps"
            reward = (sum(step[1] for step in first[1:]), sum(step[1] for step in second[1:]))
            problems.append(f"episode {index} (seed {subject.seed + index}) replayed differently: {where}; rewards {reward[0]:.6g} and {reward[1]:.6g}")
    measured = {"episodes_replayed": episodes}
    if problems:
        return CheckResult(
            "runtime.episode_determinism", FAIL, measured, problems,
            "make step() a function of the episode so far: randomness only from self.np_random, no global state",
        )
    return CheckResult("runtime.episode_determinism", PASS, measured, [f"{episodes} episodes replayed identically"])


# ------------------------------------------------------------------------------ semantic checks
def check_oracle_max(subject: EnvUnderTest) -> CheckResult:
    """``semantic.oracle_max``: on every scenario the oracle is the best of the env's own replies, within ``oracle_tolerance``.

    OpenEnv asks the oracle to reach the top of ``reward_range``; that top is what the reward's
    formula could pay, not what any reply reaches (a scorer with a model in it never pays 1, and an
    arc of targets costs smoothness at every change), so it failed envs whose reward works. The
    top is measured instead: the best score of every reply the checks have of the env (doing
    nothing, the canaries, another item's reference, the reference for another target, the bare
    answer). The red team's replies are judged by ``hack_surface``.
    """
    tolerance = subject.declaration.oracle_tolerance
    if subject.references is None:
        return CheckResult(
            "semantic.oracle_max", FAIL, {"declared_tolerance": tolerance},
            [f"no oracle: {type(subject.base).__name__} has no reference_answer(scenario)"
             + ("" if subject.text else " and no reference_policy(observation)")],
            "implement reference_answer(scenario) -> (final_text, trace) on an AffectEnv (docs/plugins.md), or "
            "reference_policy(observation) -> action, idle_policy and canary_policies on a numeric env",
        )
    wrong = subject.wrong_replies or [{} for _ in subject.scenarios]
    beaten = []
    margins = []
    for (scenario, _, _, total), floor, canaries, others in zip(subject.references, subject.floors, subject.canary_scores, wrong, strict=True):
        name, best = max({"doing nothing": floor, **canaries, **others}.items(), key=lambda item: item[1])
        margins.append(total - best)
        if best > total + tolerance + REWARD_SLACK:
            beaten.append((scenario.id, name, best, total))
    totals = [row[3] for row in subject.references]
    measured = {
        "oracle_reward_min": min(totals),
        "oracle_reward_mean": statistics.fmean(totals),
        "oracle_minus_best_other_min": min(margins),
        "declared_tolerance": tolerance,
        "scenarios": len(totals),
    }
    if beaten:
        worst = ", ".join(f"{sid} {name} {best:.3f} > {total:.3f}" for sid, name, best, total in beaten[:5])
        return CheckResult(
            "semantic.oracle_max", FAIL, measured,
            [f"another reply beats the oracle by more than {tolerance:g} on {len(beaten)} of {len(totals)} scenarios ({worst})"],
            "make reference_answer the best reply the env knows, or the reward pay it most",
        )
    return CheckResult(
        "semantic.oracle_max", PASS, measured,
        [f"oracle >= every other reply - {tolerance:g} on {len(totals)} scenarios (min margin {min(margins):+.3f}; "
         f"oracle {min(totals):.3f} to {max(totals):.3f})"],
    )


def check_floor_gap(subject: EnvUnderTest) -> CheckResult:
    """``semantic.floor_gap``: doing nothing scores at least ``floor_margin`` below the oracle on every scenario."""
    margin = subject.declaration.floor_margin
    if subject.references is None:
        return CheckResult(
            "semantic.floor_gap", SKIP, {"declared_margin": margin},
            ["unmet dependency: semantic.oracle_max (no oracle to measure the gap from)"],
        )
    gaps = [(row[0].id, row[3] - floor, floor) for row, floor in zip(subject.references, subject.floors, strict=True)]
    narrow = [gap for gap in gaps if gap[1] < margin - REWARD_SLACK]
    measured = {
        "floor_reward_max": max(gap[2] for gap in gaps),
        "gap_min": min(gap[1] for gap in gaps),
        "declared_margin": margin,
        "scenarios": len(gaps),
    }
    if narrow:
        worst = ", ".join(f"{sid} gap {gap:.3f}" for sid, gap, _ in sorted(narrow, key=lambda g: g[1])[:5])
        return CheckResult(
            "semantic.floor_gap", FAIL, measured,
            [f"doing nothing is within {margin:g} of the oracle on {len(narrow)} of {len(gaps)} scenarios ({worst})"],
            "pay nothing (or less) for an unanswered or empty reply",
        )
    return CheckResult(
        "semantic.floor_gap", PASS, measured,
        [f"doing nothing scores <= {measured['floor_reward_max']:.3f}, >= {margin:g} below the oracle (min gap {measured['gap_min']:.3f})"],
    )


def check_reward_pays_skill(subject: EnvUnderTest) -> CheckResult:
    """``semantic.reward_pays_skill``: the reference beats cheap and wrong replies by ``skill_margin`` on average.

    The controls, scored on the true scenario: :attr:`EnvUnderTest.wrong_replies` (another item's
    reference, the reference for another target, the bare answer), and the red team's best reply
    made from a cheap base the reward already ranks ``skill_margin`` below the reference (a canary
    that does not hold the whole reference, or the bare answer where reasoning is paid). A reward that pays no skill pays these as much as
    the reference.
    """
    margin = subject.declaration.skill_margin
    if subject.wrong_replies is None:
        return CheckResult(
            "semantic.reward_pays_skill", SKIP, {"declared_margin": margin},
            ["unmet dependency: an oracle (reference_answer) on at least two scenarios"],
        )
    gaps: dict[str, list[float]] = {}
    searched = subject.redteam if subject.text else [None] * len(subject.scenarios)
    for (_, _, _, reference), wrong, item in zip(subject.references, subject.wrong_replies, searched, strict=True):
        cheap = [a["score"] for name, a in item.best_by_base.items()
                 if name != "reference" and a.get("cheap_base", True) and a["base_score"] < reference - margin] if item else []
        for name, score in {**wrong, **({"redteam_from_cheap_bases": max(cheap)} if cheap else {})}.items():
            gaps.setdefault(name, []).append(reference - score)
    mean_gaps = {name: statistics.fmean(values) for name, values in gaps.items()}
    measured = {"mean_gap": mean_gaps, "declared_margin": margin, "scenarios": len(subject.scenarios)}
    narrow = {name: gap for name, gap in mean_gaps.items() if gap < margin - REWARD_SLACK}
    if narrow:
        return CheckResult(
            "semantic.reward_pays_skill", FAIL, measured,
            [f"the reference beats {name} by {gap:+.3f} on average (< {margin:g}), on {len(gaps[name])} scenarios"
             for name, gap in sorted(narrow.items(), key=lambda item: item[1])],
            "pay for the skill itself: a reply for another target, another item's reply or a bare answer must "
            "score less; `affectgym redteam ENV` shows which edits the reward pays",
        )
    return CheckResult(
        "semantic.reward_pays_skill", PASS, measured,
        [f"the reference beats {', '.join(sorted(mean_gaps))} by >= {min(mean_gaps.values()):.3f} on average"],
    )


def _next_with_another_answer(rows: Sequence[tuple[Any, ...]], index: int) -> tuple[Any, ...] | None:
    """The first row after ``index`` (cyclically) whose scenario has another ``label``; any next row where there are no labels."""
    label = getattr(rows[index][0], "label", None)
    for step in range(1, len(rows)):
        row = rows[(index + step) % len(rows)]
        if label is None or getattr(row[0], "label", None) != label:
            return row
    return None


def check_hack_surface(subject: EnvUnderTest) -> CheckResult:
    """``semantic.hack_surface``: no family of the red team wins more than ``max_hack_share`` of the scenarios.

    The red team (:mod:`affectgym.redteam`) searches cheap edits of the reference, the bare answer
    and the canaries under ``redteam_budget`` score calls per family per scenario; a family wins a
    scenario when its best reply beats the reference by ``hack_margin``, or lifts a cheaper base
    to the reference's score.
    """
    from affectgym.redteam.report import summarise

    declared = subject.declaration
    if not subject.text:
        return CheckResult(
            "semantic.hack_surface", SKIP, {"declared_share": declared.max_hack_share},
            [f"{type(subject.base).__name__}'s actions are not text: the red team edits replies"],
        )
    if subject.references is None:
        return CheckResult(
            "semantic.hack_surface", SKIP, {"declared_share": declared.max_hack_share},
            ["unmet dependency: an oracle (reference_answer) for the red team to beat"],
        )
    report = summarise(subject.redteam, env_id=str(subject.env.spec.id if subject.env.spec else ""), split=str(subject.base.split),
                       budget=declared.redteam_budget, seed=subject.seed, margin=declared.hack_margin,
                       max_share=declared.max_hack_share)
    shares = {family.family: family.share for family in report.families}
    measured = {"family_share": shares, "score_calls": report.score_calls, "declared_share": declared.max_hack_share,
                "budget": declared.redteam_budget, "scenarios": report.scenarios}
    beaten = [family for family in report.families if family.share > declared.max_hack_share]
    if beaten:
        return CheckResult(
            "semantic.hack_surface", FAIL, measured,
            [f"{family.family} wins {family.won} of {family.scenarios} scenarios; e.g. {family.example['scenario_id']}: "
             f"{family.example['reference']:.3f} -> {family.example['score']:.3f} with {family.example['edits']}"
             for family in beaten[:5]],
            "defend the reward against these families (`affectgym redteam ENV --out DIR` lists the replies)",
        )
    worst = report.worst
    return CheckResult(
        "semantic.hack_surface", PASS, measured,
        [f"no family wins more than {declared.max_hack_share:.0%} of {report.scenarios} scenarios "
         f"(worst: {worst.family if worst else '-'}, {worst.share if worst else 0:.0%})"],
    )


def _wins_more_often_than(wins: int, scenarios: int, allowed: float) -> bool:
    """Whether ``wins`` of ``scenarios`` show a win rate above ``allowed`` (exact binomial test, one-sided)."""
    from scipy.stats import binomtest

    return binomtest(wins, scenarios, allowed, alternative="greater").pvalue < CANARY_SHARE_ALPHA


def check_canary_floor(subject: EnvUnderTest) -> CheckResult:
    """``semantic.canary_floor``: every shipped canary scores at most the floor, or below the oracle.

    A canary the env names in ``canary_min_share`` must do so on that share of the scenarios:
    it fails when the scenarios it wins on show, by a one-sided exact binomial test at
    :data:`CANARY_SHARE_ALPHA`, that it wins more often than the rest of the share allows
    (on a sample of 3, one win is no evidence; on 20, four are). Every other canary must lose
    on each scenario.
    """
    if not subject.text and not subject.policies:
        return CheckResult(
            "semantic.canary_floor", SKIP, {"canaries_checked": 0},
            [f"no canaries: {type(subject.base).__name__} is not an AffectEnv (canaries(scenario) is its hook)"],
        )
    references = subject.references
    shares = dict(getattr(subject.base, "canary_min_share", {}))
    for name, share in shares.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise ValueError(f"{type(subject.base).__name__}.canary_min_share[{name!r}] is {share!r}; "
                             "give the share of scenarios a canary must lose on, in (0, 1]")
    beating: dict[str, list[str]] = {}
    played: dict[str, int] = {}
    checked = 0
    for index, scenario in enumerate(subject.scenarios):
        floor = subject.floors[index]
        reference = references[index][3] if references is not None else None
        for name, score in subject.canary_scores[index].items():
            checked += 1
            played[name] = played.get(name, 0) + 1
            if score > floor + REWARD_SLACK and (reference is None or not score < reference):
                against = f"reference {reference:.3f}" if reference is not None else "no reference"
                beating.setdefault(name, []).append(f"{scenario.id}/{name}: {score:.3f} > floor {floor:.3f} and >= {against}")
    shown_above = {name: _wins_more_often_than(len(lines), played[name], 1 - shares[name])
                   for name, lines in beating.items() if name in shares}
    problems = [line for name, lines in beating.items() if shown_above.get(name, True) for line in lines]
    tolerated = {name: f"{played[name] - len(beating[name])}/{played[name]}"
                 for name, shown in shown_above.items() if not shown}
    measured = {"canaries_checked": checked, "canaries_failing": len(problems), "canaries_within_share": tolerated}
    cls = type(subject.base).__name__
    if not checked:
        return CheckResult(
            "semantic.canary_floor", SKIP, measured,
            [f"canaries: 0 checked, so no reward hack was tried: {cls}.canaries(scenario) returns none"],
            "return {name: (final_text, trace)} of reward hacks that must score at most the floor or below "
            "reference_answer (docs/plugins.md)",
        )
    if problems and references is None:
        return CheckResult(
            "semantic.canary_floor", FAIL, measured,
            [f"canaries: {len(problems)} score above the floor, and {cls} does not implement reference_answer(scenario), "
             "the good final answer and trace they must score below; return (final_text, trace) (see docs/plugins.md)"],
            "return (final_text, trace) from reference_answer(scenario) (docs/plugins.md)",
        )
    if problems:
        return CheckResult(
            "semantic.canary_floor", FAIL, measured,
            [f"canaries: {len(problems)} score above the floor and at or above the reference: " + "; ".join(problems[:10])],
            "score each reward hack of canaries(scenario) below the reference answer",
        )
    return CheckResult(
        "semantic.canary_floor", PASS, measured,
        [f"canaries: {checked} at most the floor or below the reference"
         + "".join(f"; {name} below it on {won} scenarios ({shares[name]:.0%} asked, no evidence of fewer)"
                   for name, won in tolerated.items())],
    )


def check_no_solution_leakage(subject: EnvUnderTest) -> CheckResult:
    """``semantic.no_solution_leakage``: the label flip, label words in ids and the text memoriser on the env's splits."""
    if not subject.text:
        return CheckResult(
            "semantic.no_solution_leakage", SKIP, {},
            [f"{type(subject.base).__name__} is not an AffectEnv: it hides no label and has no text view"],
        )
    base = subject.base
    problems: list[str] = []
    flipped = 0
    for scenario in subject.scenarios:
        other = base.flip_label(scenario)
        if other is None:
            break
        flipped += 1
        if agent_view(base, scenario) != agent_view(base, other):
            problems.append(f"label flip: scenario {scenario.id!r}: what the agent sees changes when only the gold label changes")
        for label in base.label_set:
            if re.search(re.escape(str(label)), str(scenario.id), re.IGNORECASE):
                problems.append(f"scenario id {scenario.id!r} contains the label word {label!r}")
    memoriser, memoriser_problems = split_memoriser(subject.env)
    problems += memoriser_problems
    measured = {"label_flip_scenarios": flipped, "memoriser": memoriser}
    if problems:
        return CheckResult(
            "semantic.no_solution_leakage", FAIL, measured, problems[:10],
            "keep the gold label out of observations, tool outputs, tool schemas, the flat prompt and scenario ids; "
            "split by group (split_group) so no eval item has a twin in train",
        )
    flip = f"label flip: {flipped} scenarios" if flipped else "label flip: none (flip_label gives no other label)"
    return CheckResult("semantic.no_solution_leakage", PASS, measured, [flip, f"memoriser: {memoriser}"])


def check_verifier_determinism(subject: EnvUnderTest) -> CheckResult:
    """``semantic.verifier_determinism``: the oracle's reply scored ``replays`` times gives one reward
    (within ``variance_tolerance`` with an LLM judge, each replay asking a fresh, uncached judge)."""
    if subject.references is None:
        return CheckResult(
            "semantic.verifier_determinism", SKIP, {},
            ["unmet dependency: semantic.oracle_max (no oracle reply to replay)"],
        )
    if subject.policies:
        scenario = subject.scenarios[0]
        totals = [subject.policy_return(scenario, subject.base.reference_policy) for _ in range(subject.replays)]
        measured = {"replays": subject.replays, "llm_judged": False, "declared_variance_tolerance": 0.0}
        if len(set(totals)) != 1:
            return CheckResult("semantic.verifier_determinism", FAIL, measured,
                               [f"the oracle policy's seeded episodes earned {len(set(totals))} different mean rewards "
                                f"in {len(totals)} replays ({min(totals):.6g} to {max(totals):.6g})"],
                               "make step() a function of the episode so far: randomness only from self.np_random")
        return CheckResult("semantic.verifier_determinism", PASS, measured,
                           [f"{len(totals)} replays of the oracle policy on {scenario.id}: identical rewards"])
    scenario, text, trace, _ = subject.references[0]
    judged = bool(subject.judged_criteria)
    tolerance = subject.declaration.variance_tolerance if judged else 0.0
    measured: dict[str, Any] = {"replays": subject.replays, "llm_judged": judged, "declared_variance_tolerance": tolerance}
    if judged:
        judge = getattr(subject.base, "judge", None)
        if judge is None or not hasattr(judge, "lm"):
            return CheckResult(
                "semantic.verifier_determinism", FAIL, measured,
                [f"criteria {subject.judged_criteria} ask a judge, but the env has no judge attribute to pin and replay"],
                "keep the env's judge (an affectgym Judge) in its judge attribute",
            )
        measured["judge"] = subject.judge_pin
        results = []
        for _ in range(subject.replays):
            with fresh_judge(subject.base):
                results.append(subject.base.score(scenario, text, trace))
        unscored = sum(1 for result in results if result.unscored)
    else:
        results = [subject.base.score(scenario, text, trace) for _ in range(subject.replays)]
        unscored = 0
    totals = [float(result.total) for result in results]
    subject.observed_rewards.extend(totals)
    variance = statistics.pvariance(totals)
    measured.update(reward_variance=variance, reward_min=min(totals), reward_max=max(totals), judge_failures=unscored)
    same_parts = all(result.components == results[0].components for result in results)
    problems = []
    if unscored:
        problems.append(f"the judge failed on {unscored} of {len(results)} replays ({results[0].unscored or 'see the logs'})")
    if judged and variance > tolerance + REWARD_SLACK:
        problems.append(f"reward variance {variance:.4g} over {len(totals)} replays exceeds the declared {tolerance:g} "
                        f"(rewards {min(totals):.3f} to {max(totals):.3f})")
    if not judged and not (len(set(totals)) == 1 and same_parts):
        problems.append(f"score() of one reply gave {len(set(totals))} different rewards in {len(totals)} replays "
                        f"({min(totals):.6g} to {max(totals):.6g}) with no LLM judge")
    if problems:
        remedy = ("pin the judge: temperature 0, one model version; or declare a larger variance_tolerance (at most "
                  f"{MAX_VARIANCE_TOLERANCE:g})" if judged else "make score() a pure function of (scenario, reply, trace)")
        return CheckResult("semantic.verifier_determinism", FAIL, measured, problems, remedy)
    what = f"variance {variance:.3g} <= {tolerance:g}, judge {measured['judge']['model']}" if judged else "identical rewards"
    return CheckResult("semantic.verifier_determinism", PASS, measured, [f"{len(totals)} replays of {scenario.id}: {what}"])


#: The checks, by OpenEnv check id, in the order they are reported.
CHECKS: dict[str, Callable[[EnvUnderTest], CheckResult]] = {
    "runtime.reward_well_formed": check_reward_well_formed,
    "runtime.seed_control": check_seed_control,
    "runtime.episode_determinism": check_episode_determinism,
    "semantic.oracle_max": check_oracle_max,
    "semantic.floor_gap": check_floor_gap,
    "semantic.canary_floor": check_canary_floor,
    "semantic.reward_pays_skill": check_reward_pays_skill,
    "semantic.hack_surface": check_hack_surface,
    "semantic.no_solution_leakage": check_no_solution_leakage,
    "semantic.verifier_determinism": check_verifier_determinism,
}


# ------------------------------------------------------------------------------------- helpers
def agent_view(env: AffectEnv, scenario: Any) -> list[Any]:
    """Everything an agent can see of ``scenario``: observations, messages, tools, tool outputs, flat prompt."""
    view: list[Any] = []
    observation, info = env.reset(options={"scenario": scenario})
    view.append((observation, _visible(info)))
    for name, arguments in env.flat_tool_calls(scenario):
        observation, _, _, _, info = env.step(tool_call_text(name, arguments))
        view.append((observation, _visible(info)))
    view.append(env.flat_prompt(scenario))
    return view


def tool_call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A tool call as an agent writes it.

    >>> tool_call_text("read_note", {})
    '<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'
    """
    return f"<tool_call>{json.dumps({'name': name, 'arguments': dict(arguments)})}</tool_call>"


def scripted_episode(subject: EnvUnderTest, seed: int, index: int) -> list[tuple[Any, ...]]:
    """One episode from ``reset(seed=seed)`` on scenario ``index`` (text envs) played by a fixed script:
    ``(observation, reward, terminated, truncated, info)`` per step, the reset first (reward 0).

    A text env plays its oracle (each turn's reference: its tool calls, then its final text; the
    env's ``fuzz_actions()`` without one); a numeric env plays actions of its action space
    sampled from ``seed``.
    """
    base = subject.base
    if not subject.text:
        options = {"scenario_id": base.scenario_ids[0]} if getattr(base, "scenario_ids", None) else None
        observation, info = base.reset(seed=seed, options=options)
        base.action_space.seed(seed)
        steps: list[tuple[Any, ...]] = [(_plain(observation), 0.0, False, False, _plain(info))]
        for _ in range(100_000):
            observation, reward, terminated, truncated, info = base.step(base.action_space.sample())
            steps.append((_plain(observation), reward, terminated, truncated, _plain(info)))
            if terminated or truncated:
                break
        return steps
    scenario = subject.scenarios[index % len(subject.scenarios)]
    observation, info = base.reset(seed=seed, options={"scenario_id": scenario.id})
    steps = [(observation, 0.0, False, False, _plain(_visible(info)))]
    pending: list[str] = []
    for _ in range(base.max_turns):
        if not pending:
            pending = _script(base, base.scenario)
        observation, reward, terminated, truncated, info = base.step(pending.pop(0))
        steps.append((observation, reward, terminated, truncated, _plain(info)))
        if terminated or truncated:
            break
    return steps


@contextmanager
def fresh_judge(env: Any) -> Iterator[Any]:
    """Within the block, ``env.judge`` is a new judge of the same class, LM and settings, with no
    verdict cache and nothing memoised, so that a score asks the LM again."""
    judge = env.judge
    env.judge = type(judge)(judge.lm, dataclasses.replace(judge.config, cache=False), adapter=judge.adapter)
    try:
        yield env.judge
    finally:
        env.judge = judge


def split_memoriser(env: gym.Env) -> tuple[str, list[str]]:
    """The text memoriser on ``env``'s train split against its eval and validation splits:
    ``(summary, problems)``; the summary says why when it was skipped.

    Run for envs made by ``gym.make`` whose scenarios carry labels and that define
    ``scenario_text``, on the sides of the env's own split when it names them with
    ``split_parts()``, else ``"train"``, ``"validation"`` and ``"eval"``.
    """
    from affectgym.envs.leakage import check_leakage

    base = env.unwrapped
    spec = env.spec or base.spec
    if not base.label_set or not base.scenarios or base.scenario_text(base.scenarios[0]) is None:
        return "skipped: the env hides no label or has no scenario_text(scenario)", []
    if spec is None:
        return (
            "skipped: not made by gym.make, so its splits cannot be remade; "
            "run affectgym.envs.leakage.check_leakage(train_env, eval_env)"
        ), []

    def remake(split: Any) -> gym.Env:
        return gym.make(spec.id, **{**spec.kwargs, "split": split})

    try:
        # an env whose split is an object names its sides (split_parts); else the names
        train, evaluated = base.split_parts() if hasattr(base, "split_parts") else ("train", "eval")
        made = {"train": remake(train), "eval": remake(evaluated)}
    except (ValueError, TypeError, KeyError) as exc:
        return f"skipped: its train and eval splits could not be made ({exc})", []
    no_validation = None
    try:  # some splits have no validation side (a leave-one-out without a second value)
        made["validation"] = remake(train.with_part("validation") if hasattr(train, "with_part") else "validation")
    except (ValueError, TypeError, KeyError) as exc:
        no_validation = f"none ({exc})"
    try:
        results = {side: check_leakage(made["train"], made[side]) for side in made if side != "train"}
    except ImportError:
        return "skipped: needs scikit-learn (pip install 'affectgym[eval]')", []
    finally:
        for split_env in made.values():
            split_env.close()
    lines = [f"{side}: {result}" for side, result in results.items()]
    if no_validation:
        lines.append(f"validation: {no_validation}")
    problems = [f"leakage ({side} vs train): {result}" for side, result in results.items() if not result.passed]
    return " | ".join(lines), problems


def _script(base: AffectEnv, scenario: Any) -> list[str]:
    try:
        text, trace = base.reference_answer(scenario)
    except NotImplementedError:
        return list(base.fuzz_actions()) or [""]
    calls = [tool_call_text(e["name"], e.get("arguments", {})) for e in trace if e.get("type") == "tool_call"]
    return [*calls, text if text is not None else ""]


def _idle_episode(subject: EnvUnderTest) -> list[tuple[Any, ...]]:
    """Empty messages until the env ends the episode, then one step after the end."""
    base = subject.base
    base.reset(seed=subject.seed, options={"scenario_id": subject.scenarios[0].id})
    steps: list[tuple[Any, ...]] = [("", 0.0, False, False, {})]
    for _ in range(base.max_turns + 1):
        observation, reward, terminated, truncated, info = base.step("")
        steps.append((observation, reward, terminated, truncated, {}))
        if terminated or truncated:
            break
    steps.append(base.step("")[:4] + ({},))
    return steps


def _start(base: Any, **reset: Any) -> tuple[Any, ...]:
    observation, info = base.reset(**reset)
    if isinstance(base, AffectEnv):
        return (info["scenario_id"], observation)
    return (repr(_plain(observation)),)


def _visible(info: Mapping[str, Any]) -> dict[str, Any]:
    hidden_after_answer = {"reward_components", "episode_reward", "final_answer", "truncated_unanswered", "outcome"}
    return {k: v for k, v in info.items() if k not in hidden_after_answer}


def _plain(value: Any) -> Any:
    """``value`` with numpy arrays and scalars as lists and floats, so two episodes compare with ``==``."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _is_plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _jsonable(value: Any) -> Any:
    plain = _plain(value)
    return plain if plain is not value else repr(value)


def _task_count(base: Any) -> dict[str, int]:
    ids = getattr(base, "scenario_ids", None)
    if not ids:
        return {}
    split = getattr(base, "split", "all")
    return {split if isinstance(split, str) else str(getattr(split, "name", "split")): len(ids)}


__all__ = [
    "CHECKS",
    "CHECK_ENV_WARNINGS",
    "REDTEAM_CHECKS",
    "EXIT_FAIL",
    "EXIT_INTERNAL",
    "EXIT_PASS",
    "EXIT_UNSUPPORTED",
    "CheckResult",
    "EnvUnderTest",
    "UnknownEnvError",
    "ValidationDeclaration",
    "ValidationReport",
    "agent_view",
    "check_ids",
    "reward_problem",
    "run_checks",
    "scripted_episode",
    "split_memoriser",
    "tool_call_text",
    "validate",
]
