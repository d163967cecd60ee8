"""``affectgym serve``: any env over OpenEnv, and ``affectgym eval --env-url`` playing it.

Every test talks to a real server on 127.0.0.1 (uvicorn in a thread, or the command in a
subprocess) through real clients: OpenEnv's ``GenericEnvClient``, raw WebSockets, and
:class:`~affectgym.integrations.openenv.client.RemoteEnv`.
"""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.request
from typing import Any

import gymnasium as gym
import pytest
from served_env import ServedEnv, needs_openenv, serve_process
from test_cli import affectgym_cli, error_line
from websockets.sync.client import connect

import affectgym
from affectgym.agents.base import FunctionAgent, tool_call_text
from affectgym.eval import EvalConfig, run_eval
from affectgym.integrations.openenv.client import RemoteEnv
from affectgym.integrations.openenv.environment import NO_EPISODE
from affectgym.integrations.openenv.models import END_INFO_KEYS

pytestmark = needs_openenv

SARCASM = "affectgym/Sarcasm-v0"
PROSODY_CALL = tool_call_text("get_prosody_features", {})
TRANSCRIPT_CALL = tool_call_text("get_transcript", {})


def scripted_reply(observation: str, info: Any) -> str:
    """Look at the prosody, then answer from what it said: a deterministic tool-calling agent."""
    if not any(message.get("role") == "tool" for message in info["messages"]):
        return PROSODY_CALL
    label = "sarcastic" if "WIDE" in observation else "sincere"
    return f'<final>{{"label": "{label}", "confidence": 0.7}}</final>'


def play(env: Any, scenario_id: str, actions: list[str], seed: int = 0) -> tuple[float, dict[str, Any], list[dict[str, Any]]]:
    """Reset ``env`` on ``scenario_id`` and send ``actions``: (summed reward, last info, every info)."""
    _, info = env.reset(seed=seed, options={"scenario_id": scenario_id})
    infos, rewards = [info], []
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            break
    return math.fsum(rewards), info, infos


@pytest.fixture(scope="module")
def sarcasm_eval_server():
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=8) as served:
        yield served


@pytest.fixture(scope="module")
def local_sarcasm():
    env = affectgym.make(SARCASM, split="eval")
    yield env
    env.close()


# --------------------------------------------------------------------------- the done-when test
def test_affectgym_serve_binds_loopback_and_an_openenv_client_plays_a_tool_calling_episode_for_the_in_process_reward(tmp_path, local_sarcasm):
    from openenv.core import GenericEnvClient

    scenario_id = local_sarcasm.unwrapped.scenario_ids[3]
    actions = [TRANSCRIPT_CALL, PROSODY_CALL, '<final>{"label": "sarcastic", "confidence": 0.8}</final>']
    local_reward, local_info, _ = play(local_sarcasm, scenario_id, actions)
    log = tmp_path / "serve.log"
    with serve_process(SARCASM, "--split", "eval", log=log) as url:
        with GenericEnvClient(base_url=url) as client:
            first = client.reset(seed=0, options={"scenario_id": scenario_id})
            assert first.observation["scenario_id"] == scenario_id and first.observation["tools"]
            results = [client.step({"message": action}) for action in actions]
    assert [r.done for r in results] == [False, False, True]
    assert results[0].observation["messages"][-1]["role"] == "tool"
    assert math.fsum(r.reward for r in results) == local_reward
    final = results[-1].observation
    assert final["reward_components"] == local_info["reward_components"]
    assert final["outcome"] == local_info["outcome"]
    assert f"Uvicorn running on http://127.0.0.1:{url.rsplit(':', 1)[1]}" in log.read_text()


def test_the_eval_command_scores_a_served_env_as_the_env_made_in_process(tmp_path):
    with serve_process(SARCASM, "--split", "eval", log=tmp_path / "serve.log") as url:
        remote = affectgym_cli("eval", SARCASM, "--agent", "majority", "-n", "3", "-c", "2", "--no-progress",
                               "--env-url", url.replace("http://", "ws://"), "--out", str(tmp_path / "remote"))
    local = affectgym_cli("eval", SARCASM, "--agent", "majority", "-n", "3", "--no-progress", "--out", str(tmp_path / "local"))
    assert remote.returncode == 0 and local.returncode == 0, (remote.stderr, local.stderr)

    def rewards(folder: str) -> dict[str, tuple[float, dict]]:
        lines = (tmp_path / folder / "results.jsonl").read_text().splitlines()
        return {r["scenario_id"]: (r["reward"], r["outcome"]) for r in map(json.loads, lines)}

    assert rewards("remote") == rewards("local")
    assert json.loads((tmp_path / "remote" / "metadata.json").read_text())["env_url"].startswith("ws://127.0.0.1:")


