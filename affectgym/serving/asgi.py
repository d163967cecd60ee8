"""ASGI pieces shared by affectgym's two servers (``affectgym serve`` and the local model server).

* :func:`read_body` reads a request's whole body, refusing one over a size limit by its
  ``Content-Length`` before reading it, or as it arrives when chunked;
* :func:`replay` hands a body already read on to the app behind a middleware;
* :func:`refuse` answers with a status and a JSON ``detail`` (and ``Retry-After`` where the
  refusal is a matter of capacity).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

Receive = Callable[[], Awaitable[dict[str, Any]]]
#: Seconds a connection has to send a request's headers, from its opening or its previous
#: response (:mod:`affectgym.serving.protocols`); later, it is closed.
HEADER_TIMEOUT_S = 10.0


class BodyTooLarge(Exception):
    """A request body over the limit; the message names its size (when declared) and the limit."""


async def read_body(scope: dict[str, Any], receive: Receive, max_bytes: int) -> bytes | None:
    """The whole body of an HTTP request, or ``None`` when the client left before sending it.

    Raises:
        BodyTooLarge: The body (declared or counted) is over ``max_bytes``.
    """
    declared = dict(scope.get("headers") or ()).get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLarge(f"request body of {int(declared)} bytes; at most {max_bytes} accepted")
    body, more = b"", True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if len(body) > max_bytes:
            raise BodyTooLarge(f"request body over {max_bytes} bytes; at most {max_bytes} accepted")
    return body


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` whole first, then whatever the connection sends (its disconnect)."""
    replayed = False

    async def replayed_receive() -> dict[str, Any]:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed_receive


async def refuse(send: Any, status: int, detail: str, retry_after_s: int | None = None) -> None:
    """Answer ``status`` with ``{"detail": detail}``; ``retry_after_s`` adds a ``Retry-After`` header."""
    payload = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if retry_after_s is not None:
        headers.append((b"retry-after", str(retry_after_s).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


__all__ = ["HEADER_TIMEOUT_S", "BodyTooLarge", "read_body", "refuse", "replay"]
