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

from typing import Any

from affectgym.serving.asgi import BodyTooLarge, read_body, refuse, replay

#: Largest HTTP request body accepted (an action is at most ~32 K characters).
MAX_HTTP_BODY_BYTES = 1 << 20
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
        try:
            body = await read_body(scope, receive, self.max_body_bytes)
        except BodyTooLarge as refused:
            await refuse(send, 413, str(refused))
            return
        if body is None:  # the client left
            return
        builds_env = scope.get("method") == "POST" and scope.get("path") in ENV_BUILDING_PATHS
        if builds_env and self.http_envs >= self.max_http_envs:
            await refuse(send, 503, f"{self.max_http_envs} stateless {'/'.join(ENV_BUILDING_PATHS)} requests are "
                                    "being served; try again shortly, or play over the WebSocket /ws",
                         retry_after_s=1)
            return
        held = 1 if builds_env else 0
        self.http_envs += held
        try:
            await self.app(scope, replay(body, receive), send)
        finally:
            self.http_envs -= held


__all__ = ["ENV_BUILDING_PATHS", "MAX_HTTP_BODY_BYTES", "RequestLimits"]
