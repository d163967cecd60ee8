"""The runtime checks: every reward is well formed, the seed controls the episode, an episode replays.

They need no oracle: a text env plays its oracle's turns where it has one, else its
``fuzz_actions()``, and a numeric env actions sampled from its action space
(:func:`~affectgym.envs.validation.episodes.scripted_episode`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from affectgym.envs.core import AffectEnv
from affectgym.envs.validation.episodes import scripted_episode
from affectgym.envs.validation.report import FAIL, PASS, REWARD_SLACK, CheckResult, _plain
from affectgym.envs.validation.subject import EnvUnderTest


def check_reward_well_formed(subject: EnvUnderTest) -> CheckResult:
    """``runtime.reward_well_formed``: every reward observed is finite and inside ``reward_range``.

    The rewards observed: the step rewards of scripted episodes, one step after the end (of an
    episode of empty messages), and the totals the other checks score
    (:attr:`EnvUnderTest.observed_rewards`: this check runs after them). The range is OpenEnv's
    default ``(0, 1)`` for an env that declares none.
    """
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
    """``runtime.episode_determinism``: the same seed, scenario and messages give the same episode and reward.

    The same episode: its observations, rewards, ends and ``info``, step by step.
    """
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
