"""A tiny OpenAI-compatible chat-completions server for tests.

It speaks the real wire format (``POST /v1/chat/completions``, ``GET /v1/models``, JSON
bodies, ``choices[0].message`` with ``content`` or ``tool_calls``, ``usage``, and
server-sent events when the request asks for ``stream``), runs on ``127.0.0.1`` in a
background thread with the standard library only, and lets a test script its replies,
add a fixed latency and inject failures (HTTP 429 or 5xx for the first ``k`` calls).

>>> import json, urllib.request
>>> with OpenAIServer(["hello there"]) as server:
...     body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
...     request = urllib.request.Request(
...         server.url + "/chat/completions", data=body.encode(),
...         headers={"Content-Type": "application/json"})
...     reply = json.load(urllib.request.urlopen(request))
>>> reply["choices"][0]["message"]["content"]
'hello there'
>>> server.calls, server.requests[0]["messages"][0]["content"]
(1, 'hi')

Replies are given as a list consumed in order (then ``default_reply``), or as a function of
the request body, so concurrent clients get deterministic answers. A reply is a string
(assistant text), a :class:`ToolCall` or list of them, or a :class:`Reply`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OpenAIServer", "Reply", "ToolCall", "last_user_text"]


@dataclass(frozen=True)
class ToolCall:
    """A function call the assistant makes.

    Args:
        name: Function name.
        arguments: Arguments; serialised to a JSON string on the wire as OpenAI does.
        id: Call id; generated when empty.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True)
class Reply:
    """One scripted assistant turn, or one injected failure.

    Args:
        content: Assistant text (``None`` for a pure tool-call turn).
        tool_calls: Function calls the assistant makes.
        status: HTTP status; anything but 200 sends an OpenAI-style error body instead.
        finish_reason: ``stop`` or ``tool_calls`` by default, depending on the turn.
        latency_s: Extra delay for this reply, added to the server's latency.
    """

    content: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    status: int = 200
    finish_reason: str | None = None
    latency_s: float = 0.0


ReplyLike = "str | ToolCall | Sequence[ToolCall] | Reply"


def last_user_text(request: Mapping[str, Any]) -> str:
    """Text of the last user message of a chat-completions request body.

    Args:
        request: The decoded JSON body.

    Returns:
        The message text; list-of-parts contents are joined; ``""`` when there is none.
    """
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content") or ""
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content)
    return ""


def _as_reply(value: Any) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(content=value)
    if isinstance(value, ToolCall):
        return Reply(tool_calls=(value,))
    if isinstance(value, (list, tuple)) and all(isinstance(v, ToolCall) for v in value):
        return Reply(tool_calls=tuple(value))
    raise TypeError(
        f"scripted reply {value!r} is not a reply; use a str, a ToolCall, a list of ToolCall "
        "or a Reply"
    )


class OpenAIServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, in a thread.

    Args:
        replies: Scripted replies consumed in order, or a function of the request body
            returning a reply (called concurrently from handler threads).
        default_reply: Reply once a scripted list is used up.
        latency_s: Delay before every answer (failures included), to mimic a remote model.
        fail_first: The first ``fail_first`` calls answer ``fail_status`` instead.
        fail_status: HTTP status of injected failures (429 rate limit, 500, 503...).
        retry_after_s: ``Retry-After`` header sent with an injected 429, if given.
        model: Model id listed by ``/v1/models`` and echoed in replies.
        api_key: When set, requests must carry ``Authorization: Bearer <api_key>`` (else 401).

    Attributes:
        url: Base URL to give an OpenAI client, ending in ``/v1``.
        requests: Decoded bodies of every chat-completions request, in arrival order.
        calls: Number of chat-completions requests received (failures included).
        max_in_flight: Highest number of requests handled at the same time.
    """

    def __init__(
        self,
        replies: Sequence[Any] | Callable[[dict[str, Any]], Any] = (),
        *,
        default_reply: Any = "OK",
        latency_s: float = 0.0,
        fail_first: int = 0,
        fail_status: int = 429,
        retry_after_s: float | None = None,
        model: str = "test-model",
        api_key: str | None = None,
    ) -> None:
        self.latency_s = latency_s
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.retry_after_s = retry_after_s
        self.model = model
        self.api_key = api_key
        self.default_reply = default_reply
        self.requests: list[dict[str, Any]] = []
        self.calls = 0
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.script(replies)

    # -- configuration -------------------------------------------------------------------

    def script(self, replies: Sequence[Any] | Callable[[dict[str, Any]], Any]) -> None:
        """Replace the scripted replies (a list consumed in order, or a function)."""
        with self._lock:
            if callable(replies):
                self._reply_fn: Callable[[dict[str, Any]], Any] | None = replies
                self._queue: Iterable[Any] = iter(())
            else:
                self._reply_fn = None
                self._queue = iter(list(replies))

    def reset_counts(self) -> None:
        """Forget recorded requests and counters (failure injection counts from here again)."""
        with self._lock:
            self.requests.clear()
            self.calls = 0
            self.max_in_flight = 0

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321/v1``."""
        if self._httpd is None:
            raise RuntimeError(
                "OpenAIServer is not running; call start() or use it in a with block"
            )
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OpenAIServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        handler = type("_Handler", (_Handler,), {"app": self})
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.request_queue_size = 128
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},  # shutdown() waits up to one poll interval
            name="openai-test-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- request handling ----------------------------------------------------------------

    def _next(self, body: dict[str, Any]) -> tuple[int, Reply]:
        with self._lock:
            self.calls += 1
            call_index = self.calls
            self.requests.append(body)
            if call_index <= self.fail_first:
                return call_index, Reply(status=self.fail_status)
            reply_fn = self._reply_fn
            scripted = None if reply_fn else next(self._queue, None)
        if reply_fn is not None:
            return call_index, _as_reply(reply_fn(body))
        return call_index, _as_reply(self.default_reply if scripted is None else scripted)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _completion_body(app: OpenAIServer, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            _tool_call_json(call, i) for i, call in enumerate(reply.tool_calls)
        ]
    prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    completion_tokens = len((reply.content or "").split())
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or app.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason
                or ("tool_calls" if reply.tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _tool_call_json(call: ToolCall, index: int) -> dict[str, Any]:
    return {
        "id": call.id or f"call_{uuid.uuid4().hex[:16]}",
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
    }


def _stream_chunks(completion: dict[str, Any]) -> Iterable[dict[str, Any]]:
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": ""})
    content = message.get("content") or ""
    words = content.split(" ")
    for i, word in enumerate(words):
        if content:
            yield chunk({"content": word if i == 0 else " " + word})
    for i, call in enumerate(message.get("tool_calls", [])):
        yield chunk({"tool_calls": [{"index": i} | call]})
    yield chunk({}, choice["finish_reason"])
    yield base | {"choices": [], "usage": completion["usage"]}


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore clients that hung up (a timed-out test client); report anything else."""
        import sys

        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    app: OpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Keep test output quiet."""

    def _send_json(
        self, status: int, payload: Mapping[str, Any], headers: Mapping[str, str] = {}
    ) -> None:  # noqa: B006
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str, headers: Mapping[str, str] = {}) -> None:  # noqa: B006
        self._send_json(
            status,
            {"error": {"message": message, "type": kind, "param": None, "code": None}},
            headers,
        )

    def _authorised(self) -> bool:
        if self.app.api_key is None:
            return True
        if self.headers.get("Authorization") == f"Bearer {self.app.api_key}":
            return True
        self._error(401, "Incorrect API key provided.", "invalid_request_error")
        return False

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        """List the one model."""
        if not self._authorised():
            return
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": self.app.model, "object": "model", "created": 0, "owned_by": "test"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._error(404, f"no route GET {self.path}", "invalid_request_error")

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        """Answer a chat completion."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(
                404,
                f"no route POST {self.path}; this server has /v1/chat/completions",
                "invalid_request_error",
            )
            return
        if not self._authorised():
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as error:
            self._error(400, f"request body is not JSON: {error}", "invalid_request_error")
            return
        if not isinstance(body.get("messages"), list):
            self._error(400, "'messages' must be a list of chat messages", "invalid_request_error")
            return
        app = self.app
        app._enter()
        try:
            _, reply = app._next(body)
            delay_s = app.latency_s + reply.latency_s
            if delay_s > 0:
                time.sleep(delay_s)
            if reply.status != 200:
                headers = {}
                if reply.status == 429 and app.retry_after_s is not None:
                    headers["Retry-After"] = str(app.retry_after_s)
                kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
                self._error(reply.status, f"injected failure {reply.status}", kind, headers)
                return
            completion = _completion_body(app, body, reply)
            if body.get("stream"):
                self._send_stream(completion)
            else:
                self._send_json(200, completion)
        finally:
            app._leave()

    def _send_stream(self, completion: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        events = itertools.chain(
            (f"data: {json.dumps(chunk)}\n\n" for chunk in _stream_chunks(completion)),
            ["data: [DONE]\n\n"],
        )
        for event in events:
            self.wfile.write(event.encode())
        self.wfile.flush()
        self.close_connection = True
