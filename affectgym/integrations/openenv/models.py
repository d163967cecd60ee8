"""The typed messages of a served affectgym env: OpenEnv ``Action``, ``Observation`` and ``State``.

* :class:`AffectAction`: ``message``, the agent's whole message, exactly what
  ``AffectEnv.step`` takes (tool calls or a final answer);
* :class:`AffectObservation`: the step's ``text`` (the observation), ``reward``, ``done``,
  ``terminated``, ``truncated`` and the env's ``info`` as fields: ``messages``, ``tools``,
  ``scenario_id``, ``split``, ``turn``, ``max_turns``, ``reward_components``, the env's other
  info keys under ``info``, and, only once the episode is over, ``outcome``,
  ``final_answer``, ``episode_reward`` and ``truncated_unanswered`` (``None`` before:
  ``outcome`` holds the gold label, which must not cross the wire before the answer);
* :class:`AffectState`: the session's episode (id, steps, scenario, turn, done).

The classes subclass OpenEnv 0.10's, which is imported when one of them is first
used (``from affectgym.integrations.openenv.models import AffectAction``), not when this
module is. :func:`observation_fields` and :func:`info_from_observation` convert between
an env step and the observation's fields, both ways, with no OpenEnv import.

>>> fields = observation_fields("Final answer received.", 1.0, True, False, {
...     "messages": [], "tools": [], "scenario_id": "s1", "split": "eval", "turn": 1, "max_turns": 8,
...     "reward_components": {"correctness": 1.0}, "outcome": {"label": "sarcastic"}, "final_answer": "x",
...     "episode_reward": 1.0, "truncated_unanswered": False, "pivot": True})
>>> fields["outcome"], fields["info"]
({'label': 'sarcastic'}, {'pivot': True})
>>> info_from_observation(fields)["outcome"]
{'label': 'sarcastic'}
>>> observation_fields("Tool output.", 0.0, False, False, {"outcome": {"label": "sarcastic"}})["outcome"] is None
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

#: ``info`` keys an affectgym env sets on every step; each is a field of the observation.
STEP_INFO_KEYS = ("messages", "tools", "scenario_id", "split", "turn", "max_turns", "reward_components")
#: ``info`` keys set only on the step that ends an episode; ``None`` on the wire before it.
END_INFO_KEYS = ("outcome", "final_answer", "episode_reward", "truncated_unanswered")


def jsonable(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays, tuples and non-finite floats made JSON-safe.

    Non-finite floats become ``None`` (JSON has no NaN); mappings get string keys.

    >>> import numpy as np
    >>> jsonable({"x": np.float32(0.5), "v": np.arange(2), 3: (1, float("nan"))})
    {'x': 0.5, 'v': [0, 1], '3': [1, None]}
    """
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # NumPy scalar or array
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def observation_fields(
    text: str, reward: float | None, terminated: bool, truncated: bool, info: Mapping[str, Any]
) -> dict[str, Any]:
    """The fields of an :class:`AffectObservation` for one env step (or a reset: ``reward=None``).

    The end-only keys (:data:`END_INFO_KEYS`) are kept only when the step ended the
    episode, whatever the env put in ``info`` before.
    """
    done = bool(terminated or truncated)
    fields: dict[str, Any] = {
        "text": text,
        "reward": None if reward is None else float(reward),
        "done": done,
        "terminated": bool(terminated),
        "truncated": bool(truncated),
    }
    fields.update({key: jsonable(info[key]) for key in STEP_INFO_KEYS if key in info})
    fields.update({key: jsonable(info.get(key)) if done else None for key in END_INFO_KEYS})
    fields["info"] = jsonable({key: value for key, value in info.items() if key not in (*STEP_INFO_KEYS, *END_INFO_KEYS)})
    return fields


def info_from_observation(observation: Mapping[str, Any]) -> dict[str, Any]:
    """The env's ``info`` rebuilt from an observation's fields (a dict, as sent on the wire)."""
    info = {key: observation[key] for key in STEP_INFO_KEYS if key in observation}
    info.update(observation.get("info") or {})
    if observation.get("done"):
        info.update({key: observation.get(key) for key in END_INFO_KEYS})
    return info


@functools.cache
def _models() -> dict[str, type]:
    from openenv.core.env_server import Action, Observation, State
    from pydantic import Field

    class AffectAction(Action):
        """The agent's whole message, as ``AffectEnv.step`` takes it (tool calls or a final answer)."""

        message: str = Field(description='The agent\'s message: <tool_call>{"name": ..., "arguments": {...}}</tool_call> or a final answer')

    class AffectObservation(Observation):
        """What the env answered: the observation text, the chat, the tools and the reward's parts."""

        text: str = Field(default="", description="The observation: the next user or tool message")
        terminated: bool = Field(default=False, description="The episode ended with an answer")
        truncated: bool = Field(default=False, description="The episode ended at the turn limit, unanswered")
        messages: list[dict[str, Any]] = Field(default_factory=list, description="The chat so far, OpenAI style")
        tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI function schemas of the env's tools")
        scenario_id: str | None = Field(default=None, description="Id of the episode's scenario")
        split: str | None = Field(default=None, description="The split the scenario belongs to")
        turn: int = Field(default=0, description="Agent messages read so far in the episode")
        max_turns: int | None = Field(default=None, description="Agent messages allowed per episode")
        reward_components: dict[str, float | None] = Field(default_factory=dict, description="Named parts of this step's reward")
        outcome: dict[str, Any] | None = Field(default=None, description="Facts for evaluation records (gold label included); only once done")
        final_answer: Any = Field(default=None, description="The parsed final answer; only once done")
        episode_reward: float | None = Field(default=None, description="The episode's rubric total; only once done")
        truncated_unanswered: bool | None = Field(default=None, description="Whether the turn limit ended the episode; only once done")
        info: dict[str, Any] = Field(default_factory=dict, description="The env's other info keys")

    class AffectState(State):
        """The session's current episode."""

        env_id: str = Field(default="", description="The served env id")
        scenario_id: str | None = Field(default=None, description="Id of the episode's scenario (None before the first reset)")
        turn: int = Field(default=0, description="Agent messages read so far in the episode")
        done: bool = Field(default=True, description="No episode is running (before the first reset, or after its end)")

    models = {"AffectAction": AffectAction, "AffectObservation": AffectObservation, "AffectState": AffectState}
    for name, model in models.items():
        model.__qualname__ = name
    return models


def __getattr__(name: str) -> Any:
    # The OpenEnv classes are built on first use: openenv loads only when it is needed.
    if name in ("AffectAction", "AffectObservation", "AffectState"):
        return _models()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The three model names resolve through the module __getattr__ above.
__all__ = [  # noqa: F822
    "END_INFO_KEYS",
    "STEP_INFO_KEYS",
    "AffectAction",
    "AffectObservation",
    "AffectState",
    "info_from_observation",
    "jsonable",
    "observation_fields",
]
