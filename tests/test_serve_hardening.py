"""``affectgym serve`` under hostile or broken clients and files: nothing is locked out or left inconsistent.

Every test talks to a real server on 127.0.0.1 (uvicorn in a thread, or the command in a
subprocess) over real sockets, with timeouts set short by the server's own options.
"""

from __future__ import annotations

import itertools
import json
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from served_env import ServedEnv, needs_openenv, serve_process
from websockets.sync.client import connect

import affectgym
from affectgym.agents.base import tool_call_text
from affectgym.integrations.openenv.client import RemoteEnv
from affectgym.integrations.openenv.environment import NO_EPISODE

pytestmark = needs_openenv

SARCASM = "affectgym/Sarcasm-v0"
SPEECH = "affectgym/SpeechEmotion-v0"
SHIPPED_CLIPS = Path(affectgym.__file__).parent / "data" / "speech_v2"
PROSODY_CALL = tool_call_text("get_prosody_features", {})


def exchange(socket, message: dict) -> dict:
    """Send one OpenEnv WebSocket message and read its answer."""
    socket.send(json.dumps(message))
    return json.loads(socket.recv(timeout=60))


def test_a_step_after_a_failed_reset_says_no_episode_is_running_as_in_a_fresh_session():
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=2) as served, connect(served.ws_url + "/ws") as socket:
        fresh = exchange(socket, {"type": "step", "data": {"message": "hello"}})
        failed = exchange(socket, {"type": "reset", "data": {"options": {"scenario_id": "no-such-clip"}}})
        assert failed["type"] == "error" and "no scenario 'no-such-clip'" in failed["data"]["message"]
        after = exchange(socket, {"type": "step", "data": {"message": "hello"}})
        state = exchange(socket, {"type": "state"})
    assert after == fresh and after["data"]["observation"]["text"] == NO_EPISODE
    assert state["data"]["episode_id"] is None and state["data"]["done"]


# --------------------------------------------------------------------------- clients that hold connections
def half_open_connection(port: int) -> socket.socket:
    """A connection whose request's headers never end (a slow or hostile HTTP client)."""
    connection = socket.create_connection(("127.0.0.1", port))
    connection.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    return connection


