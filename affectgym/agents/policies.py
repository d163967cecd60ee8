"""Agents for numeric envs (array observations and actions), such as ``affectgym/EmotionState-v0``.

A policy agent maps an observation to an action; the evaluation runner plays it through the
same ``reset``/``step`` loop as a text agent and writes the same results files.

* ``controller`` -- the proportional controller of the emotion-state envs: command the
  state plus ``gain`` times the error to the target (:func:`proportional_command`);
* ``random`` -- a uniformly random action from the action space, seeded per episode;
* ``sb3:<path/model.zip>`` -- a Stable-Baselines3 model saved by ``affectgym train --algo
  ppo|sac`` (its deterministic action).

>>> import affectgym
>>> env = affectgym.make("affectgym/EmotionState-v0")
>>> observation, info = env.reset(seed=0)
>>> action = ControllerPolicy().act(observation, info)
>>> action.shape, bool(((0 <= action) & (action <= 1)).all())
((7,), True)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from affectgym.agents.base import Agent
from affectgym.envs.emotion_state.control import DEFAULT_CONTROLLER_GAIN, proportional_command

NUM_EMOTIONS = 7
#: The algorithms ``affectgym train`` saves models of (the train layer's ``ALGOS``; agents sit below it).
SB3_ALGOS = ("ppo", "sac")
STATE, TARGET = slice(0, NUM_EMOTIONS), slice(NUM_EMOTIONS, 2 * NUM_EMOTIONS)  # EmotionState-v0's observation layout


class PolicyAgent(Agent):
    """Base of the numeric-env agents: ``act`` returns the action array."""

    env_kinds = ("numeric",)


class ControllerPolicy(PolicyAgent):
    """The proportional controller on ``EmotionState-v0``'s observation (state at 0-6, target at 7-13).

    Args:
        gain: See :func:`proportional_command`.
    """

    name = "controller"

    def __init__(self, gain: float = DEFAULT_CONTROLLER_GAIN):
        self.gain = float(gain)

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """It reads EmotionState-v0's observation layout, so the env must be an :class:`~affectgym.envs.emotion_state.EmotionStateEnv`."""
        from affectgym.envs.emotion_state import EmotionStateEnv

        if isinstance(env, EmotionStateEnv):
            return None
        return (
            "it reads EmotionState-v0's observation (state at 0-6, target at 7-13) and the env is a "
            f"{type(env).__name__}, not an EmotionStateEnv"
        )

    def act(self, observation: Any, info: Mapping[str, Any]) -> np.ndarray:
        """Command the state plus ``gain`` times the error to the target."""
        observation = np.asarray(observation)
        return proportional_command(observation[STATE], observation[TARGET], self.gain)

    def describe(self) -> dict[str, Any]:
        """Class, name and gain."""
        return {**super().describe(), "gain": self.gain}


class RandomPolicy(PolicyAgent):
    """A uniformly random action in the action space's bounds, seeded per episode.

    Args:
        action_space: The env's ``Box`` action space.
        seed: Seed until the first :meth:`reset`.
    """

    name = "random"

    def __init__(self, action_space: Any, seed: int = 0):
        self.low, self.high = np.asarray(action_space.low), np.asarray(action_space.high)
        self.dtype = action_space.dtype
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed, so an episode's actions depend only on its seed."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def act(self, observation: Any, info: Mapping[str, Any]) -> np.ndarray:
        """A uniform draw in the bounds."""
        return self._rng.uniform(self.low, self.high).astype(self.dtype)


class SB3Policy(PolicyAgent):
    """A saved Stable-Baselines3 model's deterministic action.

    Args:
        path: The ``model.zip``.
        algo: ``"ppo"`` or ``"sac"``; by default the ``algo`` of the ``summary.json`` that
            ``affectgym train`` writes beside the model, else each is tried in turn.
        device: Torch device.

    Raises:
        FileNotFoundError: ``path`` is not a file.
        ValueError: The model loads with none of the algorithms.
    """

    name = "sb3"

    def __init__(self, path: str | Path, algo: str | None = None, device: str = "cpu"):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(
                f"sb3:{path}: no such model file; pass the model.zip that `affectgym train --algo ppo|sac` wrote, "
                "e.g. sb3:runs/es/model.zip"
            )
        summary = self.path.with_name("summary.json")
        if algo is None and summary.is_file():
            algo = json.loads(summary.read_text(encoding="utf-8")).get("algo")
        candidates = (algo,) if algo is not None else SB3_ALGOS
        problems = []
        for candidate in candidates:
            try:
                self.model = _sb3_class(candidate).load(self.path, device=device)
            except (ValueError, KeyError, RuntimeError, TypeError, AttributeError) as exc:
                problems.append(f"{candidate}: {type(exc).__name__}: {exc}")
                continue
            self.algo = candidate
            self.name = f"sb3-{candidate}"
            return
        raise ValueError(f"sb3:{path} loads as none of {list(candidates)} models: " + "; ".join(problems))

    def act(self, observation: Any, info: Mapping[str, Any]) -> np.ndarray:
        """The model's deterministic action."""
        return self.model.predict(observation, deterministic=True)[0]

    def describe(self) -> dict[str, Any]:
        """Class, name, model file and algorithm."""
        return {**super().describe(), "path": str(self.path), "algo": self.algo}


def _sb3_class(algo: str) -> Any:
    import stable_baselines3

    if algo not in SB3_ALGOS:
        raise ValueError(f"algo {algo!r} is not supported; accepted: {', '.join(SB3_ALGOS)}")
    return getattr(stable_baselines3, algo.upper())


__all__ = [
    "DEFAULT_CONTROLLER_GAIN",
    "ControllerPolicy",
    "PolicyAgent",
    "RandomPolicy",
    "SB3Policy",
    "proportional_command",
]
