"""The env a run checks (:class:`EnvUnderTest`): what several checks share, each computed once."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from affectgym.data.splits import spread
from affectgym.envs.core import AffectEnv
from affectgym.envs.validation.report import ValidationDeclaration
from affectgym.redteam.search import ItemResult, search_scenario

#: Seeded episodes of each scenario a numeric env's policy plays to be scored (its mean step reward).
POLICY_EPISODES = 3


@dataclass(frozen=True)
class PolicyScenario:
    """A numeric env's scenario as the checks name it: the ``scenario_id`` a reset is given (``None``: any)."""

    id: str | None


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


def _next_with_another_answer(rows: Sequence[tuple[Any, ...]], index: int) -> tuple[Any, ...] | None:
    """The first row after ``index`` (cyclically) whose scenario has another ``label``; any next row where there are no labels."""
    label = getattr(rows[index][0], "label", None)
    for step in range(1, len(rows)):
        row = rows[(index + step) % len(rows)]
        if label is None or getattr(row[0], "label", None) != label:
            return row
    return None


def _is_plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))
