"""The local model server (``python -m affectgym.agents.serve_local``) under hostile requests.

A real server on 127.0.0.1 serves a tiny model built from a config (so it starts in seconds),
with its limits set small; every attack is a real request over a socket. Without the
limits, a 100 KB prompt held the server 233 s on one core while every other request waited,
eight streams asking 2000 tokens each held it past two minutes, and ``POST /reset`` from any
client unloaded the model.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from served_env import free_port, wait_until_healthy
from tiny_models import tiny_causal_lm

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

MAX_PROMPT_TOKENS = 300
MAX_REPLY_TOKENS = 12
MAX_PENDING = 2
START_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The base URL (no ``/v1``) of a served tiny model with small limits."""
    folder = tiny_causal_lm(tmp_path_factory.mktemp("model"), name="tiny-served")
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    limits = ["--max-prompt-tokens", str(MAX_PROMPT_TOKENS), "--max-reply-tokens", str(MAX_REPLY_TOKENS),
              "--max-pending", str(MAX_PENDING), "--max-body-bytes", "65536", "--unread-timeout-s", "2"]
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "affectgym.agents.serve_local", str(folder), "--port", str(port), *limits],
                                   stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, timeout_s=START_TIMEOUT_S, process=process, log=log)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def chat(url: str, content: str = "Hello, how are you today?", **fields) -> httpx.Response:
    body = {"model": "tiny-served", "messages": [{"role": "user", "content": content}], **fields}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=120)


def test_a_prompt_over_the_limit_is_refused_at_once_naming_its_tokens_and_the_limit(server):
    started = time.monotonic()
    refused = chat(server, "The train left without me again. " * 200)  # 6.6 KB, under the byte limit
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert f"at most {MAX_PROMPT_TOKENS} accepted" in detail and "the prompt is" in detail
    assert time.monotonic() - started < 30  # counted, never generated from
    assert chat(server, max_tokens=4).status_code == 200


def test_a_body_over_the_byte_limit_is_refused_before_it_is_read(server):
    refused = httpx.post(server + "/v1/chat/completions", content=b"x" * 70000, timeout=60)
    assert refused.status_code == 413 and "at most 65536 accepted" in refused.json()["detail"]


@pytest.mark.parametrize("max_tokens", [MAX_REPLY_TOKENS + 1, 0, -3, 2.5, "12", True])
def test_a_reply_length_outside_the_limit_is_refused_naming_the_accepted_range(server, max_tokens):
    refused = chat(server, max_tokens=max_tokens)
    assert refused.status_code == 400
    assert f"max_tokens must be a whole number from 1 to {MAX_REPLY_TOKENS}" in refused.json()["detail"]


def test_a_request_naming_no_reply_length_gets_the_servers_longest(server):
    answered = chat(server)
    assert answered.status_code == 200
    assert 1 <= answered.json()["usage"]["completion_tokens"] <= MAX_REPLY_TOKENS


@pytest.mark.parametrize(("body", "message"), [
    (b"{not json", "is not JSON"),
    (b"[1, 2]", "non-empty list of 'messages'"),
    (b'{"messages": []}', "non-empty list of 'messages'"),
    (b'{"messages": [{"rol": "user"}]}', "chat template cannot render"),
    (b'{"messages": ["hello"]}', "chat template cannot render"),
])
def test_a_malformed_chat_request_is_refused_naming_what_is_wrong(server, body, message):
    refused = httpx.post(server + "/v1/chat/completions", content=body, timeout=60)
    assert refused.status_code == 400 and message in refused.json()["detail"]


@pytest.mark.parametrize(("method", "path"), [("POST", "/reset"), ("POST", "/load_model"), ("POST", "/v1/completions"),
                                              ("POST", "/v1/responses"), ("GET", "/docs")])
def test_endpoints_that_load_unload_or_bypass_the_limits_are_not_served(server, method, path):
    refused = httpx.request(method, server + path, json={"model": "other"}, timeout=60)
    assert refused.status_code == 404 and "POST /v1/chat/completions" in refused.json()["detail"]
    models = httpx.get(server + "/v1/models", timeout=60).json()["data"]
    assert [model["status"]["value"] for model in models] == ["loaded"]


def test_a_flood_of_chats_beyond_max_pending_is_refused_with_retry_after_and_health_answers_throughout(server):
    with ThreadPoolExecutor(12) as pool:
        flood = [pool.submit(chat, server, f"Hello {index}", max_tokens=MAX_REPLY_TOKENS) for index in range(12)]
        health = httpx.get(server + "/health", timeout=10)
        answers = [future.result() for future in flood]
    assert health.status_code == 200
    codes = sorted(answer.status_code for answer in answers)
    assert set(codes) == {200, 429} and codes.count(200) >= MAX_PENDING
    assert all(answer.headers["retry-after"] == "1" for answer in answers if answer.status_code == 429)
    assert chat(server, max_tokens=4).status_code == 200  # every slot was freed


def test_streams_that_are_never_read_free_their_slots_and_the_server_answers_the_next_client(server):
    port = int(server.rsplit(":", 1)[1])
    body = json.dumps({"model": "tiny-served", "messages": [{"role": "user", "content": "Count."}], "stream": True}).encode()
    hogs = []
    for _ in range(MAX_PENDING):
        hog = socket.create_connection(("127.0.0.1", port))
        hog.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n" % len(body) + body)
        hogs.append(hog)
    try:
        deadline = time.monotonic() + 60
        while (answer := chat(server, max_tokens=4)).status_code == 429 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert answer.status_code == 200
    finally:
        for hog in hogs:
            hog.close()


def test_a_response_the_client_never_reads_is_aborted_after_the_unread_timeout():
    import uvicorn

    from affectgym.serving.protocols import protocol_options

    ended = threading.Event()

    async def huge_response(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(64 << 20).encode())]})
        try:
            for _ in range(64):
                await send({"type": "http.response.body", "body": b"x" * (1 << 20), "more_body": True})
        finally:
            ended.set()

    port = free_port()
    config = uvicorn.Config(huge_response, host="127.0.0.1", port=port, log_level="warning",
                            **protocol_options(header_timeout_s=5.0, unread_timeout_s=1.0))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.connect(("127.0.0.1", port))
    try:
        reader.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert ended.wait(timeout=30), "the response still waits for a client that reads nothing"
    finally:
        reader.close()
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize(("field", "value"), [("max_pending", 0), ("max_reply_tokens", 2.5), ("max_prompt_tokens", True),
                                              ("unread_timeout_s", 0), ("header_timeout_s", -1.0)])
def test_limits_out_of_range_are_refused_naming_the_setting(field, value):
    from affectgym.agents.serve_limits import ServeLimits

    with pytest.raises(ValueError, match=f"{field} must be"):
        ServeLimits(**{field: value})