# --------------------------------------------------------------------------- remote vs in process
def test_eval_of_a_served_env_gives_the_rewards_of_the_env_in_process_episode_by_episode(tmp_path, sarcasm_eval_server):
    agent = FunctionAgent(scripted_reply, name="scripted")
    runs = {}
    for where, extra in (("local", {}), ("remote", {"env_url": sarcasm_eval_server.ws_url, "concurrency": 4})):
        config = EvalConfig(env_id=SARCASM, agent="scripted", out=tmp_path / where, n=8, progress=False, **extra)
        run_eval(config, agent=agent)
        lines = (tmp_path / where / "results.jsonl").read_text().splitlines()
        runs[where] = {r["scenario_id"]: r for r in map(json.loads, lines)}
    assert runs["local"].keys() == runs["remote"].keys() and len(runs["local"]) == 8
    for scenario_id, local in runs["local"].items():
        remote = runs["remote"][scenario_id]
        assert remote["error"] is None
        for key in ("reward", "step_rewards", "reward_components", "outcome", "final_answer", "tool_calls", "messages"):
            assert remote[key] == local[key], (scenario_id, key)
        assert remote["tool_calls"] == ["get_prosody_features"]


def test_eval_spreads_its_sessions_over_replicas_of_one_served_env(tmp_path, local_sarcasm):
    agent = FunctionAgent(scripted_reply, name="scripted")
    # Each replica takes one session: the run finishes only if its 2 workers went to different replicas.
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=1) as first, ServedEnv(SARCASM, {"split": "eval"}, max_sessions=1) as second:
        replicas = [first.ws_url, second.ws_url]
        run_eval(EvalConfig(env_id=SARCASM, agent="scripted", out=tmp_path / "remote", n=6, concurrency=2,
                            env_url=replicas, progress=False), agent=agent)
    run_eval(EvalConfig(env_id=SARCASM, agent="scripted", out=tmp_path / "local", n=6, progress=False), agent=agent)
    records = {where: {r["scenario_id"]: r for r in map(json.loads, (tmp_path / where / "results.jsonl").read_text().splitlines())}
               for where in ("remote", "local")}
    assert all(r["error"] is None for r in records["remote"].values()) and len(records["remote"]) == 6
    assert {k: r["reward"] for k, r in records["remote"].items()} == {k: r["reward"] for k, r in records["local"].items()}
    assert json.loads((tmp_path / "remote" / "metadata.json").read_text())["env_url"] == replicas


def test_repeated_env_url_flags_are_replicas_and_a_bad_list_is_refused(tmp_path):
    import argparse

    from affectgym.eval import commands

    parser = argparse.ArgumentParser(prog="affectgym")
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", SARCASM, "--env-url", "ws://127.0.0.1:8000", "--env-url", "ws://127.0.0.1:8001"])
    assert args.env_url == ["ws://127.0.0.1:8000", "ws://127.0.0.1:8001"]
    assert EvalConfig(env_id=SARCASM, agent="majority", out=tmp_path, env_url=["ws://a:1"]).env_url == "ws://a:1"
    for bad in ([], ["ws://a:1", ""], 8000):
        with pytest.raises(ValueError, match="a non-empty list of URLs"):
            EvalConfig(env_id=SARCASM, agent="majority", out=tmp_path, env_url=bad)


def test_eval_refuses_a_served_env_of_another_split_or_id_naming_both(tmp_path, sarcasm_eval_server):
    with pytest.raises(ValueError, match=r"split 'eval' \(this run: 'train'\)"):
        run_eval(EvalConfig(env_id=SARCASM, agent="majority", out=tmp_path / "a", split="train", env_url=sarcasm_eval_server.url, progress=False))
    with pytest.raises(ValueError, match=r"id 'affectgym/Sarcasm-v0' \(this run: 'affectgym/SpeechEmotion-v0'\)"):
        run_eval(EvalConfig(env_id="affectgym/SpeechEmotion-v0", agent="majority", out=tmp_path / "b", env_url=sarcasm_eval_server.url, progress=False))
    with pytest.raises(ValueError, match="the server's kwargs"):
        EvalConfig(env_id=SARCASM, agent="majority", out=tmp_path / "c", env_kwargs={"max_turns": 3}, env_url=sarcasm_eval_server.url)


