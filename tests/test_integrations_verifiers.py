"""``affectgym.integrations.verifiers.load_environment``: an affectgym env under verifiers' own evaluation.

vf-eval (verifiers' evaluation entry point, its installed command) and affectgym's eval
episode player (:func:`~affectgym.eval.runner.play_episode` with an OpenAI-compatible agent)
play the same scripted replies from the same real OpenAI-compatible server on 127.0.0.1 (an
invalid message, a tool call over the wire's ``tool_calls``, then an answer); verifiers'
rewards and metrics must be affectgym's.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, ToolCall

import affectgym
from affectgym.agents.openai_agent import OpenAIAgent
from affectgym.eval.runner import play_episode
from affectgym.integrations.verifiers import load_environment, message_action, reply_messages

SARCASM = "affectgym/Sarcasm-v0"
ROOT = Path(__file__).resolve().parents[1]


def scripted(request: dict[str, Any]) -> Any:
    """Hesitate (an invalid message), call the prosody tool, then answer from what it said."""
    messages = request["messages"]
    replies = sum(1 for m in messages if m.get("role") == "assistant")
    if replies == 0:
        return "Let me think about the delivery first."
    if replies == 1:
        return ToolCall("get_prosody_features", {"detail": "summary"})
    prosody = next(m["content"] for m in messages if m.get("role") == "tool")
    label = "sarcastic" if "WIDE" in prosody else "sincere"
    return f'<final>{{"label": "{label}", "confidence": 0.75}}</final>'


def vf_eval(*args: str) -> subprocess.CompletedProcess:
    """verifiers' ``vf-eval`` command, as installed beside this Python, with this checkout importable."""
    command = Path(sys.executable).with_name("vf-eval")
    variables = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), "VF_TEST_KEY": "sk-test"}
    return subprocess.run([str(command), *args], capture_output=True, text=True, env=variables, timeout=600, cwd=ROOT)


def test_vf_eval_on_load_environment_gives_affectgyms_rewards_and_components_for_the_same_replies(tmp_path):
    with OpenAIServer(scripted) as server:
        result = vf_eval(
            "affectgym.integrations.verifiers", "-a", json.dumps({"env": SARCASM}), "-m", "test-model", "-b", server.url,
            "-k", "VF_TEST_KEY", "-n", "6", "-r", "1", "-c", "3", "-s", "-o", str(tmp_path / "vf"), "--disable-env-server",
            "--disable-tui", "-C", "affectgym_outcome,affectgym_step_rewards",
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert any(request.get("tools") for request in server.requests), "the env's tools reached the model"
        (results_file,) = (tmp_path / "vf").rglob("results.jsonl")
        rollouts = [json.loads(line) for line in results_file.read_text().splitlines()]
        assert len(rollouts) == 6
        env, agent = affectgym.make(SARCASM, split="eval"), OpenAIAgent("test-model", base_url=server.url)
        ours = {
            info["scenario_id"]: play_episode(env, agent, info["scenario_id"], 0, info["seed"])
            for info in (rollout["info"] for rollout in rollouts)
        }
    for rollout in rollouts:
        episode = ours[rollout["info"]["scenario_id"]]
        assert episode["tool_calls"] == ["get_prosody_features"] and len(episode["step_rewards"]) == 3
        assert rollout["reward"] == pytest.approx(episode["reward"], abs=1e-12)
        assert rollout["metrics"]["episode_reward"] == pytest.approx(episode["reward"], abs=1e-12)
        for name, value in episode["reward_components"].items():
            assert rollout["metrics"][name] == pytest.approx(value, abs=1e-12), name
        assert rollout["affectgym_outcome"] == episode["outcome"]
        assert rollout["affectgym_step_rewards"] == episode["step_rewards"]
        last = rollout["completion"][-1]
        assert last["role"] == "assistant" and "<final>" in last["content"], "no synthetic user turn after the answer"
    assert {r["info"]["split"] for r in rollouts} == {"eval"}


def test_the_dataset_is_the_envs_scenarios_and_the_tools_are_its_tools():
    env = affectgym.make(SARCASM, split="train")
    vf_env = load_environment(SARCASM, max_turns=5)
    dataset = vf_env.get_dataset()
    assert [row["scenario_id"] for row in dataset["info"]] == env.unwrapped.scenario_ids
    assert "label" not in dataset.column_names and "answer" not in dataset.column_names
    _, info = env.reset(seed=dataset[0]["info"]["seed"], options={"scenario_id": dataset[0]["info"]["scenario_id"]})
    assert [m["content"] for m in dataset[0]["prompt"]] == [m["content"] for m in info["messages"]]
    assert sorted(tool.name for tool in vf_env.tool_defs) == sorted(env.unwrapped.tools)
    assert {row["split"] for row in vf_env.get_eval_dataset()["info"]} == {"eval"}
    assert type(vf_env).__mro__[1].__name__ == "MultiTurnEnv"


def test_a_reply_with_tool_calls_gets_one_tool_message_per_call_and_errors_after_them():
    class Call:
        def __init__(self, call_id: str, name: str):
            self.id, self.name, self.arguments = call_id, name, "{}"

    class Reply:
        content = None
        tool_calls = [Call("a", "get_transcript"), Call("b", "no_such_tool")]

    assert message_action(Reply()).count("<tool_call>") == 2
    env_added = [
        {"role": "assistant"}, {"role": "tool", "content": "transcript"}, {"role": "tool", "content": "Error: unknown tool"},
    ]
    assert reply_messages(["a", "b"], "obs", env_added) == [
        {"role": "tool", "tool_call_id": "a", "content": "transcript"},
        {"role": "tool", "tool_call_id": "b", "content": "Error: unknown tool"},
    ]
    rejected = [{"role": "assistant"}, {"role": "user", "content": "Error: the message is too long"}]
    assert reply_messages(["a"], "Error: the message is too long", rejected) == [
        {"role": "tool", "tool_call_id": "a", "content": "Error: the message is too long"}
    ]


def test_load_environment_names_the_env_once_and_knows_its_ids():
    with pytest.raises(ValueError, match="name the env once"):
        load_environment(SARCASM, env=SARCASM)
    with pytest.raises(ValueError, match="unknown env id 'affectgym/Nope-v0'"):
        load_environment("affectgym/Nope-v0")
    with pytest.raises(ValueError, match="affectgym/EmotionState-v0 is a numeric env"):
        load_environment("affectgym/EmotionState-v0")


def test_loading_the_env_leaves_the_processs_sigterm_and_sigint_handlers_as_they_were():
    # verifiers' classic Environment installs its own (teardown, then exit(143)) when built.
    received: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, lambda sig, frame: received.append(sig))
    try:
        load_environment(SARCASM, max_turns=5)
        assert signal.getsignal(signal.SIGINT) is previous[signal.SIGINT]
        os.kill(os.getpid(), signal.SIGTERM)
        assert received == [signal.SIGTERM]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def test_load_environment_logs_which_split_each_dataset_serves(caplog):
    with caplog.at_level(logging.INFO, logger="verifiers"):
        vf_env = load_environment(SARCASM, max_turns=5)
    line = f"{SARCASM}: dataset is split 'train' ({len(vf_env.get_dataset())} scenarios), eval_dataset is split 'eval'"
    assert line in caplog.messages


