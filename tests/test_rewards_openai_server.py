"""Specification of the local OpenAI-compatible test server (tests/openai_server.py)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply, ToolCall, last_user_text


def _post(
    server: OpenAIServer, body: dict[str, Any], key: str | None = None
) -> urllib.request.Request:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return urllib.request.Request(
        server.url + "/chat/completions", data=json.dumps(body).encode(), headers=headers
    )


def _chat(server: OpenAIServer, text: str = "hi", **extra: Any) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], **extra}
    with urllib.request.urlopen(_post(server, body)) as response:
        return json.load(response)


def test_tool_calls_use_the_openai_wire_format() -> None:
    call = ToolCall("get_prosody", {"clip_id": "c1", "window_s": 2.5})
    with OpenAIServer([call]) as server:
        reply = _chat(server)
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (wire,) = choice["message"]["tool_calls"]
    assert wire["type"] == "function" and wire["id"].startswith("call_")
    assert wire["function"]["name"] == "get_prosody"
    assert json.loads(wire["function"]["arguments"]) == {"clip_id": "c1", "window_s": 2.5}
    assert reply["object"] == "chat.completion" and set(reply["usage"]) == {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
    }


def test_scripted_replies_run_in_order_then_the_default() -> None:
    with OpenAIServer(["one", "two"], default_reply="done") as server:
        texts = [_chat(server)["choices"][0]["message"]["content"] for _ in range(3)]
    assert texts == ["one", "two", "done"]


def test_a_reply_function_sees_the_request() -> None:
    with OpenAIServer(lambda body: last_user_text(body).upper()) as server:
        assert _chat(server, "shout")["choices"][0]["message"]["content"] == "SHOUT"


def test_the_first_calls_fail_with_the_injected_status_and_retry_after() -> None:
    with OpenAIServer(["ok"], fail_first=2, fail_status=429, retry_after_s=1.5) as server:
        for _ in range(2):
            with pytest.raises(urllib.error.HTTPError) as failure:
                _chat(server)
            assert failure.value.code == 429 and failure.value.headers["Retry-After"] == "1.5"
            assert json.load(failure.value)["error"]["type"] == "rate_limit_exceeded"
        assert _chat(server)["choices"][0]["message"]["content"] == "ok"
        assert server.calls == 3


def test_a_scripted_reply_can_be_a_server_error() -> None:
    with OpenAIServer([Reply(status=503), "ok"]) as server:
        with pytest.raises(urllib.error.HTTPError) as failure:
            _chat(server)
        assert failure.value.code == 503
        assert _chat(server)["choices"][0]["message"]["content"] == "ok"


def test_streaming_sends_server_sent_events_ending_in_done() -> None:
    with OpenAIServer(["hello brave world"]) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
        with urllib.request.urlopen(_post(server, body)) as response:
            events = [
                line[6:]
                for line in response.read().decode().splitlines()
                if line.startswith("data: ")
            ]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "hello brave world"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


def test_requests_are_served_concurrently_with_latency() -> None:
    with OpenAIServer(lambda body: "ok", latency_s=0.2) as server:
        threads = [threading.Thread(target=_chat, args=(server,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert server.calls == 4 and server.max_in_flight >= 2


def test_an_api_key_can_be_required() -> None:
    with OpenAIServer(["ok"], api_key="k") as server:
        with pytest.raises(urllib.error.HTTPError) as failure:
            urllib.request.urlopen(_post(server, {"model": "m", "messages": []}))
        assert failure.value.code == 401
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        with urllib.request.urlopen(_post(server, body, key="k")) as response:
            assert json.load(response)["choices"][0]["message"]["content"] == "ok"


def test_models_are_listed_and_bad_requests_explained() -> None:
    with OpenAIServer(model="judge") as server:
        with urllib.request.urlopen(server.url + "/models") as response:
            assert [m["id"] for m in json.load(response)["data"]] == ["judge"]
        with pytest.raises(urllib.error.HTTPError) as failure:
            urllib.request.urlopen(_post(server, {"model": "m"}))
        assert (
            failure.value.code == 400 and "messages" in json.load(failure.value)["error"]["message"]
        )
