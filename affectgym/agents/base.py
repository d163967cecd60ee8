"""The agent protocol: what the evaluation runner (and any research loop) talks to.

An agent reads an observation and the env's ``info`` (the chat so far in ``info["messages"]``
and the tool schemas in ``info["tools"]``) and returns its whole next message as text: tool
calls in the env's tool-call format (:func:`tool_call_text`) or a final answer. Agents know
nothing of an env's internals; everything they need is in ``info``.

* :meth:`Agent.act` / :meth:`Agent.aact` give one message (``aact`` for asyncio code);
* :meth:`Agent.play` drives a whole episode through a ``step`` function; the default loops
  ``act``, agents with their own loop (DSPy's ReAct) override it;
* :meth:`Agent.reset` is called before every episode with the episode's seed;
* :meth:`Agent.for_worker` gives the copy one concurrent worker uses (sharing heavy
  resources such as a model or an HTTP client);
* :meth:`Agent.tokens_generated` counts a model agent's output tokens, so a long run can
  show its speed (the eval runner's progress lines).

>>> agent = FunctionAgent(lambda observation, info: "<answer>happy</answer>", name="always-happy")
>>> agent.act("A note is waiting for you.", {"messages": [], "tools": []})
'<answer>happy</answer>'
>>> tool_call_text("read_note", {})
'<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

#: ``step(action) -> (observation, reward, terminated, truncated, info)``, as ``env.step``.
StepFn = Callable[[str], tuple[str, float, bool, bool, dict[str, Any]]]

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.DOTALL)


class Agent:
    """Base class of affectgym agents (see the module docstring).

    Subclasses implement :meth:`act` (or override :meth:`play`). Instances may be used by
    several workers at once through :meth:`for_worker`; ``act`` must not keep per-episode
    state on a shared object.
    """

    #: Short name shown in tables and written to ``metadata.json``.
    name: str = "agent"
    #: The env kinds this agent plays (:func:`affectgym.envs.spaces.env_kind`): ``"text"``
    #: and/or ``"numeric"``. Read, with :meth:`env_problem`, before a run starts
    #: (:func:`affectgym.agents.registry.check_agent_supports`).
    env_kinds: ClassVar[tuple[str, ...]] = ("text",)

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """Why this agent cannot play ``env`` (unwrapped, of one of :attr:`env_kinds`), or ``None``.

        The default accepts every env of its kinds; agents that need more (a label set, an
        answer format, some tools) say what is missing, e.g. ``"the env hides no label"``.
        """
        return None

    def reset(self, seed: int | None = None) -> None:
        """Forget the previous episode; ``seed`` is the new episode's seed (for sampling agents)."""

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """The agent's next message.

        Args:
            observation: What the env said last (the first user message after ``reset``).
            info: The env's ``info``: ``messages`` (the chat so far) and ``tools`` (schemas).

        Returns:
            The whole message: tool calls and/or a final answer, as text.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement act()")

    async def aact(self, observation: str, info: Mapping[str, Any]) -> str:
        """Async :meth:`act`; by default runs ``act`` in a worker thread."""
        return await asyncio.to_thread(self.act, observation, info)

    def play(self, step: StepFn, observation: str, info: Mapping[str, Any]) -> None:
        """Play one episode to its end: ``act``, ``step``, until terminated or truncated.

        Args:
            step: The env's step function (the runner passes a recording wrapper).
            observation: First observation, from ``reset``.
            info: First ``info``, from ``reset``.
        """
        done = False
        while not done:
            action = self.act(observation, info)
            observation, _, terminated, truncated, info = step(action)
            done = terminated or truncated

    def episode_log(self) -> dict[str, Any]:
        """What the agent keeps of the episode it just played, beyond the env's messages (``{}`` by default).

        The eval runner writes it to the episode's ``results.jsonl`` line under ``"agent_log"``
        (an API agent: the raw messages the server sent and the token usage). Called after
        :meth:`play` on the worker's copy; :meth:`reset` starts the next episode's log.
        """
        return {}

    def for_worker(self) -> Agent:
        """The instance one concurrent worker uses: a shallow copy (heavy resources are shared)."""
        return copy.copy(self)

    def describe(self) -> dict[str, Any]:
        """What to record about this agent in run metadata (class, name and settings)."""
        return {"class": f"{type(self).__module__}.{type(self).__qualname__}", "name": self.name}

    def tokens_generated(self) -> int | None:
        """Tokens this agent and its worker copies have generated so far, or ``None`` when it counts none.

        Model agents count (:class:`TokenCount`); scripted and rule agents generate no tokens.
        """
        return None

    def close(self) -> None:
        """Release resources (HTTP clients, background threads)."""


class TokenCount:
    """A running total of generated tokens, added to from any thread.

    An agent makes one in ``__init__``; its :meth:`Agent.for_worker` copies share it.

    >>> count = TokenCount()
    >>> count.add(12); count.add(30); count.total
    42
    """

    def __init__(self) -> None:
        self.total = 0
        self._lock = threading.Lock()

    def add(self, tokens: int) -> None:
        """Count ``tokens`` more."""
        with self._lock:
            self.total += int(tokens)


class FunctionAgent(Agent):
    """An agent from a function ``fn(observation, info) -> message``.

    Args:
        fn: Returns the next message; must be safe to call from several threads.
        name: Name shown in tables.
    """

    def __init__(self, fn: Callable[[str, Mapping[str, Any]], str], name: str = "function"):
        self.fn = fn
        self.name = name

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """Call the function."""
        return self.fn(observation, info)


def chat_function(agent: Agent) -> Callable[[list[dict[str, Any]]], str]:
    """The agent as a function of a chat: messages in, the agent's next message out.

    What an env takes where it wants text written by some model, such as the user simulator
    of ``EmpatheticDialogue-v0``: the last message is the observation, the whole chat is
    ``info["messages"]``, and there are no tools.

    >>> shout = chat_function(FunctionAgent(lambda observation, info: observation.upper()))
    >>> shout([{"role": "user", "content": "how was your day?"}])
    'HOW WAS YOUR DAY?'
    """

    def reply(messages: list[dict[str, Any]]) -> str:
        observation = (messages[-1].get("content") or "") if messages else ""
        return agent.act(observation, {"messages": list(messages), "tools": []})

    return reply


def tool_call_text(name: str, arguments: Any) -> str:
    """A tool call in the env's text format: ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``.

    Args:
        name: Tool name.
        arguments: Arguments: a dict, or a JSON string holding one (as OpenAI sends them).

    Returns:
        The tagged call; arguments that are not valid JSON are passed on as a string, so the
        env can say what was wrong.

    >>> tool_call_text("get_transcript", '{"lines": 2}')
    '<tool_call>{"name": "get_transcript", "arguments": {"lines": 2}}</tool_call>'
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass
    body = json.dumps({"name": name, "arguments": arguments if arguments is not None else {}}, ensure_ascii=False)
    return f"<tool_call>{body}</tool_call>"


def text_without_tool_calls(text: str | None) -> str:
    """``text`` with every ``<tool_call>...</tool_call>`` block removed and whitespace trimmed.

    >>> text_without_tool_calls('Let me look. <tool_call>{"name": "f", "arguments": {}}</tool_call>')
    'Let me look.'
    """
    return _TOOL_CALL_BLOCK.sub("", text or "").strip()


def raw_text_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages for a local model's chat template: assistant turns as the raw text it wrote.

    The env records an assistant tool-call turn with both its raw text (``content``) and the
    parsed ``tool_calls``; a template would render the calls twice, so ``tool_calls`` is
    dropped and the model sees exactly what it generated.

    >>> raw_text_messages([{"role": "assistant", "content": "<tool_call>{}</tool_call>", "tool_calls": [{}]}])
    [{'role': 'assistant', 'content': '<tool_call>{}</tool_call>'}]
    """
    out = []
    for message in messages:
        message = {key: value for key, value in message.items() if key != "tool_calls"}
        if message.get("content") is None:
            message["content"] = ""
        out.append(message)
    return out


__all__ = ["Agent", "FunctionAgent", "StepFn", "TokenCount", "chat_function", "raw_text_messages", "text_without_tool_calls", "tool_call_text"]
