"""An agent behind any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, OpenRouter).

The env's messages and tool schemas are sent as they are (assistant tool-call turns as
OpenAI ``tool_calls``, tool outputs as ``tool`` messages); the reply's ``tool_calls`` come
back as the env's tool-call text (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``),
after any text the model wrote. When tools are sent natively, the system prompt's sentence
asking for tool calls as text (``info["tool_call_instruction"]``) is replaced by
:data:`NATIVE_TOOL_INSTRUCTION`. Each episode's raw assistant messages (ids and all) and its
summed token usage are kept for the run's ``results.jsonl`` (:meth:`OpenAIAgent.episode_log`).
Timeouts and retries with exponential backoff (honouring
``Retry-After``) come from the ``openai`` client; a semaphore shared by every worker bounds
the requests in flight.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from affectgym.agents.base import Agent, TokenCount, text_without_tool_calls, tool_call_text

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Sent when no key is set: local servers (vLLM, Ollama) accept any key.
PLACEHOLDER_KEY = "EMPTY"
#: What the system prompt says of tool calls when they are sent as OpenAI ``tools``.
NATIVE_TOOL_INSTRUCTION = "Call a tool through the function-calling tools of this chat"


def with_native_tools(messages: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """``messages`` with the system prompt's text tool-call ``instruction`` replaced by :data:`NATIVE_TOOL_INSTRUCTION`.

    >>> with_native_tools([{"role": "system", "content": "Label it. Call a tool as <tool_call>...</tool_call> (twice)."}],
    ...                   "Call a tool as <tool_call>...</tool_call>")[0]["content"]
    'Label it. Call a tool through the function-calling tools of this chat (twice).'
    """
    if not instruction:
        return messages
    return [{**m, "content": m["content"].replace(instruction, NATIVE_TOOL_INSTRUCTION)}
            if m.get("role") == "system" and isinstance(m.get("content"), str) else m for m in messages]


def openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The env's chat in the chat-completions wire format.

    Assistant tool-call turns carry ``tool_calls`` and only their free text as ``content``;
    call ids are made unique across the conversation (the env numbers them per message) and
    the ``tool`` messages are relinked to them.

    >>> chat = openai_messages([
    ...     {"role": "assistant", "content": '<tool_call>{"name": "f", "arguments": {}}</tool_call>',
    ...      "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "call_0", "name": "f", "content": "out"}])
    >>> chat[0]["content"], chat[0]["tool_calls"][0]["id"], chat[1]
    (None, 'call_0_0', {'role': 'tool', 'tool_call_id': 'call_0_0', 'content': 'out'})
    """
    out: list[dict[str, Any]] = []
    renamed: dict[str, str] = {}
    for turn, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            renamed = {}
            calls = []
            for index, call in enumerate(message["tool_calls"]):
                new_id = f"call_{turn}_{index}"
                renamed[str(call.get("id"))] = new_id
                calls.append({"id": new_id, "type": "function", "function": dict(call["function"])})
            out.append({"role": "assistant", "content": text_without_tool_calls(message.get("content")) or None, "tool_calls": calls})
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            out.append({"role": "tool", "tool_call_id": renamed.get(call_id, call_id), "content": str(message.get("content") or "")})
        else:
            out.append({"role": role, "content": message.get("content") or ""})
    return out


def action_from_message(content: str | None, tool_calls: Sequence[Any] | None) -> str:
    """The env action for an assistant reply: its text, then each tool call in the env's format.

    Args:
        content: The reply's text (``None`` for a pure tool-call turn).
        tool_calls: The reply's ``tool_calls`` (OpenAI objects or dicts).

    >>> action_from_message("Let me read it.", [{"function": {"name": "read_note", "arguments": "{}"}}])
    'Let me read it.\\n<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'
    """
    parts = [content.strip()] if content and content.strip() else []
    for call in tool_calls or []:
        function = call["function"] if isinstance(call, Mapping) else call.function
        name = function["name"] if isinstance(function, Mapping) else function.name
        arguments = function.get("arguments") if isinstance(function, Mapping) else function.arguments
        parts.append(tool_call_text(name, arguments))
    return "\n".join(parts)


#: Sampling arguments :class:`OpenAIAgent` takes as its own keywords; others go in ``extra_body``.
AGENT_SAMPLING_KEYS = ("temperature", "top_p", "max_tokens")


