"""An affectgym env as a verifiers taskset: one task per scenario, an env that plays each episode.

verifiers (0.4, ``import verifiers.v1 as vf``) splits an environment into a
:class:`verifiers.v1.Taskset` (the rows) and a :class:`verifiers.v1.Env` whose ``run`` drives
each rollout. Here:

* the taskset is an affectgym text env's scenarios of one split: one task per scenario, its
  opening chat the prompt (system prompt, any history, first observation; no gold label),
  seeded as ``affectgym eval`` seeds its first episode (:func:`scenario_rows`);
* the env plays the user side host-side, as verifiers' own TextArena and OpenEnv envs do: each
  reply of the model is one ``env.step`` on an env from a pool (:class:`EnvPool`), the next
  observation comes back as the user turn, and the episode's end ends the exchange (nothing is
  appended after the last reply). Tool calls travel in the text, in the env's own
  ``<tool_call>`` form (the system prompt says how), so any harness that chats can play; the
  default seat is verifiers' ``null`` harness (plain chat) on the local ``subprocess`` runtime;
* the task scores: its reward ``affectgym_reward`` is the episode's return (the number
  ``affectgym eval`` reports), and each reward component of the env's rubric is a metric. An
  episode that verifiers stopped before the env ended it (a turn or token cap) gets what the
  env pays when it truncates one: the score of the episode so far, unanswered. So does an
  episode whose model call failed, its error kept on the trace (``info["affectgym_error"]``).

verifiers' model-free ``vf-validate`` checks each task: ``gold``, the env's reference answer
(what ``check_env`` holds its canaries against) scores above doing nothing; ``noop``, a task no
one played (the env's score of no answer) stays below verifiers' solved mark, 1.0.

The taskset id ``affectgym-verifiers`` is the top-level module :mod:`affectgym_verifiers`,
which exports this module's taskset and env::

    vf-eval affectgym-verifiers --env.taskset.env affectgym/Sarcasm-v0 -m MODEL --client.base-url URL --no-push
    vf-validate affectgym-verifiers --taskset.env affectgym/Sarcasm-v0

Needs ``pip install 'affectgym[verifiers]'``.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import affectgym
from affectgym.eval.runner import episode_seed
from affectgym.integrations.openenv.app import check_text_env

try:
    import verifiers.v1 as vf
except ImportError as error:
    raise ImportError("verifiers is not installed; it comes with pip install 'affectgym[verifiers]'") from error
from pydantic import Field, field_validator

logger = logging.getLogger(__name__)


class EnvPool:
    """Env instances of one id and kwargs, reused across rollouts (making one is slow).

    Args:
        env_id: A registered env id.
        env_kwargs: Keyword arguments of ``affectgym.make`` (``split`` included).
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]):
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def take(self) -> Any:
        """An env no running rollout holds (a new one when every env is busy)."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return affectgym.make(self.env_id, **self.env_kwargs)

    def give_back(self, env: Any) -> None:
        """Return an env for the next rollout."""
        with self._lock:
            self._idle.append(env)


@functools.cache
def env_pool(env_id: str, env_kwargs_json: str) -> EnvPool:
    """The pool of envs of one id and options (``split`` included, as JSON), shared by this process's rollouts."""
    return EnvPool(env_id, json.loads(env_kwargs_json))


def scenario_rows(env: Any, seed: int = 0) -> dict[str, list[Any]]:
    """The opening chat (``prompt``) and ``info`` of each scenario of ``env``'s split, in the env's order.

    ``info`` holds ``scenario_id``, ``split`` and ``seed`` (the seed of the episode, as
    :func:`~affectgym.eval.runner.episode_seed` gives rollout 0 of an ``affectgym eval``).
    """
    base = env.unwrapped
    rows: dict[str, list[Any]] = {"prompt": [], "info": []}
    for scenario_id in base.scenario_ids:
        episode = episode_seed(seed, scenario_id, 0)
        _, info = env.reset(seed=episode, options={"scenario_id": scenario_id})
        rows["prompt"].append([{"role": m["role"], "content": m["content"]} for m in info["messages"]])
        rows["info"].append({"scenario_id": scenario_id, "split": base.split, "seed": episode})
    return rows


def episode_result(env: Any) -> Any:
    """The env's own score of the episode ``env`` played (or is playing): a ``RubricResult``.

    The final text is the answer that ended the episode (the trace's ``final`` entry); an
    episode without one (truncated, stopped early, or not started) is scored as unanswered.
    """
    base = env.unwrapped
    trace = base.trace
    final_text = trace[-1]["text"] if trace and trace[-1].get("type") == "final" else None
    return base.score(base.scenario, final_text, trace)


def component_values(components: Mapping[str, float | None]) -> dict[str, float]:
    """Reward components as metrics: a component the env could not compute (a failed judge) is NaN.

    >>> component_values({"correctness": 1.0, "style": None})
    {'correctness': 1.0, 'style': nan}
    """
    return {name: math.nan if value is None else float(value) for name, value in components.items()}


class AffectGymConfig(vf.TasksetConfig):
    """Which affectgym env, split and options the taskset serves."""

    env: str = "affectgym/Sarcasm-v0"
    """A registered affectgym text env id."""
    split: str = "eval"
    """The split whose scenarios are the tasks."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of ``affectgym.make`` (besides ``split``)."""

    @field_validator("env")
    @classmethod
    def _registered(cls, env_id: str) -> str:
        if env_id not in affectgym.list_envs():
            raise ValueError(f"unknown env id {env_id!r}; registered affectgym envs: {', '.join(affectgym.list_envs())}")
        return env_id