def closed_by_the_server(connection: socket.socket, timeout_s: float = 30.0) -> bool:
    """Whether the server closes ``connection`` (read to its end) within ``timeout_s``."""
    connection.settimeout(timeout_s)
    try:
        while connection.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def health_when_answered(url: str, timeout_s: float = 30.0) -> int:
    """``GET /health``'s status, asked again while the server answers 503, for at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=timeout_s) as response:
                return response.status
        except urllib.error.HTTPError as refused:
            if refused.code != 503 or time.monotonic() > deadline:
                return refused.code
            time.sleep(0.2)


@contextmanager
def half_open_flood(tmp_path, connections: int, *options: str):
    """``(url, connections)``: a served Sarcasm-v0 with ``options``, and that many half-open connections to it."""
    with serve_process(SARCASM, "--split", "eval", *options, log=tmp_path / "serve.log") as url:
        port = int(url.rsplit(":", 1)[1])
        half_open = [half_open_connection(port) for _ in range(connections)]
        try:
            yield url, half_open
        finally:
            for connection in half_open:
                connection.close()


def test_half_open_requests_beyond_max_connections_are_dropped_after_the_header_timeout_and_health_answers(tmp_path):
    with half_open_flood(tmp_path, 12, "--max-connections", "4", "--header-timeout-s", "1") as (url, half_open):
        assert health_when_answered(url) == 200
        assert all(closed_by_the_server(connection) for connection in half_open)


def test_a_flood_of_half_open_requests_holds_half_the_connections_so_health_answers_before_any_timeout(tmp_path):
    # the header timeout is far longer than the probe waits: it answers because the flood is capped, not timed out
    with half_open_flood(tmp_path, 40, "--max-connections", "8", "--header-timeout-s", "600") as (url, half_open):
        assert health_when_answered(url, timeout_s=20) == 200
        still_open = [c for c in half_open if not closed_by_the_server(c, timeout_s=0.5)]
        assert len(still_open) <= 4  # half of --max-connections; the flood's oldest were closed


class NeverReadingSession(threading.Thread):
    """A WebSocket session that pipelines steps as fast as the server takes them, and never reads their answers.

    It sends until the server closes the connection; :attr:`closed_by_server` then says so.
    """

    def __init__(self, port: int):
        super().__init__(daemon=True)
        from websockets.client import ClientProtocol
        from websockets.http11 import Response
        from websockets.uri import parse_uri

        self.client = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/ws"))
        self.connection = socket.socket()
        for buffer in (socket.SO_RCVBUF, socket.SO_SNDBUF):  # small: the server's answers back up soon
            self.connection.setsockopt(socket.SOL_SOCKET, buffer, 4096)
        self.connection.connect(("127.0.0.1", port))
        self.client.send_request(self.client.connect())
        self.connection.sendall(b"".join(self.client.data_to_send()))
        while not any(isinstance(event, Response) for event in self.client.events_received()):
            self.client.receive_data(self.connection.recv(4096))  # the handshake's answer: the last thing it reads
        self.closed_by_server = False

    def run(self) -> None:
        step = {"type": "step", "data": {"message": "Let me think about the delivery of this line. " * 40}}
        for turn in itertools.count():
            self.client.send_text(json.dumps({"type": "reset", "data": {"seed": turn}} if turn % 8 == 0 else step).encode())
            try:
                self.connection.sendall(b"".join(self.client.data_to_send()))
            except OSError:  # reset or broken pipe: the server dropped the connection
                self.closed_by_server = True
                return


def test_clients_that_pipeline_steps_and_never_read_lose_their_sessions_after_the_idle_timeout(tmp_path):
    options = ("--max-sessions", "2", "--idle-timeout-s", "1", "--header-timeout-s", "0.5")
    with serve_process(SARCASM, "--split", "eval", *options, log=tmp_path / "serve.log") as url:
        hogs = [NeverReadingSession(int(url.rsplit(":", 1)[1])) for _ in range(2)]
        try:
            for hog in hogs:
                hog.start()
            third = RemoteEnv(url.replace("http://", "ws://"), capacity_wait_s=30.0)
            assert third.reset(seed=0)[0]
            time.sleep(0.75)  # longer than the header timeout: a WebSocket session is not a late request
            assert not third.step(PROSODY_CALL)[2]
            third.close()
            for hog in hogs:
                hog.join(timeout=30)
            assert all(hog.closed_by_server for hog in hogs)
        finally:
            for hog in hogs:
                hog.connection.close()


# --------------------------------------------------------------------------- files that change under a server
def clip_folder(root: Path, per_label: int = 8) -> Path:
    """``root/<label>/<clip>.flac``: the first ``per_label`` shipped clips of each sarcasm label."""
    rows = [json.loads(line) for line in (SHIPPED_CLIPS / "manifest.jsonl").read_text().splitlines()]
    for label in ("sarcastic", "sincere"):
        (root / label).mkdir(parents=True)
        for row in [row for row in rows if row["label"] == label][:per_label]:
            shutil.copy(SHIPPED_CLIPS / row["audio"], root / label / Path(row["audio"]).name)
    return root


def test_clips_damaged_after_the_server_started_still_reset_in_new_sessions_banded_by_the_same_norms(tmp_path):
    folder = clip_folder(tmp_path / "clips")
    norm_pool = affectgym.make(SPEECH, data_dir=str(folder), split="all").unwrapped.norm_clips()
    victims, witness = norm_pool[:4], norm_pool[4]  # four of the clips the norms are fitted on
    options = ("--split", "all", "--env-kwargs", json.dumps({"data_dir": str(folder)}), "--max-sessions", "4")
    with serve_process(SPEECH, *options, log=tmp_path / "serve.log") as url:
        with urllib.request.urlopen(url + "/affectgym/env") as response:
            described = json.load(response)["scenario_ids"]
        first = RemoteEnv(url.replace("http://", "ws://"))
        first.reset(options={"scenario_id": witness.id})
        banded_before = first.step(PROSODY_CALL)[0]
        for victim in victims:
            Path(victim.audio_path).write_bytes(b"not audio any more")
        later = RemoteEnv(url.replace("http://", "ws://"))
        try:
            later.reset(options={"scenario_id": witness.id})
            banded_after = later.step(PROSODY_CALL)[0]
            reset_ids = [later.reset(options={"scenario_id": scenario_id})[1]["scenario_id"] for scenario_id in described]
            later.reset(options={"scenario_id": victims[0].id})
            damaged = later.step(PROSODY_CALL)
        finally:
            first.close()
            later.close()
    assert {victim.id for victim in victims} < set(described) and reset_ids == described
    assert banded_after == banded_before and "Pitch: mean=" in banded_before
    assert damaged[0].startswith("No audio for this clip") and not damaged[2]
