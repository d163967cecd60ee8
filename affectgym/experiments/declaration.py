"""An experiment as a declaration: the env, the arms and their recipes, the seeds, the validation sweeps with
their choice rules, the metrics and the comparisons with their goals.

A declaration holds no loop. :class:`~affectgym.experiments.runner.ExperimentRunner` runs it: the
sweeps on validation, then every arm on eval once per frozen recipe and seed, every episode kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from affectgym.agents.base import Agent

__all__ = ["Arm", "ArmRun", "Comparison", "Experiment", "Sweep"]

#: What an episode's record (a line of the eval runner's ``results.jsonl``) is measured by.
Metric = Callable[[Mapping[str, Any]], float]


@dataclass(frozen=True)
class ArmRun:
    """What an arm's policy builder is given: its recipe (the sweep's candidate, or the frozen one), the
    seed, a work folder of its own (for training stages to resume in) and the split it will play."""

    arm: str
    recipe: dict[str, Any]
    seed: int
    work: Path
    split: str


@dataclass(frozen=True)
class Sweep:
    """How an arm's recipe is chosen on the validation split, fixed before the sweep runs.

    Attributes:
        candidates: Name -> settings laid over the arm's recipe.
        rule: The rule in words, as the tables quote it.
        choose: The rule: each candidate's validation means (metric -> value) in, the chosen name out.
        seed: The seed the candidates are trained and played with.
    """

    candidates: Mapping[str, Mapping[str, Any]]
    rule: str
    choose: Callable[[Mapping[str, Mapping[str, float]]], str]
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.candidates:
            raise ValueError("a sweep needs at least one candidate: {name: settings}")
        if not self.rule.strip():
            raise ValueError("a sweep must say its choice rule in words (rule='highest validation accuracy')")


@dataclass(frozen=True)
class Arm:
    """One arm: a recipe and the function that builds its policy for a seed (training it if needed).

    Attributes:
        name: The arm's name in tables and folders.
        policy: ``policy(ArmRun) -> Agent``.
        recipe: The settings that define it (JSON values): what is frozen and hashed.
        sweep: How its recipe is chosen on validation; ``None``: it is frozen as declared.
        seeds: The seeds it is played with; ``None``: the experiment's (``(0,)`` for an arm the same on
            every seed, such as an untrained model decoded greedily).
    """

    name: str
    policy: Callable[[ArmRun], Agent]
    recipe: Mapping[str, Any] = field(default_factory=dict)
    sweep: Sweep | None = None
    seeds: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.strip() != self.name:
            raise ValueError(f"an arm's name must be non-empty, without '/' or edge spaces, got {self.name!r}")


@dataclass(frozen=True)
class Comparison:
    """Arm ``arm`` against arm ``against`` on ``metric``, paired by (seed, item); the goal is met when the
    difference's interval lies above 0 and its mean reaches ``goal`` (``None``: reported, no goal)."""

    arm: str
    against: str
    metric: str
    goal: float | None = None


@dataclass(frozen=True)
class Experiment:
    """An experiment: every arm played on ``env_id``'s eval split, compared by ``metrics``.

    Attributes:
        name: Its name (the results folder's).
        env_id: The env played.
        arms: The arms, in table order.
        seeds: The seeds every arm is played with unless it names its own.
        metrics: Name -> what an episode record is measured by; ``reward`` is the episode's reward.
        comparisons: The paired comparisons and their goals.
        env_kwargs: Arguments of the env (not its split).
        episodes: Scenarios played of each split (``None``: all).
        groups: What the env's split groups are called in the intervals ("line groups").
    """

    name: str
    env_id: str
    arms: tuple[Arm, ...]
    seeds: tuple[int, ...]
    metrics: Mapping[str, Metric] = field(default_factory=lambda: {"reward": lambda record: float(record["reward"])})
    comparisons: tuple[Comparison, ...] = ()
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    episodes: int | None = None
    groups: str = "groups"

    def __post_init__(self) -> None:
        names = [arm.name for arm in self.arms]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"an experiment needs arms with distinct names, got {names}")
        if not self.seeds or not all(isinstance(s, int) and s >= 0 for s in self.seeds):
            raise ValueError(f"seeds must be a non-empty tuple of non-negative integers, got {self.seeds!r}")
        if "split" in self.env_kwargs:
            raise ValueError("env_kwargs must not hold 'split': the runner plays validation for sweeps and eval for results")
        for comparison in self.comparisons:
            unknown = {comparison.arm, comparison.against} - set(names)
            if unknown or comparison.metric not in self.metrics:
                raise ValueError(f"{comparison} names an unknown arm ({sorted(unknown)}) or metric; arms: {names}, "
                                 f"metrics: {sorted(self.metrics)}")

    def seeds_of(self, arm: Arm) -> tuple[int, ...]:
        """The seeds ``arm`` is played with."""
        return arm.seeds if arm.seeds is not None else self.seeds
