"""The taskset ``affectgym-verifiers`` under verifiers' own ``vf-eval`` and ``vf-validate`` commands.

``vf-eval`` (installed beside this Python) plays scripted replies from a real OpenAI-compatible
server on 127.0.0.1 through verifiers' ``null`` harness (plain chat, the taskset's default seat)
on the local subprocess runtime; its rewards and metrics must be what the env pays for the same
replies played on the env itself. ``vf-validate`` runs its model-free checks on the same tasks.
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
from openai_server import OpenAIServer, Reply

import affectgym
from affectgym.integrations.verifiers import (
    AffectGymConfig,
    AffectGymEnv,
    AffectGymEnvConfig,
    AffectGymTaskset,
    episode_result,
)

SARCASM = "affectgym/Sarcasm-v0"
PROSODY_CALL = '<tool_call>{"name": "get_prosody_features", "arguments": {"detail": "summary"}}</tool_call>'


def verifiers_command(name: str, *args: str, cwd: Path, server: OpenAIServer | None = None) -> subprocess.CompletedProcess:
    """verifiers' command ``name`` (``vf-eval``, ``vf-validate``), as installed beside this Python."""
    command = Path(sys.executable).with_name(name)
    endpoint = ["-m", "test-model", "--client.base-url", server.url, "--client.api-key-var", "VF_TEST_KEY", "--no-push"] if server else []
    variables = {**os.environ, "VF_TEST_KEY": "sk-test", "PATH": os.pathsep.join([str(command.parent), os.environ["PATH"]])}
    return subprocess.run(
        [str(command), "affectgym-verifiers", *args, *endpoint],
        capture_output=True, text=True, timeout=600, cwd=cwd, env=variables,
    )


def read_episodes(folder: Path) -> list[dict[str, Any]]:
    """The episodes of a ``vf-eval`` run, skipping the test where the harness program could not be installed."""
    (traces_file,) = folder.rglob("traces.jsonl")
    episodes = [json.loads(line) for line in traces_file.read_text().splitlines()]
    for episode in episodes:
        for trace in episode["traces"]:
            if any("failed to prepare uv script" in str(error) for error in trace["errors"]):
                pytest.skip("verifiers' null harness could not install its program (uv sync --script needs the package index)")
    return episodes


def scripted(request: dict[str, Any]) -> str:
    """Call the prosody tool in the env's text form, then answer from what it said."""
    replies = sum(1 for m in request["messages"] if m.get("role") == "assistant")
    if replies == 0:
        return PROSODY_CALL
    label = "sarcastic" if "WIDE" in request["messages"][-1]["content"] else "sincere"
    return f'<final>{{"label": "{label}", "confidence": 0.75}}</final>'