def test_remote_env_says_when_nothing_serves_at_the_url():
    from served_env import free_port

    with pytest.raises(ConnectionError, match="no affectgym server answers at ws://127.0.0.1:.*affectgym serve ENV_ID"):
        RemoteEnv(f"ws://127.0.0.1:{free_port()}")
    with pytest.raises(ValueError, match="accepted: ws://HOST:PORT"):
        RemoteEnv("ftp://127.0.0.1:1")


# --------------------------------------------------------------------------- what crosses the wire
@pytest.mark.parametrize(("body", "named"), [
    (b"<html>a web page</html>", "answered, but not in JSON"),
    (b'{"status": "ok"}', "answered without env_id, env_kwargs"),
])
def test_remote_env_says_when_the_url_is_not_an_affectgym_server(body, named):
    import http.server
    import threading

    class Other(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(ConnectionError, match=f"{named}.*{url} is not an `affectgym serve` endpoint"):
            RemoteEnv(url)
    finally:
        server.shutdown()
        server.server_close()


def test_resuming_against_a_server_restarted_with_other_options_is_refused_naming_them(tmp_path):
    def run(served, resume):
        return run_eval(EvalConfig(env_id=SARCASM, agent="scripted", out=tmp_path / "run", n=4 if resume else 2,
                                   env_url=served.ws_url, resume=resume, progress=False),
                        agent=FunctionAgent(scripted_reply))

    with ServedEnv(SARCASM, {"split": "eval"}) as served:
        run(served, resume=False)
    metadata = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert metadata["env_kwargs"] == {"split": "eval"} and metadata["reward_weights"]["correctness"] > 0
    with ServedEnv(SARCASM, {"split": "eval", "rubric": "label", "max_turns": 3}) as restarted:
        with pytest.raises(ValueError, match=r"scored by another env \(env_kwargs: recorded \{'split': 'eval'\}, now"):
            run(restarted, resume=True)
    with ServedEnv(SARCASM, {"split": "eval"}) as same:
        assert run(same, resume=True).summary["episodes"] == 4  # the same server's options: resumed


def test_the_gold_label_never_crosses_the_wire_before_the_answer(sarcasm_eval_server, local_sarcasm):
    scenario = local_sarcasm.unwrapped.scenarios[0]
    frames = []
    with connect(sarcasm_eval_server.ws_url + "/ws") as socket:
        for message in (
            {"type": "reset", "data": {"seed": 0, "options": {"scenario_id": scenario.id}}},
            {"type": "step", "data": {"message": TRANSCRIPT_CALL}},
            {"type": "step", "data": {"message": "I think it is... hmm."}},
            {"type": "step", "data": {"message": PROSODY_CALL}},
            {"type": "step", "data": {"message": '<final>{"label": "sincere", "confidence": 0.5}</final>'}},
        ):
            socket.send(json.dumps(message))
            frames.append(json.loads(socket.recv(timeout=60)))
    *before, last = [frame["data"] for frame in frames]
    assert [frame["done"] for frame in before] == [False] * 4 and last["done"]

    def keys(value: Any) -> set[str]:
        if isinstance(value, dict):
            return set(value) | set().union(*map(keys, value.values()))
        return set().union(*map(keys, value)) if isinstance(value, list) else set()

    for frame in before:
        assert all(frame["observation"][key] is None for key in END_INFO_KEYS)
        assert "label" not in keys(frame), "a key named label crossed the wire before the answer"
    assert last["observation"]["outcome"]["label"] == scenario.label


def test_an_outcome_an_env_puts_in_info_early_is_held_back_until_the_end():
    from toy_env import ToyMoodEnv

    class Leaky(ToyMoodEnv):
        """A plug-in env that wrongly reveals its outcome (gold label included) in every step's info."""

        def episode_info(self, scenario: Any) -> dict[str, Any]:
            return {"outcome": {"label": scenario.label}}

    gym.register(id="affectgym-test/LeakyToy-v0", entry_point=Leaky)
    try:
        with ServedEnv("affectgym-test/LeakyToy-v0") as served:
            env = RemoteEnv(served.url)
            _, info = env.reset(seed=0)
            _, _, _, _, info = env.step("<answer>not a mood</answer>")
            assert info.get("outcome") is None and "outcome" not in info
            env.close()
    finally:
        gym.registry.pop("affectgym-test/LeakyToy-v0")


def test_a_plugin_env_is_served_and_scored_like_a_builtin_one():
    gym.register(id="toyplugin-test/ToyMood-v0", entry_point="toy_env:ToyMoodEnv")
    try:
        local = gym.make("toyplugin-test/ToyMood-v0")
        with ServedEnv("toyplugin-test/ToyMood-v0") as served:
            remote = RemoteEnv(served.ws_url)
            assert remote.scenario_ids == local.unwrapped.scenario_ids and remote.label_set == local.unwrapped.label_set
            for scenario_id in remote.scenario_ids[:3]:
                actions = [tool_call_text("read_note", {}), "<answer>happy</answer>"]
                assert play(remote, scenario_id, actions)[:2] == play(local, scenario_id, actions)[:2]
            remote.close()
    finally:
        gym.registry.pop("toyplugin-test/ToyMood-v0")


def test_http_step_has_no_session_and_says_to_play_over_the_websocket(sarcasm_eval_server):
    request = urllib.request.Request(
        sarcasm_eval_server.url + "/step", data=json.dumps({"action": {"message": PROSODY_CALL}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        body = json.load(response)
    assert body["observation"]["text"] == NO_EPISODE
    with urllib.request.urlopen(sarcasm_eval_server.url + "/affectgym/env", timeout=60) as response:
        description = json.load(response)
    assert description["split"] == "eval" and description["max_sessions"] == 8 and len(description["scenario_ids"]) > 10


# --------------------------------------------------------------------------- sessions
def test_sessions_are_isolated_one_env_each(sarcasm_eval_server, local_sarcasm):
    first, second = RemoteEnv(sarcasm_eval_server.ws_url), RemoteEnv(sarcasm_eval_server.ws_url)
    ids = local_sarcasm.unwrapped.scenario_ids
    first.reset(seed=0, options={"scenario_id": ids[0]})
    second.reset(seed=0, options={"scenario_id": ids[1]})
    _, _, _, _, info_first = first.step(PROSODY_CALL)
    _, reward_second, done_second, _, info_second = second.step('<final>{"label": "sincere", "confidence": 0.9}</final>')
    assert info_first["scenario_id"] == ids[0] and info_second["scenario_id"] == ids[1]
    assert done_second and len(info_first["messages"]) == len(info_second["messages"]) + 1
    _, reward_first, done_first, _, _ = first.step('<final>{"label": "sincere", "confidence": 0.9}</final>')
    assert done_first
    assert reward_second == play(local_sarcasm, ids[1], ['<final>{"label": "sincere", "confidence": 0.9}</final>'])[0]
    first.close()
    second.close()


def test_a_session_over_max_sessions_is_refused_with_the_reason_and_a_freed_slot_is_reused():
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=1) as served:
        holder = RemoteEnv(served.ws_url)
        holder.reset(seed=0)
        refused = RemoteEnv(served.ws_url)
        with pytest.raises(ConnectionError, match=r"code 1013: Server at capacity: 1/1 sessions active"):
            refused.reset(seed=0)
        holder.close()
        assert eventually(lambda: refused.reset(seed=0))[0]
        refused.close()


def test_eval_with_more_workers_than_the_server_has_sessions_waits_for_free_ones_and_plays_every_episode(tmp_path):
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=2) as served:
        result = run_eval(EvalConfig(env_id=SARCASM, agent="scripted", out=tmp_path / "run", n=14, concurrency=4,
                                     env_url=served.ws_url, progress=False), agent=FunctionAgent(scripted_reply))
    assert result.summary["episodes"] == 14 and result.summary["errors"]["count"] == 0


def test_a_full_server_is_asked_again_until_a_slot_frees_within_the_wait():
    import threading

    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=1) as served:
        holder = RemoteEnv(served.ws_url)
        holder.reset(seed=0)
        threading.Timer(1.0, holder.close).start()
        patient = RemoteEnv(served.ws_url, capacity_wait_s=30.0)
        assert patient.reset(seed=0)[0]  # waited for the holder's slot
        patient.close()


def eventually(attempt: Any, timeout_s: float = 30.0) -> Any:
    """``attempt()``'s result once it stops raising ``ConnectionError`` (the server frees a slot asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return attempt()
        except ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_an_idle_session_is_closed_with_the_reason_and_frees_its_slot():
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=1, idle_timeout_s=0.5) as served:
        idle = RemoteEnv(served.ws_url)
        idle.reset(seed=0)
        time.sleep(1.5)
        with pytest.raises(ConnectionError, match=r"closed the session under the episode \(idle for more than 0.5 s"):
            idle.step(PROSODY_CALL)
        fresh = RemoteEnv(served.ws_url)
        assert eventually(lambda: fresh.reset(seed=0))[0]
        fresh.close()
        assert idle.reset(seed=0)[0], "the idle client connects a new session on its next reset"
        idle.close()


def test_a_client_that_drops_mid_episode_frees_its_session_and_the_server_goes_on():
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=1) as served:
        dropped = connect(served.ws_url + "/ws")
        dropped.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        dropped.recv(timeout=60)
        dropped.send(json.dumps({"type": "step", "data": {"message": PROSODY_CALL}}))
        dropped.socket.close()  # no close frame: the process died, the network went down
        env = RemoteEnv(served.ws_url)
        assert eventually(lambda: env.reset(seed=0))[0]
        assert not env.step(PROSODY_CALL)[2]
        env.close()
        with urllib.request.urlopen(served.url + "/health", timeout=10) as response:
            assert json.load(response) == {"status": "healthy"}


# --------------------------------------------------------------------------- the command's errors
def test_a_numeric_env_is_refused_naming_its_text_form():
    from affectgym.integrations.openenv.app import create_env_app

    with pytest.raises(ValueError, match=r"affectgym/EmotionState-v0 is a numeric env .*affectgym/EmotionStateText-v0 is the text form"):
        create_env_app("affectgym/EmotionState-v0")


def test_serve_refuses_an_unknown_env_and_a_split_in_env_kwargs_in_one_line():
    assert "unknown env id 'affectgym/NoSuchEnv-v0'; registered affectgym envs: affectgym/Sarcasm-v0" in error_line(
        affectgym_cli("serve", "affectgym/NoSuchEnv-v0")
    )
    line = error_line(affectgym_cli("serve", SARCASM, "--env-kwargs", '{"split": "eval"}'))
    assert "pass --split eval instead" in line


def test_remote_env_reads_answers_with_the_served_envs_own_parser(sarcasm_eval_server, local_sarcasm):
    remote = RemoteEnv(sarcasm_eval_server.url)
    for text in ('<final>{"label": "sarcastic", "confidence": 0.9}</final>', "sarcastic, I guess", ""):
        assert remote.parse_final(text) == local_sarcasm.unwrapped.parse_final(text)
    assert set(remote.tools) == set(local_sarcasm.unwrapped.tools)
    remote.close()


# --------------------------------------------------------------------------- request limits
def post(url: str, body: bytes, *, chunked: bool = False) -> tuple[int, dict[str, Any]]:
    """POST ``body`` (as one ``Content-Length`` body, or chunked), returning the status and the JSON answer."""
    import http.client
    from urllib.parse import urlparse

    address = urlparse(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    try:
        if chunked:
            connection.request("POST", address.path, body=iter([body[:100], body[100:]]),
                               headers={"Content-Type": "application/json"}, encode_chunked=True)
        else:
            connection.request("POST", address.path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def test_an_http_body_over_the_limit_is_refused_with_413_whether_declared_or_chunked_and_the_server_goes_on():
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=2, max_body_bytes=4096) as served:
        url = served.url + "/affectgym/parse_final"
        large = json.dumps({"text": "x" * 10_000}).encode()
        for chunked in (False, True):
            status, answer = post(url, large, chunked=chunked)
            assert status == 413 and "at most 4096" in answer["detail"], (chunked, answer)
        status, answer = post(url, json.dumps({"text": "<final>{\"label\": \"sincere\", \"confidence\": 1}</final>"}).encode())
        assert status == 200 and answer["answer"]["label"] == "sincere"


def test_stateless_http_resets_beyond_max_sessions_at_a_time_are_told_to_retry():
    import asyncio

    from affectgym.integrations.openenv.limits import RequestLimits

    started, release, sent = asyncio.Event(), asyncio.Event(), []

    async def slow_app(scope, receive, send):  # stands for OpenEnv's /reset building an env
        await receive()
        started.set()
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    limits = RequestLimits(slow_app, max_http_envs=1)

    def request(path):
        scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"content-length", b"2")]}
        messages = iter([{"type": "http.request", "body": b"{}", "more_body": False}])

        async def receive():
            return next(messages, {"type": "http.disconnect"})

        async def send(message):
            sent.append((path, message))

        return limits(scope, receive, send)

    async def scenario():
        first = asyncio.create_task(request("/reset"))
        await started.wait()
        await request("/reset")  # refused at once while the first builds its env
        release.set()
        await first

    asyncio.run(scenario())
    statuses = [message["status"] for _, message in sent if message["type"] == "http.response.start"]
    assert statuses == [503, 200]
    refusal = next(message for _, message in sent if message.get("status") == 503)
    assert (b"retry-after", b"1") in refusal["headers"]
