"""An affectgym env under verifiers' current (v1) API: a taskset of its scenarios, an env that plays them.

verifiers 0.3 splits an environment into a :class:`verifiers.v1.Taskset` (the rows) and a
:class:`verifiers.v1.Env` whose ``run`` drives each rollout's interaction. Here the taskset
is an affectgym env's scenarios (one task per scenario, its first observation the prompt, its
system prompt the task's) and the env plays the user side host-side, as verifiers' own
TextArena and OpenEnv envs do: each reply of the model is one ``env.step``, the next
observation comes back as the user turn, and the episode's end ends the exchange (nothing is
appended after the last reply). The rollout's reward is the episode's return
(``affectgym_reward``, the same number ``affectgym eval`` reports), and each reward component
of the final step is a metric. Tool calls travel in the text, in the env's own
``<tool_call>`` form (the system prompt says how), so any harness that chats can play.

Run it with verifiers' ``eval`` command, naming this module as the taskset::

    eval --env.taskset.id affectgym.integrations.verifiers_v1 \\
        --env.taskset.env affectgym/Sarcasm-v0 --env.player.harness.id null \\
        --env.player.runtime.id subprocess --model MODEL --client.base-url URL

The classic ``vf.MultiTurnEnv`` form (``verifiers.legacy``, what ``vf-eval`` loads) is in
:mod:`affectgym.integrations.verifiers`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

import affectgym
from affectgym.envs.spaces import env_kind


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


def make_env(info: dict[str, Any]) -> Any:
    """The affectgym env of a task, reset to its scenario; returns ``(env, first observation)``."""
    env = affectgym.make(info["env"], split=info["split"], **info["env_kwargs"])
    observation, _ = env.reset(seed=info["seed"], options={"scenario_id": info["scenario_id"]})
    return env, observation


class AffectGymEnv(vf.Env[AffectGymEnvConfig]):
    """Plays one affectgym episode per rollout: the model's replies are the env's actions."""

    async def run(self, task: AffectGymTask, agents: Any) -> None:
        """Step the env with each reply until the episode ends; record its return and components."""
        env, _ = make_env(task.data.info)
        total, components, outcome = 0.0, {}, {}
        try:
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    observation, reward, terminated, truncated, info = env.step(segment.last_reply)
                    total += float(reward)
                    if terminated or truncated:
                        components, outcome = info.get("reward_components", {}), info.get("outcome") or {}
                        break
                    segment = await interaction.turn(observation)
        finally:
            env.close()
        trace = interaction.trace
        trace.record_reward("affectgym_reward", total)
        trace.record_metrics({name: math.nan if value is None else float(value) for name, value in components.items()})
        trace.info["affectgym_outcome"] = outcome


class AffectGymTaskset(vf.Taskset[AffectGymTask, AffectGymConfig]):
    """The scenarios of an affectgym text env's split, one task each."""

    def load(self) -> Iterator[AffectGymTask]:
        """One task per scenario id, in the env's order, seeded by its index."""
        config = self.config
        probe = affectgym.make(config.env, split=config.split, **config.env_kwargs)
        if env_kind(probe) != "text":
            raise ValueError(f"{config.env} is not a text env; verifiers plays text envs (the affectgym ids: "
                             f"{', '.join(affectgym.list_envs())})")
        base = probe.unwrapped
        for idx, scenario_id in enumerate(base.scenario_ids):
            info = {"env": config.env, "split": config.split, "env_kwargs": dict(config.env_kwargs),
                    "scenario_id": scenario_id, "seed": idx}
            observation, _ = probe.reset(seed=idx, options={"scenario_id": scenario_id})
            yield AffectGymTask(
                AffectGymData(idx=idx, name=f"{config.env}:{scenario_id}", prompt=observation,
                              system_prompt=base.messages[0]["content"], info=info),
                config.task,
            )
        probe.close()


__all__ = ["AffectGymEnv", "AffectGymTaskset"]