def one_vf_eval_episode(tmp_path: Path, reply: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``vf-eval`` of one Sarcasm-v0 episode against a server answering with ``reply``: the episode and its one trace."""
    with OpenAIServer(reply) as server:
        result = verifiers_command(
            "vf-eval", "--env.taskset.env", SARCASM, "-n", "1", "-o", str(tmp_path / "run"), cwd=tmp_path, server=server,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    ((episode,),) = [read_episodes(tmp_path / "run")]
    (trace,) = episode["traces"]
    return episode, trace


def played_directly(info: dict[str, Any], reply: Any, max_replies: int = 10) -> tuple[Any, list[float], dict[str, Any]]:
    """The same replies played on the env itself: the env, its step rewards and its last step's info."""
    env = affectgym.make(info["env"], split=info["split"], **info["env_kwargs"])
    observation, _ = env.reset(seed=info["seed"], options={"scenario_id": info["scenario_id"]})
    messages, rewards, step_info = [{"role": "user", "content": observation}], [], {}
    for _ in range(max_replies):
        text = reply({"messages": messages})
        observation, reward, terminated, truncated, step_info = env.step(text)
        rewards.append(reward)
        if terminated or truncated:
            break
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": observation}]
    return env, rewards, step_info


def test_vf_eval_of_the_taskset_gives_affectgyms_returns_and_components_and_ends_on_the_answer(tmp_path):
    with OpenAIServer(scripted) as server:
        result = verifiers_command(
            "vf-eval", "--env.taskset.env", SARCASM, "-n", "3", "-c", "3", "-o", str(tmp_path / "run"),
            cwd=tmp_path, server=server,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    episodes = read_episodes(tmp_path / "run")
    assert len(episodes) == 3
    for episode in episodes:
        (trace,) = episode["traces"]
        assert trace["errors"] == [] and not server.requests[0].get("tools"), "tool calls travel in the text"
        info = episode["task"]["data"]["info"]
        _, rewards, step_info = played_directly(info, scripted)
        assert len(rewards) == 2 and trace["info"]["affectgym_step_rewards"] == rewards
        assert trace["rewards"]["affectgym_reward"]["score"] == pytest.approx(sum(rewards), abs=1e-12)
        assert trace["metrics"] == pytest.approx(step_info["reward_components"], abs=1e-12)
        assert trace["info"]["affectgym_outcome"] == step_info["outcome"]
        last = trace["nodes"][-1]["message"]
        assert last["role"] == "assistant" and last["content"].startswith("<final>"), "nothing after the answer"
        assert episode["task"]["data"]["name"] == f"{SARCASM}:eval:{info['scenario_id']}"


@pytest.mark.slow
def test_an_episode_vf_eval_stops_at_its_turn_cap_gets_what_the_env_pays_an_unanswered_one(tmp_path):
    with OpenAIServer(lambda request: PROSODY_CALL) as server:
        result = verifiers_command(
            "vf-eval", "--env.taskset.env", SARCASM, "--env.player.max-turns", "2", "-n", "1", "-o", str(tmp_path / "run"),
            cwd=tmp_path, server=server,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    ((trace,),) = [episode["traces"] for episode in read_episodes(tmp_path / "run")]
    assert [node["message"]["role"] for node in trace["nodes"]].count("assistant") == 2
    env, rewards, _ = played_directly(trace["task"]["data"]["info"], lambda request: PROSODY_CALL, max_replies=2)
    unanswered = episode_result(env)
    assert trace["info"]["affectgym_step_rewards"] == rewards and "affectgym_outcome" not in trace["info"]
    assert trace["rewards"]["affectgym_reward"]["score"] == pytest.approx(unanswered.total, abs=1e-12)
    assert trace["metrics"] == pytest.approx(unanswered.components, abs=1e-12)


@pytest.mark.slow
def test_a_model_call_failing_mid_episode_leaves_vf_eval_running_and_the_episode_scored_unanswered_naming_the_error(tmp_path):
    def failing_after_the_tool_call(request: dict[str, Any]) -> Any:
        return Reply(status=500) if any(m.get("role") == "assistant" for m in request["messages"]) else PROSODY_CALL

    episode, trace = one_vf_eval_episode(tmp_path, failing_after_the_tool_call)
    assert not episode["ok"] and not trace["ok"], "verifiers still counts it errored (and vf-eval --resume plays it again)"
    assert (trace["errors"][-1]["type"], trace["errors"][-1]["status_code"]) == ("ProviderError", 500)
    assert trace["info"]["affectgym_error"]["type"] == "ProviderError" and "injected failure 500" in trace["info"]["affectgym_error"]["message"]
    env, rewards, _ = played_directly(trace["task"]["data"]["info"], lambda request: PROSODY_CALL, max_replies=1)
    unanswered = episode_result(env)
    assert trace["info"]["affectgym_step_rewards"] == rewards and "affectgym_outcome" not in trace["info"]
    assert trace["rewards"]["affectgym_reward"]["score"] == pytest.approx(unanswered.total, abs=1e-12)
    assert trace["metrics"] == pytest.approx(unanswered.components, abs=1e-12)


def test_vf_validate_finds_the_reference_answer_above_no_answer_and_records_what_no_answer_scores(tmp_path):
    result = verifiers_command(
        "vf-validate", "--taskset.env", SARCASM, "--runtime.type", "subprocess", "-n", "3", "-o", str(tmp_path / "run"),
        "--no-rich", cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (summary_file,) = (tmp_path / "run").rglob("summary.json")
    assert json.loads(summary_file.read_text())["checks"]["gold"]["valid"] == 3
    (results_file,) = (tmp_path / "run").rglob("results.jsonl")
    rows = [json.loads(line) for line in results_file.read_text().splitlines()]
    tasks, env = list(AffectGymTaskset(AffectGymConfig(id="affectgym-verifiers", env=SARCASM))), affectgym.make(SARCASM, split="eval")
    assert sorted(row["index"] for row in rows) == [0, 1, 2]
    for row in rows:
        assert row["gold"]["valid"] is True and row["noop"]["valid"] is True
        info = tasks[row["index"]].data.info
        env.reset(seed=info["seed"], options={"scenario_id": info["scenario_id"]})
        assert row["noop"]["rewards"] == {"affectgym_reward": pytest.approx(episode_result(env).total, abs=1e-12)}


def test_the_tasks_are_the_scenarios_of_the_split_without_their_labels(caplog):
    env = affectgym.make(SARCASM, split="train")
    with caplog.at_level(logging.INFO, logger="affectgym.integrations.verifiers"):
        tasks = list(AffectGymTaskset(AffectGymConfig(id="affectgym-verifiers", env=SARCASM, split="train")))
    assert [task.data.info["scenario_id"] for task in tasks] == env.unwrapped.scenario_ids
    assert f"{SARCASM}: {len(tasks)} tasks, the scenarios of split 'train'" in caplog.messages
    first = tasks[0].data
    _, info = env.reset(seed=first.info["seed"], options={"scenario_id": first.info["scenario_id"]})
    assert [m.content for m in first.prompt] == [m["content"] for m in info["messages"]]
    assert set(first.info) == {"env", "env_kwargs", "split", "scenario_id", "seed"}, "no gold label in a task"


def test_the_taskset_names_what_it_cannot_serve():
    with pytest.raises(ValueError, match="unknown env id 'affectgym/Nope-v0'; registered affectgym envs: affectgym/Sarcasm-v0"):
        AffectGymConfig(env="affectgym/Nope-v0")
    with pytest.raises(ValueError, match="affectgym/EmotionState-v0 is a numeric env"):
        list(AffectGymTaskset(AffectGymConfig(id="affectgym-verifiers", env="affectgym/EmotionState-v0")))


def test_building_the_env_in_process_leaves_the_processs_sigterm_and_sigint_handlers_as_they_were():
    import verifiers.v1 as vf

    received: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, lambda sig, frame: received.append(sig))
    try:
        config = AffectGymEnvConfig(taskset=AffectGymConfig(id="affectgym-verifiers", env=SARCASM))
        env = vf.load_environment(config)  # as vf-eval builds it: the env class the taskset id exports
        assert isinstance(env, AffectGymEnv) and len(list(env.taskset)) == len(affectgym.make(SARCASM, split="eval").unwrapped.scenario_ids)
        assert signal.getsignal(signal.SIGINT) is previous[signal.SIGINT]
        os.kill(os.getpid(), signal.SIGTERM)
        assert received == [signal.SIGTERM]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


HOSTILE_TOOL_CALLS = (
    '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "get_prosody_features", "arguments": {"detail": "' + "x" * 32_768 + '"}}</tool_call>',
    '<tool_call>{"name": "get_prosody_features", "arguments": {"detail": </tool_call>',
)


@pytest.mark.slow
def test_hostile_tool_calls_under_vf_eval_get_what_the_env_pays_them_and_the_episode_goes_on(tmp_path):
    def hostile_then_answer(request: dict[str, Any]) -> str:
        replies = sum(1 for m in request["messages"] if m.get("role") == "assistant")
        return HOSTILE_TOOL_CALLS[replies] if replies < len(HOSTILE_TOOL_CALLS) else '<final>{"label": "sincere", "confidence": 0.5}</final>'

    episode, trace = one_vf_eval_episode(tmp_path, hostile_then_answer)
    assert trace["errors"] == []
    _, rewards, step_info = played_directly(episode["task"]["data"]["info"], hostile_then_answer)
    assert len(rewards) == 4 and trace["info"]["affectgym_step_rewards"] == rewards
    assert trace["rewards"]["affectgym_reward"]["score"] == pytest.approx(sum(rewards), abs=1e-12)
    assert trace["info"]["affectgym_outcome"] == step_info["outcome"]