def sampling_kwargs(sampling_args: Mapping[str, Any]) -> dict[str, Any]:
    """:class:`OpenAIAgent` keywords for a request's sampling arguments (vf-eval's ``--sampling-args``).

    ``temperature``, ``top_p`` and ``max_tokens`` become the agent's own arguments; every
    other key (``min_p``, ``top_k``, ``seed``, a server's options...) is sent as it is, in
    ``extra_body``.

    >>> sampling_kwargs({"temperature": 0.7, "max_tokens": 64, "min_p": 0.05})
    {'temperature': 0.7, 'max_tokens': 64, 'extra_body': {'min_p': 0.05}}
    """
    kwargs = {key: value for key, value in sampling_args.items() if key in AGENT_SAMPLING_KEYS}
    extra = {key: value for key, value in sampling_args.items() if key not in AGENT_SAMPLING_KEYS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


#: An OpenAI-compatible agent's longest reply by default, in tokens.
DEFAULT_MAX_TOKENS = 512

class OpenAIAgent(Agent):
    """A chat model behind an OpenAI-compatible endpoint.

    Args:
        model: Model name the server knows (e.g. ``"Qwen/Qwen2.5-7B-Instruct"``).
        base_url: Endpoint ending in ``/v1``; default ``$OPENAI_BASE_URL`` or OpenAI's.
        api_key_env: Environment variable holding the key. When it is unset: an error if it
            was named explicitly, else a placeholder key (enough for local servers).
        api_key: The key itself (takes precedence over ``api_key_env``).
        temperature: Sampling temperature.
        top_p: Nucleus sampling mass.
        max_tokens: Longest reply.
        timeout_s: Timeout of one HTTP request.
        max_retries: Retries of a failed request (429, 5xx, timeouts), with exponential backoff.
        max_concurrency: Requests in flight at most, across every worker of this agent.
        extra_body: Extra JSON fields for the request (server-specific options).
        name: Name shown in tables.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        top_p: float | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        max_concurrency: int = 16,
        extra_body: Mapping[str, Any] | None = None,
        name: str | None = None,
    ):
        if not model:
            raise ValueError("OpenAIAgent needs a model name, e.g. openai:gpt-4o-mini@https://api.openai.com/v1")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if api_key is None:
            variable = api_key_env or "OPENAI_API_KEY"
            api_key = os.environ.get(variable)
            if api_key is None and api_key_env is not None:
                raise ValueError(f"the environment variable {api_key_env!r} named for the API key of {self.base_url} is not set")
        self._api_key = api_key or PLACEHOLDER_KEY
        self.settings: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        if top_p is not None:
            self.settings["top_p"] = top_p
        self.extra_body = dict(extra_body or {})
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        self.name = name or f"{model}@{self.base_url}"
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._async_clients: dict[int, tuple[Any, asyncio.Semaphore]] = {}
        self._log: dict[str, Any] = _empty_log()
        self._tokens = TokenCount()

    @property
    def client(self) -> Any:
        """The shared synchronous ``openai.OpenAI`` client (created on first use)."""
        with self._client_lock:
            if self._client is None:
                from openai import OpenAI

                self._client = OpenAI(
                    base_url=self.base_url, api_key=self._api_key, timeout=self.timeout_s, max_retries=self.max_retries
                )
            return self._client

    def request(self, info: Mapping[str, Any]) -> dict[str, Any]:
        """The chat-completions request body for the env's current messages and tools."""
        body: dict[str, Any] = {"model": self.model, "messages": openai_messages(info.get("messages") or []), **self.settings}
        tools = list(info.get("tools") or [])
        if tools:
            body["messages"] = with_native_tools(body["messages"], str(info.get("tool_call_instruction") or ""))
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.extra_body:
            body["extra_body"] = self.extra_body
        return body

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode's log of raw messages and token usage."""
        self._log = _empty_log()

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """Ask the model for its next message; raises when the request fails after retries."""
        with self._slots:
            response = self.client.chat.completions.create(**self.request(info))
        return self._record(response)

    async def aact(self, observation: str, info: Mapping[str, Any]) -> str:
        """Async :meth:`act` with ``openai.AsyncOpenAI`` (one client per event loop)."""
        client, slots = self._async_client()
        async with slots:
            response = await client.chat.completions.create(**self.request(info))
        return self._record(response)

    def episode_log(self) -> dict[str, Any]:
        """This episode's assistant messages as the server sent them (``raw_messages``) and
        its token usage summed over its requests (``usage``: ``prompt_tokens``,
        ``completion_tokens``, ``total_tokens``, as the server reports them)."""
        return {"raw_messages": list(self._log["raw_messages"]), "usage": dict(self._log["usage"])}

    def tokens_generated(self) -> int:
        """Completion tokens the server reported so far, over every worker's requests."""
        return self._tokens.total

    def describe(self) -> dict[str, Any]:
        """Class, model, endpoint and sampling settings (never the key)."""
        return {**super().describe(), "model": self.model, "base_url": self.base_url, **self.settings, "max_retries": self.max_retries}

    def close(self) -> None:
        """Close the HTTP client."""
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _async_client(self) -> tuple[Any, asyncio.Semaphore]:
        from openai import AsyncOpenAI

        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._async_clients:
            client = AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, timeout=self.timeout_s, max_retries=self.max_retries)
            self._async_clients[loop_id] = (client, asyncio.Semaphore(self.max_concurrency))
        return self._async_clients[loop_id]


    def _record(self, response: Any) -> str:
        """The env action of ``response``, after logging its message and usage."""
        if not response.choices:
            raise ValueError(f"the chat-completions response has no choices: {json.dumps(response.model_dump())[:300]}")
        message = response.choices[0].message
        self._log["raw_messages"].append(message.model_dump(exclude_none=True))
        usage = response.usage.model_dump(exclude_none=True) if response.usage is not None else {}
        for key, count in usage.items():
            if isinstance(count, int):
                self._log["usage"][key] = self._log["usage"].get(key, 0) + count
        self._tokens.add(usage.get("completion_tokens") or 0)
        return action_from_message(message.content, message.tool_calls)


def _empty_log() -> dict[str, Any]:
    return {"raw_messages": [], "usage": {}}


__all__ = [
    "AGENT_SAMPLING_KEYS",
    "DEFAULT_MAX_TOKENS",
    "NATIVE_TOOL_INSTRUCTION",
    "OpenAIAgent",
    "action_from_message",
    "openai_messages",
    "sampling_kwargs",
    "with_native_tools",
]
