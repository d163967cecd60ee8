"""Bounds on the requests the local model server answers (:mod:`affectgym.agents.serve_local`).

``transformers serve`` reads every prompt whole, generates up to 1024 tokens when a request
names no ``max_tokens`` (and any number when it names one), and queues every request on its
one generation thread; it also lets any client unload the model (``POST /reset``) or load
another (``POST /load_model``). One client could hold it for minutes: a 100 KB prompt took
233 s on one core here, and every other request waited behind it. :class:`ModelRequestLimits`,
a pure ASGI middleware in front of it, answers:

* a method or path other than ``GET /health``, ``GET /v1/models`` and
  ``POST /v1/chat/completions`` with ``404``, naming those three;
* a body over ``max_body_bytes`` with ``413``, a body that is not a JSON object or has no
  list of ``messages`` with ``400``;
* ``max_tokens`` (or ``max_completion_tokens``) that is not a whole number from 1 to
  ``max_reply_tokens`` with ``400``; a request naming neither gets ``max_reply_tokens``;
* a chat while ``max_pending`` are being answered or wait with ``429`` and ``Retry-After: 1``
  (OpenAI clients, affectgym's included, back off and retry);
* a chat whose prompt, as the model's chat template renders it with its tools, is over
  ``max_prompt_tokens`` tokens, or that the template cannot render, with ``400``.

A client that stops reading a reply is cut off after ``unread_timeout_s`` (the protocol's
:class:`~affectgym.serving.protocols.UnreadClock`). Each refusal is JSON with a ``detail`` naming what was wrong and what is accepted. So a
request costs at most one prompt of ``max_prompt_tokens`` and a reply of
``max_reply_tokens``, and a request waits behind at most ``max_pending - 1`` others.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from affectgym.serving.asgi import HEADER_TIMEOUT_S, BodyTooLarge, read_body, refuse, replay

#: The endpoints served: the health probe, the model list, and chat completions.
SERVED_ENDPOINTS = (("GET", "/health"), ("GET", "/v1/models"), ("POST", "/v1/chat/completions"))
#: The request fields that bound a reply's length (OpenAI's old and new names).
REPLY_LENGTH_FIELDS = ("max_tokens", "max_completion_tokens")


@dataclass(frozen=True)
class ServeLimits:
    """What one request to the local model server may cost, and how many may wait.

    Attributes:
        max_prompt_tokens: Longest prompt, in tokens of the model's chat template with tools.
        max_reply_tokens: Longest reply a request may ask for, and the length of one that names none.
        max_pending: Chat requests answered or waiting at once; one more is answered ``429``.
        max_body_bytes: Largest request body.
        max_connections: Open connections (uvicorn's ``limit_concurrency``); those still
            sending their headers may hold half of them.
        header_timeout_s: Seconds a connection has to send a request's headers.
        unread_timeout_s: Seconds a reply may wait for a client that takes nothing of it;
            then the connection is aborted, and the request's slot freed.
    """

    max_prompt_tokens: int = 4096
    max_reply_tokens: int = 512
    max_pending: int = 8
    max_body_bytes: int = 1 << 20
    max_connections: int = 64
    header_timeout_s: float = HEADER_TIMEOUT_S
    unread_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        for name in ("max_prompt_tokens", "max_reply_tokens", "max_pending", "max_body_bytes", "max_connections"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
        for name in ("header_timeout_s", "unread_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number of seconds above 0, got {value!r}")


class ModelRequestLimits:
    """ASGI middleware bounding the local model server's requests (see the module docstring).

    Args:
        app: The model server's ASGI app.
        prompt_tokens: Tokens of a chat request's prompt (its ``messages`` and ``tools``);
            raises when the chat template cannot render them. Called in a worker thread.
        limits: The bounds.
    """

    def __init__(self, app: Any, prompt_tokens: Callable[[dict[str, Any]], int], limits: ServeLimits):
        self.app = app
        self.prompt_tokens = prompt_tokens
        self.limits = limits
        self.pending = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        endpoint = (scope["method"], scope["path"])
        if endpoint not in SERVED_ENDPOINTS:
            served = ", ".join(" ".join(pair) for pair in SERVED_ENDPOINTS)
            await refuse(send, 404, f"{' '.join(endpoint)} is not served; this server answers {served}")
            return
        if scope["method"] == "GET":
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(scope, receive, self.limits.max_body_bytes)
        except BodyTooLarge as refused:
            await refuse(send, 413, str(refused))
            return
        if body is None:  # the client left
            return
        request, problem = self._bounded_request(body)
        if problem:
            await refuse(send, 400, problem)
            return
        if self.pending >= self.limits.max_pending:
            await refuse(send, 429, f"{self.limits.max_pending} chat requests are being answered or wait; try again shortly",
                         retry_after_s=1)
            return
        self.pending += 1
        try:
            problem = await self._prompt_problem(request)
            if problem:
                await refuse(send, 400, problem)
                return
            forwarded = json.dumps(request).encode()
            headers = [(name, value) for name, value in scope.get("headers") or () if name != b"content-length"]
            headers.append((b"content-length", str(len(forwarded)).encode()))
            await self.app({**scope, "headers": headers}, replay(forwarded, receive), send)
        finally:
            self.pending -= 1

    def _bounded_request(self, body: bytes) -> tuple[dict[str, Any], str | None]:
        """The request with its reply length bounded, or the reason it is refused."""
        try:
            request = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            return {}, f"the request body is not JSON ({error}); send a chat completion request as a JSON object"
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list) or not request["messages"]:
            return {}, "a chat completion request is a JSON object with a non-empty list of 'messages'"
        named = {field: request[field] for field in REPLY_LENGTH_FIELDS if request.get(field) is not None}
        for field, value in named.items():
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= self.limits.max_reply_tokens:
                return {}, f"{field} must be a whole number from 1 to {self.limits.max_reply_tokens}, got {value!r}"
        if not named:
            request["max_tokens"] = self.limits.max_reply_tokens
        return request, None

    async def _prompt_problem(self, request: dict[str, Any]) -> str | None:
        """Why the request's prompt is refused (too long, or unreadable by the chat template), or ``None``."""
        try:
            tokens = await asyncio.to_thread(self.prompt_tokens, request)
        except Exception as error:  # the template's own error names the malformed message
            return f"the chat template cannot render these messages and tools ({type(error).__name__}: {error})"
        if tokens > self.limits.max_prompt_tokens:
            return (f"the prompt is {tokens} tokens (messages and tools, as the chat template renders them); "
                    f"at most {self.limits.max_prompt_tokens} accepted")
        return None


__all__ = ["REPLY_LENGTH_FIELDS", "SERVED_ENDPOINTS", "ModelRequestLimits", "ServeLimits"]
