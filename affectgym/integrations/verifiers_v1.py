"""An affectgym env under verifiers' current (v1) API: a taskset of its scenarios, an env that plays them.

verifiers 0.3 splits an environment into a :class:`verifiers.v1.Taskset` (the rows) and a
:class:`verifiers.v1.Env` whose ``run`` drives each rollout's interaction. Here the taskset
is an affectgym env's scenarios (one task per scenario, its opening chat the prompt, seeded
as ``affectgym eval`` seeds its first episode; the rows of the classic integration's
dataset) and the env plays the user side host-side, as verifiers' own TextArena and OpenEnv
envs do: each reply of the model is one ``env.step`` on an env from a pool, the next
observation comes back as the user turn, and the episode's end ends the exchange (nothing is
appended after the last reply). The rollout's reward is the episode's return
(``affectgym_reward``, the same number ``affectgym eval`` reports), and each reward component
of the final step is a metric. Tool calls travel in the text, in the env's own
``<tool_call>`` form (the system prompt says how), so any harness that chats can play.

Run it with verifiers' ``eval`` command; the taskset id ``affectgym-verifiers`` is the
top-level module :mod:`affectgym_verifiers` that exports this module's classes::

    eval affectgym-verifiers --env.taskset.env affectgym/Sarcasm-v0 --env.player.harness.id null \\
        --env.player.runtime.type subprocess -m MODEL --client.base-url URL --no-push

The classic ``vf.MultiTurnEnv`` form (``verifiers.legacy``, what ``vf-eval`` loads) is in
:mod:`affectgym.integrations.verifiers`.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

import affectgym
from affectgym.integrations.openenv.app import check_text_env
from affectgym.integrations.verifiers import EnvPool, scenario_rows


class AffectGymConfig(vf.TasksetConfig):
    """Which affectgym env, split and options the taskset serves."""

    env: str = "affectgym/Sarcasm-v0"
    """A registered affectgym text env id."""
    split: str = "eval"
    """The split whose scenarios are the tasks."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of ``affectgym.make`` (besides ``split``)."""


class AffectGymData(vf.TaskData):
    """One scenario: the env to make and the episode to reset it to."""

    info: dict[str, Any]
    """``env``, ``split``, ``env_kwargs``, ``scenario_id`` and ``seed``."""


class AffectGymTask(vf.Task[AffectGymData, vf.State, vf.TaskConfig]):
    """A scenario of an affectgym env; its reward is recorded by :class:`AffectGymEnv`."""


class AffectGymEnvConfig(vf.EnvConfig):
    """The one seat: the model playing the env's agent."""

    player: vf.AgentConfig = vf.AgentConfig()


@functools.cache
def env_pool(env_id: str, env_kwargs_json: str) -> EnvPool:
    """The pool of envs of one id and options (``split`` included, as JSON), shared by this process's rollouts."""
    return EnvPool(env_id, json.loads(env_kwargs_json))


class AffectGymEnv(vf.Env[AffectGymEnvConfig]):
    """Plays one affectgym episode per rollout: the model's replies are the env's actions."""

    async def run(self, task: AffectGymTask, agents: Any) -> None:
        """Step the env with each reply until the episode ends; record its return and components."""
        info = task.data.info
        pool = env_pool(info["env"], json.dumps({**info["env_kwargs"], "split": info["split"]}, sort_keys=True))
        env = pool.take()
        env.reset(seed=info["seed"], options={"scenario_id": info["scenario_id"]})
        total, components, outcome = 0.0, {}, {}
        try:
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    observation, reward, terminated, truncated, step_info = env.step(segment.last_reply)
                    total += float(reward)
                    if terminated or truncated:
                        components, outcome = step_info.get("reward_components", {}), step_info.get("outcome") or {}
                        break
                    segment = await interaction.turn(observation)
        finally:
            pool.give_back(env)
        trace = interaction.trace
        trace.record_reward("affectgym_reward", total)
        trace.record_metrics({name: math.nan if value is None else float(value) for name, value in components.items()})
        trace.info["affectgym_outcome"] = outcome


class AffectGymTaskset(vf.Taskset[AffectGymTask, AffectGymConfig]):
    """The scenarios of an affectgym text env's split, one task each."""

    def load(self) -> Iterator[AffectGymTask]:
        """One task per scenario id, in the env's order: its opening chat (system prompt, any
        history, first observation) and the seed ``affectgym eval`` gives its first episode."""
        config = self.config
        probe = affectgym.make(config.env, split=config.split, **config.env_kwargs)
        check_text_env(probe, config.env)
        rows = scenario_rows(probe)
        probe.close()
        for idx, (prompt, row) in enumerate(zip(rows["prompt"], rows["info"], strict=True)):
            info = {"env": config.env, "env_kwargs": dict(config.env_kwargs), **row}
            yield AffectGymTask(
                AffectGymData(idx=idx, name=f"{config.env}:{row['scenario_id']}", prompt=prompt, info=info), config.task)


__all__ = ["AffectGymEnv", "AffectGymTaskset"]
