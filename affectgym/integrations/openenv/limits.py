"""Bounds on the served env's HTTP requests: body size, and envs built by the stateless forms at a time.

WebSocket frames are bounded by the server (16 MiB), HTTP bodies by nothing, and each
``POST /reset`` or ``POST /step`` of OpenEnv's stateless HTTP forms builds a whole env,
outside the WebSocket sessions' ``max_sessions``. :class:`RequestLimits`, a pure ASGI
middleware, answers:

* a body over ``max_body_bytes`` (by its ``Content-Length``, or counted as it arrives when
  chunked) with ``413`` and a JSON ``detail`` naming the limit; the body is never handed on;
* a stateless ``POST /reset`` or ``POST /step`` while ``max_http_envs`` are in flight with
  ``503`` and ``Retry-After: 1``: try again shortly, as a capacity refusal on a WebSocket.
"""

from __future__ import annotations

import json
from typing import Any

#: Largest HTTP request body accepted (an action is at most ~32 K characters).
MAX_HTTP_BODY_BYTES = 1 << 20
#: Seconds a connection has to send a request's headers, from its opening or its previous
#: response (:mod:`affectgym.integrations.openenv.protocols`); later, it is closed.
HEADER_TIMEOUT_S = 10.0
#: The stateless HTTP forms that build an env per request.
ENV_BUILDING_PATHS = ("/reset", "/step")


class RequestLimits:
    """ASGI middleware bounding HTTP bodies and the envs the stateless HTTP forms build at a time.

    Args:
        app: The ASGI app.
        max_body_bytes: Largest request body.
        max_http_envs: Stateless ``/reset``/``/step`` requests served at a time.
    """

    def __init__(self, app: Any, max_body_bytes: int = MAX_HTTP_BODY_BYTES, max_http_envs: int = 64):
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_http_envs = max_http_envs
        self.http_envs = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _refuse(send, 413, f"request body of {int(declared)} bytes; at most {self.max_body_bytes} accepted")
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body_bytes:
                await _refuse(send, 413, f"request body over {self.max_body_bytes} bytes; at most {self.max_body_bytes} accepted")
                return
        builds_env = scope.get("method") == "POST" and scope.get("path") in ENV_BUILDING_PATHS
        if builds_env and self.http_envs >= self.max_http_envs:
            await _refuse(send, 503, f"{self.max_http_envs} stateless {'/'.join(ENV_BUILDING_PATHS)} requests are "
                                     "being served; try again shortly, or play over the WebSocket /ws",
                          retry_after_s=1)
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        held = 1 if builds_env else 0
        self.http_envs += held
        try:
            await self.app(scope, replay, send)
        finally:
            self.http_envs -= held


async def _refuse(send: Any, status: int, detail: str, retry_after_s: int | None = None) -> None:
    payload = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if retry_after_s is not None:
        headers.append((b"retry-after", str(retry_after_s).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


__all__ = ["ENV_BUILDING_PATHS", "HEADER_TIMEOUT_S", "MAX_HTTP_BODY_BYTES", "RequestLimits"]