def scripted_in_text(request: dict[str, Any]) -> str:
    """Call the prosody tool in the env's text form, then answer from what it said."""
    replies = sum(1 for m in request["messages"] if m.get("role") == "assistant")
    if replies == 0:
        return '<tool_call>{"name": "get_prosody_features", "arguments": {"detail": "summary"}}</tool_call>'
    label = "sarcastic" if "WIDE" in request["messages"][-1]["content"] else "sincere"
    return f'<final>{{"label": "{label}", "confidence": 0.75}}</final>'


def played_directly(info: dict[str, Any]) -> tuple[float, dict[str, float]]:
    """The return and final components of the same scripted replies played on the env itself."""
    env = affectgym.make(info["env"], split=info["split"], **info["env_kwargs"])
    observation, _ = env.reset(seed=info["seed"], options={"scenario_id": info["scenario_id"]})
    messages, total = [{"role": "user", "content": observation}], 0.0
    while True:
        reply = scripted_in_text({"messages": messages})
        observation, reward, terminated, truncated, step_info = env.step(reply)
        total += reward
        if terminated or truncated:
            return total, step_info["reward_components"]
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": observation}]


def test_verifiers_v1_eval_of_the_taskset_gives_affectgyms_returns_and_components_and_ends_on_the_answer(tmp_path):
    command = Path(sys.executable).with_name("eval")  # verifiers' v1 evaluation command
    with OpenAIServer(scripted_in_text) as server:
        result = subprocess.run(
            [str(command), "affectgym-verifiers", "--env.taskset.env", SARCASM, "--env.player.harness.id", "null",
             "--env.player.runtime.type", "subprocess", "-m", "test-model", "--client.base-url", server.url,
             "--client.api-key-var", "VF_TEST_KEY", "-n", "3", "-c", "3", "--no-push", "--no-serve", "--no-rich",
             "-o", str(tmp_path / "v1")],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
            env={**os.environ, "VF_TEST_KEY": "sk-test", "PATH": os.pathsep.join([str(command.parent), os.environ["PATH"]])})
    assert result.returncode == 0, result.stderr[-3000:]
    (traces_file,) = (tmp_path / "v1").rglob("traces.jsonl")
    episodes = [json.loads(line) for line in traces_file.read_text().splitlines()]
    assert len(episodes) == 3
    for episode in episodes:
        (trace,) = episode["traces"]
        if any("failed to prepare uv script" in str(error) for error in trace["errors"]):
            pytest.skip("verifiers' null harness could not install its program (uv sync --script needs the package index)")
        assert trace["errors"] == [] and not server.requests[0].get("tools"), "tool calls travel in the text"
        expected, components = played_directly(episode["task"]["data"]["info"])
        assert trace["rewards"]["affectgym_reward"]["score"] == pytest.approx(expected, abs=1e-12)
        assert trace["metrics"] == pytest.approx(components, abs=1e-12)
        last = trace["nodes"][-1]["message"]
        assert last["role"] == "assistant" and last["content"].startswith("<final>"), "nothing after the answer"
