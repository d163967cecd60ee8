"""A real ``affectgym serve`` server for tests: the OpenEnv app under uvicorn on 127.0.0.1.

:class:`ServedEnv` runs :func:`~affectgym.integrations.openenv.app.create_env_app` in a
uvicorn server on a free port, in a background thread of the test process (so an env id a
test registers is served too); :func:`serve_process` runs ``python -m affectgym serve`` as
the user does, in a subprocess (its log in a file). Both wait until ``GET /health`` answers.
:func:`long_reply` draws a scenario's reference out to 32 KB for load tests.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

#: Marks a test that needs OpenEnv, which .venv lacks: verifiers 0.4 and openenv 0.10 cannot share
#: one environment, so these run in .venv-openenv (``make test-openenv``).
needs_openenv = pytest.mark.skipif(
    importlib.util.find_spec("openenv") is None, reason="needs openenv>=0.10 (.venv-openenv): make test-openenv runs it",
)

ROOT = Path(__file__).resolve().parents[1]
REPLY_BYTES = 32 * 1024
PADDING = ", and the afternoon went on like that"


def long_reply(env: Any, scenario: Any, size_bytes: int = REPLY_BYTES) -> str:
    """The scenario's honest reference with its first sentence drawn out by clauses to ``size_bytes``,
    so that it still parses (a dialogue turn stays three tagged sentences) and every scorer reads it."""
    reference = env.reference_answer(scenario)[0]
    first_end = re.search(r"[.!?](\s|$)", reference).start()
    head, tail = reference[:first_end], reference[first_end:]
    return head + PADDING * ((size_bytes - len((head + tail).encode())) // len(PADDING)) + tail


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (free when this returns)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(url: str, timeout_s: float = 120.0, process: subprocess.Popen | None = None, log: Path | None = None) -> None:
    """Poll ``url/health`` until it answers; fail early when ``process`` exits (showing its ``log``)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {log.read_text() if log else ''}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"no server answered at {url}/health within {timeout_s:g} s")


class ServedEnv:
    """``env_id`` served over OpenEnv on 127.0.0.1 in a background thread (a context manager).

    Args:
        env_id: A registered env id.
        env_kwargs: Keyword arguments of ``affectgym.make``.
        app_kwargs: More arguments of ``create_env_app`` (``max_sessions``, ``idle_timeout_s``).

    Attributes:
        url: ``http://127.0.0.1:PORT``.
        ws_url: ``ws://127.0.0.1:PORT``.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, **app_kwargs: Any):
        import uvicorn

        from affectgym.integrations.openenv.app import create_env_app

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}"
        app = create_env_app(env_id, dict(env_kwargs or {}), **app_kwargs)
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, name="affectgym-serve-test", daemon=True)

    def __enter__(self) -> ServedEnv:
        self._thread.start()
        wait_until_healthy(self.url)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@contextlib.contextmanager
def serve_process(*args: str, log: Path, startup_timeout_s: float = 300.0, processes: list | None = None) -> Iterator[str]:
    """``python -m affectgym serve ARGS --port P`` in a subprocess, its output in ``log``: yields its URL; stopped on exit.

    ``processes``, when given, gets the server's ``Popen`` (for a test that kills it).
    """
    port = free_port()
    variables = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with open(log, "w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "affectgym", "serve", *args, "--port", str(port)],
            stdout=output, stderr=subprocess.STDOUT, text=True, env=variables,
        )
    if processes is not None:
        processes.append(process)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, timeout_s=startup_timeout_s, process=process, log=log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
