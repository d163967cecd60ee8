"""A served EmotionStyle-v0 under load: 16 WebSocket sessions at once sending 32 KB replies, scored by the
one shared probe classifier, get the rewards the env gives in process; a session that sends its next
message before the last is answered gets each answer in order. (The first run of this test found
the probe's layer hook catching other sessions' passes on the shared model.)
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from served_env import ServedEnv
from websockets.sync.client import connect

import affectgym
from affectgym.integrations.openenv.client import RemoteEnv

STYLE = "affectgym/EmotionStyle-v0"
KWARGS = {"classifier": "probe", "split": "eval"}
SESSIONS = 16
REPLY_BYTES = 32 * 1024


def long_reply(env, scenario) -> str:
    """The scenario's honest reference, then its sentences again and filler, to 32 KB."""
    reference = env.reference_answer(scenario)[0]
    text = reference
    while len(text.encode()) < REPLY_BYTES:
        text += f" {reference} The afternoon went on and on like that."
    return text[:REPLY_BYTES]


@pytest.fixture(scope="module")
def local():
    env = affectgym.make(STYLE, **KWARGS).unwrapped
    env.score(env.scenarios[0], *env.reference_answer(env.scenarios[0]))  # loads SmolLM2, which the served envs share
    return env


def test_sixteen_sessions_sending_32_kb_replies_at_once_get_the_in_process_rewards(local):
    scenarios = local.scenarios[:SESSIONS]
    replies = [long_reply(local, scenario) for scenario in scenarios]
    expected = [local.score(scenario, reply, []).total for scenario, reply in zip(scenarios, replies, strict=True)]

    def play(index: int) -> float:
        env = RemoteEnv(served.ws_url, message_timeout_s=600)
        try:
            env.reset(seed=0, options={"scenario_id": scenarios[index].id})
            _, reward, terminated, _, _ = env.step(replies[index])
            assert terminated
            return reward
        finally:
            env.close()

    with ServedEnv(STYLE, KWARGS, max_sessions=SESSIONS) as served, ThreadPoolExecutor(SESSIONS) as pool:
        rewards = list(pool.map(play, range(SESSIONS)))
    assert rewards == pytest.approx(expected, abs=1e-9)


def test_a_step_sent_before_the_last_is_answered_is_answered_after_it_in_order(local):
    scenario = local.scenarios[0]
    reply = long_reply(local, scenario)
    with ServedEnv(STYLE, KWARGS) as served, connect(served.ws_url + "/ws", max_size=None) as socket:
        socket.send(json.dumps({"type": "reset", "data": {"seed": 0, "options": {"scenario_id": scenario.id}}}))
        socket.recv(timeout=120)
        socket.send(json.dumps({"type": "step", "data": {"message": reply}}))
        socket.send(json.dumps({"type": "step", "data": {"message": "A second reply, sent while the first is scored."}}))
        first, second = (json.loads(socket.recv(timeout=300)) for _ in range(2))
    assert first["data"]["done"] and first["data"]["reward"] == pytest.approx(local.score(scenario, reply, []).total, abs=1e-9)
    assert second["data"]["observation"]["text"].startswith("Error: the episode is over; call reset()"), second
