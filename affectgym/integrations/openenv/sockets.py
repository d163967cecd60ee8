"""How a session's WebSocket ends: an ASGI middleware around OpenEnv's ``/ws``.

:class:`SessionSockets` adds to OpenEnv 0.10's WebSocket handler:

* an idle timeout: OpenEnv's reaper acts on the ``session_timeout`` of its ``ConcurrencyConfig``
  only for sessions no WebSocket holds, and a socket's session holds one of the
  ``max_sessions`` slots until the socket closes. After ``idle_timeout_s`` seconds without a message from the client, the
  socket is closed with code :data:`IDLE_CLOSE_CODE` and a reason that says why, and the
  handler is told the client left, so it frees the session (and closes its env) as on any
  disconnect. The clock runs only while the server waits for the client, never during a step;
  under ``affectgym serve``, a client that stops reading (the server blocked sending to it)
  is dropped after as long by its connection's protocol
  (:class:`~affectgym.serving.protocols.UnreadTimeoutWebSocketProtocol`);
* a refusal the client can read: OpenEnv answers a connection over ``max_sessions`` with
  an error frame and closes at once, often before the client has read the frame; the
  close then carries the frame's message, with code :data:`FULL_CLOSE_CODE` (try again later);
* a quiet disconnect: once the client is gone (it closed, dropped mid-episode, or the
  server closed it), what the handler still sends has no socket to go to and is dropped,
  where uvicorn would raise and log a traceback for every client that left.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

#: WebSocket close code of a session closed for idling (4000-4999 are the application's).
IDLE_CLOSE_CODE = 4408
#: WebSocket close code of a connection refused because every session slot is taken (RFC 6455: try again later).
FULL_CLOSE_CODE = 1013
#: Longest close reason, in UTF-8 bytes (RFC 6455 leaves 123 of a control frame's 125).
MAX_REASON_BYTES = 123

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def close_reason(text: str) -> str:
    """``text`` cut to fit a close frame (:data:`MAX_REASON_BYTES`), on a character boundary.

    >>> close_reason("é" * 100) == "é" * 61
    True
    """
    return text.encode("utf-8")[:MAX_REASON_BYTES].decode("utf-8", errors="ignore")


def _refusal(message: Message) -> str | None:
    """The message of OpenEnv's ``CAPACITY_REACHED`` error frame, or ``None`` for any other frame."""
    text = message.get("text")
    if message.get("type") != "websocket.send" or not isinstance(text, str) or "CAPACITY_REACHED" not in text:
        return None
    try:
        data = json.loads(text).get("data") or {}
    except (json.JSONDecodeError, AttributeError):
        return None
    return str(data.get("message")) if data.get("code") == "CAPACITY_REACHED" else None


class SessionSockets:
    """ASGI middleware for the session sockets (see the module docstring).

    Args:
        app: The ASGI app (OpenEnv's FastAPI app).
        idle_timeout_s: Longest wait for a client's next message, in seconds; ``None`` never closes.
    """

    def __init__(self, app: Callable[[Message, Receive, Send], Awaitable[None]], idle_timeout_s: float | None):
        if idle_timeout_s is not None and not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be a positive number of seconds or None, got {idle_timeout_s!r}")
        self.app = app
        self.idle_timeout_s = idle_timeout_s

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        timeout_s = self.idle_timeout_s
        gone = False
        refusal: str | None = None

        async def receive_until_gone() -> Message:
            nonlocal gone
            if gone:
                return {"type": "websocket.disconnect", "code": 1000}
            try:
                message = await asyncio.wait_for(receive(), timeout_s)
            except asyncio.TimeoutError:
                gone = True
                reason = f"idle for more than {timeout_s:g} s: the session was closed; connect again for a new one"
                await send({"type": "websocket.close", "code": IDLE_CLOSE_CODE, "reason": close_reason(reason)})
                return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}
            gone = message["type"] == "websocket.disconnect"
            return message

        async def send_until_gone(message: Message) -> None:
            nonlocal gone, refusal
            if gone:
                return
            refusal = refusal or _refusal(message)
            if message["type"] == "websocket.close" and refusal is not None:
                message = {**message, "code": FULL_CLOSE_CODE, "reason": close_reason(refusal)}
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected: the client left while a step ran
                gone = True

        await self.app(scope, receive_until_gone, send_until_gone)


__all__ = ["FULL_CLOSE_CODE", "IDLE_CLOSE_CODE", "SessionSockets", "close_reason"]
