"""What a run of the checks declares, reports and returns: OpenEnv's statuses, verdicts and exit codes,
:class:`ValidationDeclaration`, :class:`CheckResult` and :class:`ValidationReport`."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from affectgym.redteam.report import DEFAULT_MAX_SHARE
from affectgym.redteam.search import DEFAULT_BUDGET, DEFAULT_MARGIN

#: The severity policy whose check ids and verdict rules are followed (OpenEnv 0.10, local lane).
POLICY_VERSION = "v2"
#: OpenEnv policy v2's bounds on what a declaration may declare.
MAX_ORACLE_TOLERANCE, MIN_FLOOR_MARGIN, MAX_VARIANCE_TOLERANCE = 0.1, 0.1, 0.2
#: ``openenv validate``'s exit codes: pass or warn, fail, unrecognised target, internal error.
EXIT_PASS, EXIT_FAIL, EXIT_UNSUPPORTED, EXIT_INTERNAL = 0, 1, 2, 3
#: Check statuses (a check's finding) and verdicts (the run's outcome), as OpenEnv names them.
PASS, FAIL, SKIP, ERROR, WARN = "pass", "fail", "skip", "error", "warn"
#: A reward may pass its range by this much (float sums of components).
REWARD_SLACK = 1e-9


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
    """What :func:`~affectgym.envs.validation.validate` ran and found.

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
    """:func:`~affectgym.envs.validation.validate` was given an id that names no registered environment (exit code 2)."""

    def __str__(self) -> str:
        return str(self.args[0])


def _plain(value: Any) -> Any:
    """``value`` with numpy arrays and scalars as lists and floats, so two episodes compare with ``==``."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _jsonable(value: Any) -> Any:
    plain = _plain(value)
    return plain if plain is not value else repr(value)
