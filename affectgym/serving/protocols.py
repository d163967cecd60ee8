"""uvicorn's connection protocols with the clocks affectgym's servers need, which uvicorn lacks.

uvicorn times out neither a request whose headers never end (its keep-alive timer runs only
between requests) nor a client that stops reading (a send waits for the write buffer to
drain, and the session's idle clock, :mod:`~affectgym.integrations.openenv.sockets`, runs only
while the server waits to receive). Either holds its connection, and a session or a request's
slot, for as long as the client likes. :func:`protocol_options` gives ``uvicorn.run`` (its
``http`` and ``ws`` arguments, which take protocol classes) the two protocols that end them,
both with :class:`UnreadClock`, which aborts a connection whose write buffer has stayed full
(the client takes nothing) for ``unread_timeout_s`` seconds:

* :class:`HeaderTimeoutH11Protocol`, uvicorn's h11 protocol that closes a connection whose
  request headers have not all arrived ``header_timeout_s`` seconds after it opened (or after
  the previous response on it), so half-open requests cannot hold the server's connection
  slots (``--max-connections``) or file descriptors for long; and that lets such waiting
  connections hold at most half of the slots at any moment (a newer one closes the oldest),
  so that a flood of them from one client leaves room for every other request, the health
  probe's included, before any clock runs out; and that aborts a response the client leaves unread;
* :class:`UnreadTimeoutWebSocketProtocol`, uvicorn's WebSocket protocol that aborts a
  connection whose client leaves its messages unread; its handler then sees the client
  leave and frees the session.

This module imports uvicorn: import it only to serve.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

from affectgym.serving.asgi import HEADER_TIMEOUT_S


class UnreadClock:
    """Mixin for a uvicorn protocol: abort the connection once its write buffer stays full too long.

    asyncio pauses writing when the transport's buffer is full (the client takes nothing);
    after ``unread_timeout_s`` seconds paused (``None``: never), the connection is aborted and
    the app sees the client leave.
    """

    unread_timeout_s: float | None = None
    unread_timer: asyncio.TimerHandle | None = None

    def pause_writing(self) -> None:
        """The write buffer is full: start the clock (once)."""
        super().pause_writing()  # type: ignore[misc]
        if self.unread_timeout_s is not None and self.unread_timer is None:
            self.unread_timer = asyncio.get_running_loop().call_later(self.unread_timeout_s, self.transport.abort)  # type: ignore[attr-defined]

    def resume_writing(self) -> None:
        """The client read again: stop the clock."""
        self._stop_unread_clock()
        super().resume_writing()  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection ended: the clock has nothing left to abort."""
        self._stop_unread_clock()
        super().connection_lost(exc)  # type: ignore[misc]

    def _stop_unread_clock(self) -> None:
        if self.unread_timer is not None:
            self.unread_timer.cancel()
            self.unread_timer = None


class HeaderTimeoutH11Protocol(UnreadClock, H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers are late (see the module docstring).

    Args:
        header_timeout_s: Seconds a connection has to send a request's headers, counted from
            its opening and again from each response it gets.
        max_waiting: Connections of the server that may wait for a request's headers at once
            (``None``: no limit); when one more starts waiting, the one waiting longest is closed.
        unread_timeout_s: Seconds a response may wait for a client that takes nothing before
            the connection is aborted (``None``: for ever).
        **kwargs: uvicorn's arguments of ``H11Protocol``.
    """

    def __init__(self, *args: Any, header_timeout_s: float = HEADER_TIMEOUT_S, max_waiting: int | None = None,
                 unread_timeout_s: float | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self.unread_timeout_s = unread_timeout_s
        self.max_waiting = max_waiting
        self.header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_header_clock()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # a request's headers are in (or it became a WebSocket)
            self._stop_header_clock()

    def on_response_complete(self) -> None:
        """After a response, a kept-alive connection has ``header_timeout_s`` for its next request's headers."""
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():  # waiting for the next request
            self._start_header_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_clock()
        super().connection_lost(exc)

    def _start_header_clock(self) -> None:
        self._stop_header_clock()
        self.header_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)
        waiting = _waiting(self.server_state)
        waiting[self] = None
        while self.max_waiting is not None and len(waiting) > self.max_waiting:
            next(iter(waiting))._headers_late()  # the one waiting longest, which leaves ``waiting``

    def _stop_header_clock(self) -> None:
        _waiting(self.server_state).pop(self, None)
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_late(self) -> None:
        self._stop_header_clock()
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


class UnreadTimeoutWebSocketProtocol(UnreadClock, AutoWebSocketsProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's WebSocket protocol, aborting a connection whose client stops reading (see the module docstring).

    Args:
        unread_timeout_s: Seconds the write buffer may stay full (the transport paused
            writing) before the connection is aborted; ``None`` waits for ever.
        **kwargs: uvicorn's arguments of its WebSocket protocol.
    """

    def __init__(self, *args: Any, unread_timeout_s: float | None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.unread_timeout_s = unread_timeout_s


def _waiting(server_state: Any) -> dict[HeaderTimeoutH11Protocol, None]:
    """The server's connections waiting for a request's headers, the one waiting longest first."""
    if not hasattr(server_state, "affectgym_waiting_for_headers"):
        server_state.affectgym_waiting_for_headers = {}
    return server_state.affectgym_waiting_for_headers


def protocol_options(header_timeout_s: float, unread_timeout_s: float | None, max_connections: int | None = None) -> dict[str, Any]:
    """``uvicorn.run``'s ``http`` and ``ws`` arguments: the two protocols above with these timeouts.

    Args:
        header_timeout_s: Seconds a connection has to send a request's headers.
        unread_timeout_s: Seconds a client may leave the server's messages (WebSocket) or
            response (HTTP) unread (``None``: for ever).
        max_connections: uvicorn's ``limit_concurrency``; connections waiting for headers may
            hold half of it (at least one), the rest is kept for requests that arrive whole.
    """
    max_waiting = None if max_connections is None else max(1, max_connections // 2)
    return {
        "http": functools.partial(HeaderTimeoutH11Protocol, header_timeout_s=header_timeout_s, max_waiting=max_waiting,
                                  unread_timeout_s=unread_timeout_s),
        "ws": functools.partial(UnreadTimeoutWebSocketProtocol, unread_timeout_s=unread_timeout_s),
    }


__all__ = ["HeaderTimeoutH11Protocol", "UnreadClock", "UnreadTimeoutWebSocketProtocol", "protocol_options"]
