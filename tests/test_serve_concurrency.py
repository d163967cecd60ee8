"""Served EmotionStyle-v0 and EmpatheticDialogue-v0 under load: 16 WebSocket sessions at once sending
32 KB replies, scored by the one shared probe classifier or relevance model, get the rewards the env
gives in process; a session that sends its next message before the last is answered gets each
answer in order. (The first run of this test found the probe's layer hook catching other sessions'
passes on the shared model.)
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from served_env import ServedEnv, long_reply, needs_openenv
from websockets.sync.client import connect

import affectgym
from affectgym.integrations.openenv.client import RemoteEnv

pytestmark = needs_openenv

#: The envs served, with their offline scorers: EmotionStyle's probe, EmpatheticDialogue's nade and SmolLM2 relevance.
SERVED = {"affectgym/EmotionStyle-v0": {"classifier": "probe", "split": "eval"},
          "affectgym/EmpatheticDialogue-v0": {"split": "eval"}}
SESSIONS = 16


def played_in_process(env, scenario, messages: list[str]) -> list[tuple[float, bool]]:
    """``(reward, terminated)`` of each message, played in process from a reset on ``scenario``."""
    env.reset(seed=0, options={"scenario_id": scenario.id})
    return [env.step(message)[1:3] for message in messages]


@pytest.fixture(scope="module", params=list(SERVED))
def local(request):
    env = affectgym.make(request.param, **SERVED[request.param]).unwrapped
    env.score(env.scenarios[0], *env.reference_answer(env.scenarios[0]))  # loads SmolLM2, which the served envs share
    return env


def test_sixteen_sessions_sending_32_kb_replies_at_once_get_the_in_process_rewards(local):
    env_id = local.spec.id
    scenarios = local.scenarios[:SESSIONS]
    replies = [long_reply(local, scenario) for scenario in scenarios]
    expected = [played_in_process(local, scenario, [reply])[0] for scenario, reply in zip(scenarios, replies, strict=True)]

    def play(index: int) -> tuple[float, bool]:
        env = RemoteEnv(served.ws_url, message_timeout_s=600)
        try:
            env.reset(seed=0, options={"scenario_id": scenarios[index].id})
            _, reward, terminated, _, _ = env.step(replies[index])
            return reward, terminated
        finally:
            env.close()

    with ServedEnv(env_id, SERVED[env_id], max_sessions=SESSIONS) as served, ThreadPoolExecutor(SESSIONS) as pool:
        played = list(pool.map(play, range(SESSIONS)))
    assert [done for _, done in played] == [done for _, done in expected]
    assert [reward for reward, _ in played] == pytest.approx([reward for reward, _ in expected], abs=1e-9)


def test_a_step_sent_before_the_last_is_answered_is_answered_after_it_in_order(local):
    env_id, scenario = local.spec.id, local.scenarios[0]
    messages = [long_reply(local, scenario), "A second reply, sent while the first is scored."]
    expected = played_in_process(local, scenario, messages)
    with ServedEnv(env_id, SERVED[env_id]) as served, connect(served.ws_url + "/ws", max_size=None) as socket:
        socket.send(json.dumps({"type": "reset", "data": {"seed": 0, "options": {"scenario_id": scenario.id}}}))
        socket.recv(timeout=120)
        for message in messages:
            socket.send(json.dumps({"type": "step", "data": {"message": message}}))
        answers = [json.loads(socket.recv(timeout=300))["data"] for _ in messages]
    assert answers[0]["reward"] == pytest.approx(expected[0][0], abs=1e-9) and answers[0]["done"] == expected[0][1]
    if expected[0][1]:  # a one-step env: the second message finds the episode over
        assert answers[1]["observation"]["text"].startswith("Error: the episode is over; call reset()"), answers[1]
    else:  # a dialogue: the second message is the next turn's reply
        assert answers[1]["reward"] == pytest.approx(expected[1][0], abs=1e-9)