class AffectGymData(vf.TaskData):
    """One scenario: the env to make and the episode to reset it to."""

    info: dict[str, Any]
    """``env``, ``split``, ``env_kwargs``, ``scenario_id`` and ``seed``."""


class AffectGymState(vf.State):
    """What the rollout's episode paid, set by :class:`AffectGymEnv` before the task scores it."""

    episode_return: float | None = None
    """The episode's return; ``None`` while no episode was played."""
    reward_components: dict[str, float] = Field(default_factory=dict)
    """The env's reward components of the episode."""

    def record(self, episode_return: float, components: Mapping[str, float | None]) -> None:
        """Keep what the episode paid, its components as metrics (:func:`component_values`)."""
        self.episode_return, self.reward_components = float(episode_return), component_values(components)


class AffectGymTask(vf.Task[AffectGymData, AffectGymState, vf.TaskConfig]):
    """A scenario of an affectgym env, scored by the env's own rubric."""

    @contextmanager
    def episode_env(self) -> Iterator[Any]:
        """A pooled env reset to this task's scenario and seed, given back to its pool afterwards."""
        info = self.data.info
        pool = env_pool(info["env"], json.dumps({**info["env_kwargs"], "split": info["split"]}, sort_keys=True))
        env = pool.take()
        try:
            env.reset(seed=info["seed"], options={"scenario_id": info["scenario_id"]})
            yield env
        finally:
            pool.give_back(env)

    def scored(self, trace: vf.Trace) -> AffectGymState:
        """The trace's episode result; for a task no one played, the env's score of no answer."""
        state = trace.state
        if state.episode_return is None:
            with self.episode_env() as env:
                result = episode_result(env)
            state.record(result.total, result.components)
        return state

    @vf.reward
    async def affectgym_reward(self, trace: vf.Trace) -> float:
        """The episode's return: what ``affectgym eval`` reports for the same replies."""
        return self.scored(trace).episode_return

    @vf.metric
    async def reward_components(self, trace: vf.Trace) -> dict[str, float]:
        """Each reward component of the env's rubric, under its own name."""
        return self.scored(trace).reward_components

    async def validate(self, runtime: Any) -> bool:
        """The gold check: the env's reference answer scores above doing nothing (no answer)."""
        with self.episode_env() as env:
            base = env.unwrapped
            reference_text, reference_trace = base.reference_answer(base.scenario)
            reference = base.score(base.scenario, reference_text, reference_trace).total
            nothing = episode_result(env).total
        logger.info("%s: reference answer %.4f, no answer %.4f", self.data.name, reference, nothing)
        return bool(reference > nothing)


class AffectGymEnvConfig(vf.EnvConfig):
    """The one seat, the model playing the env's agent: by default plain chat on this machine."""

    player: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())


class AffectGymEnv(vf.Env[AffectGymEnvConfig]):
    """Plays one affectgym episode per rollout: the model's replies are the env's actions."""

    async def run(self, task: AffectGymTask, agents: Any) -> None:
        """Step the env with each reply until the episode ends; leave its return on the trace's state.

        A model call that fails mid-episode ends the exchange: verifiers records the error on the
        trace (which stays not ``ok``, so the eval counts it errored and ``--resume`` plays it
        again) and skips the task's scoring. The episode is scored here instead, as the env scores
        an unanswered one, and ``info["affectgym_error"]`` names the error.
        """
        with task.episode_env() as env:
            async with agents.player.interaction(task) as interaction:
                trace, step_rewards = interaction.trace, []
                segment = await interaction.turn()
                while not segment.terminated:
                    observation, reward, terminated, truncated, step_info = env.step(segment.last_reply)
                    step_rewards.append(float(reward))
                    if terminated or truncated:
                        trace.state.record(math.fsum(step_rewards), step_info.get("reward_components", {}))
                        trace.info["affectgym_outcome"] = step_info.get("outcome") or {}
                        break
                    segment = await interaction.turn(observation)
                else:  # verifiers stopped the exchange first: what the env pays when it truncates
                    result = episode_result(env)
                    trace.state.record(result.total, result.components)
                trace.info["affectgym_step_rewards"] = step_rewards
            if not trace.ok and not trace.rewards:  # the rollout failed before verifiers scored it
                error = trace.last_error
                trace.info["affectgym_error"] = {"type": error.type, "message": error.message}
                await task.score(trace)


class AffectGymTaskset(vf.Taskset[AffectGymTask, AffectGymConfig]):
    """The scenarios of an affectgym text env's split, one task each."""

    def load(self) -> Iterator[AffectGymTask]:
        """One task per scenario id, in the env's order, named ``ENV_ID:SPLIT:SCENARIO_ID``."""
        config = self.config
        probe = affectgym.make(config.env, split=config.split, **config.env_kwargs)
        check_text_env(probe, config.env)
        rows = scenario_rows(probe)
        probe.close()
        logger.info("%s: %d tasks, the scenarios of split %r", config.env, len(rows["prompt"]), config.split)
        for prompt, row in zip(rows["prompt"], rows["info"], strict=True):
            info = {"env": config.env, "env_kwargs": dict(config.env_kwargs), **row}
            name = f"{config.env}:{row['split']}:{row['scenario_id']}"
            yield AffectGymTask(AffectGymData(name=name, prompt=prompt, info=info), config.task)


__all__ = [
    "AffectGymConfig",
    "AffectGymEnv",
    "AffectGymEnvConfig",
    "AffectGymState",
    "AffectGymTask",
    "AffectGymTaskset",
    "EnvPool",
    "component_values",
    "env_pool",
    "episode_result",
    "scenario_rows",
]
