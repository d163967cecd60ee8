"""The protocol demonstrator: plays an env's tool protocol without ever looking at the answer.

:class:`ProtocolAgent` (``affectgym eval ENV --agent protocol``) makes, in its first message,
the tool calls that the env's flat form pre-renders (``env.flat_tool_calls``), each as a
``<tool_call>`` block, and then answers in the env's answer format (``env.answer_text``) with
a label drawn at random, at a random confidence. The draw depends only on the episode's
seed, never on what the tools said, so its episodes are demonstrations of the protocol
(which tools, how to call them, how to answer and end the turn) that carry no information
about the labels: the supervised warm start (``affectgym train --algo sft --demos DIR``) on
them teaches a model to play the env, not to solve it.

>>> import affectgym
>>> env = affectgym.make("affectgym/Sarcasm-v0", task_format={"flat_prompt": "compact"}, split="train").unwrapped
>>> print(protocol_tool_message(env, env.scenarios[0]))
<tool_call>{"name": "get_transcript", "arguments": {}}</tool_call>
<tool_call>{"name": "get_prosody_features", "arguments": {"detail": "summary"}}</tool_call>
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from affectgym.agents.base import Agent, tool_call_text

#: The range of the demonstrator's random confidence.
CONFIDENCE_RANGE = (0.5, 1.0)


def protocol_tool_message(env: Any, scenario: Any) -> str:
    """The first message of a protocol episode: the env's flat tool calls, one ``<tool_call>`` block a line.

    Args:
        env: An unwrapped affectgym env.
        scenario: One of its scenarios.
    """
    return "\n".join(tool_call_text(name, arguments) for name, arguments in env.flat_tool_calls(scenario))


class ProtocolAgent(Agent):
    """The label-blind protocol demonstrator (see the module docstring).

    Args:
        env_id: The env it plays (its tools, flat tool calls, label set and answer format).
        env_kwargs: The env's keyword arguments.
        seed: Seed of the draws until the runner reseeds each episode.

    Raises:
        ValueError: The env hides no label, has no tools, or cannot write an answer text.
    """

    name = "protocol"

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """What the env lacks: a label set, tools to call, an ``answer_text`` to answer with."""
        if not tuple(getattr(env, "label_set", ()) or ()):
            return "it answers with one of the env's labels and the env hides none (its label_set is empty)"
        if not env.tools:
            return "it demonstrates calling the env's tools and the env has none"
        if not callable(getattr(env, "answer_text", None)):
            return "it writes its answer with env.answer_text(label, confidence), which the env does not define"
        return None

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, seed: int = 0):
        import affectgym

        env = affectgym.make(env_id, **dict(env_kwargs or {})).unwrapped
        problem = self.env_problem(env)
        if problem is not None:
            raise ValueError(f"the 'protocol' agent cannot play {env_id}: {problem}")
        self.env = env  # read only: flat_tool_calls, answer_text and scenario lookups are pure
        self.labels = tuple(env.label_set)
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed, so an episode's answer depends only on its seed."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def for_worker(self) -> ProtocolAgent:
        """A copy with its own generator (reseeded by :meth:`reset` before each episode)."""
        copy = super().for_worker()
        copy._rng = np.random.default_rng(int(self._rng.integers(2**31)))
        return copy

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """The flat tool calls in the first message, then a random label at a random confidence."""
        if not any(message.get("role") == "assistant" for message in info.get("messages", [])):
            return protocol_tool_message(self.env, self._scenario(info.get("scenario_id")))
        label = self.labels[int(self._rng.integers(len(self.labels)))]
        return self.env.answer_text(label, round(float(self._rng.uniform(*CONFIDENCE_RANGE)), 2))

    def _scenario(self, scenario_id: str | None) -> Any:
        """The episode's scenario, or the first of the agent's env when it is of another split.

        Only its flat tool calls are read, which the speech envs make alike for every clip.
        """
        if scenario_id in self.env.scenario_ids:
            return self.env.get_scenario(scenario_id)
        return self.env.scenarios[0]

    def describe(self) -> dict[str, Any]:
        """Class, name and the confidence range."""
        return {**super().describe(), "confidence_range": list(CONFIDENCE_RANGE)}


__all__ = ["CONFIDENCE_RANGE", "ProtocolAgent", "protocol_tool_message"]
