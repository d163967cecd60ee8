"""``affectgym serve`` under hostile or broken clients and files: nothing is locked out or left inconsistent.

Every test talks to a real server on 127.0.0.1 (uvicorn in a thread, or the command in a
subprocess) over real sockets, with timeouts set short by the server's own options.
"""

from __future__ import annotations

import json

from served_env import ServedEnv
from websockets.sync.client import connect

from affectgym.integrations.openenv.environment import NO_EPISODE

SARCASM = "affectgym/Sarcasm-v0"


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
