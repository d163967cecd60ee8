"""A real OpenAI-compatible model server on CPU: ``transformers serve`` with the embedded SmolLM2-135M-Instruct.

The server is started by ``python -m affectgym.agents.serve_local`` on 127.0.0.1 (a free
port); ``affectgym eval --agent openai:...`` plays real episodes against it, and EmotionStyle's
DSPy judge scores replies through a ``dspy.LM`` pointed at it. Slow: start-up and play take
minutes on a loaded 2-core machine (measured in docs/benchmarks.md, "A model server on CPU").
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("gguf")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

#: Longest wait for the server to load the model and answer ``/v1/models``.
START_TIMEOUT_S = 600
MAX_TOKENS = 24
MAX_TURNS = 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``(base_url, model, process)`` of a running ``transformers serve`` on the embedded SmolLM2."""
    from affectgym.models import smollm2_gguf_path

    try:
        smollm2_gguf_path()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "AFFECTGYM_CACHE": str(tmp_path_factory.getbasetemp() / "affectgym-cache")}  # the cache the other tests share
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "affectgym.agents.serve_local", "--port", str(port)],
                                   stdout=sink, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert process.poll() is None, f"the server exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no /v1/models after {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
                    models = json.load(response)
                break
            except OSError:
                time.sleep(1)
        assert f"play it with --agent openai:smollm2-135m@{base_url}" in log.read_text()
        assert [entry["id"] for entry in models["data"]] == ["smollm2-135m"]
        yield base_url, "smollm2-135m", process
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
def test_eval_plays_real_episodes_against_the_server_and_keeps_usage_and_raw_messages(server, tmp_path):
    from affectgym.agents.openai_agent import action_from_message

    base_url, model, _ = server
    out = tmp_path / "run"
    run = subprocess.run(
        [sys.executable, "-m", "affectgym", "eval", "affectgym/Sarcasm-v0", "--agent", f"openai:{model}@{base_url}",
         "-n", "2", "-t", str(MAX_TOKENS), "--env-kwargs", json.dumps({"max_turns": MAX_TURNS}),
         "--out", str(out), "--no-progress"],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=1800,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    episodes = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(episodes) == 2 and {episode["error"] for episode in episodes} == {None}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reward"]["n"] == 2
    for episode in episodes:
        assert 1 <= episode["turns"] <= MAX_TURNS and episode["reward"] is not None
        log = episode["agent_log"]
        usage = log["usage"]
        assert usage["prompt_tokens"] > 100 * episode["turns"]  # the system prompt and tool schemas, every turn
        assert 1 <= usage["completion_tokens"] <= MAX_TOKENS * episode["turns"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        raw = log["raw_messages"]
        assert len(raw) == episode["turns"] and {message["role"] for message in raw} == {"assistant"}
        played = [message["content"] for message in episode["messages"] if message["role"] == "assistant"]
        assert played == [action_from_message(message.get("content"), message.get("tool_calls")) for message in raw]


@pytest.mark.slow
def test_emotion_styles_dspy_judge_scores_replies_through_the_server(server):
    import dspy

    import affectgym
    from affectgym.rewards.judge import JudgeConfig

    base_url, model, _ = server
    lm = dspy.LM(f"openai/{model}", api_base=base_url, api_key="local", temperature=0.0, max_tokens=96,
                 cache=False, num_retries=0, timeout=600)
    env = affectgym.make("affectgym/EmotionStyle-v0", split="eval", classifier="nade", judge=lm,
                         judge_config=JudgeConfig(cache=False, max_retries=0, max_concurrency=1, timeout_s=600))
    judge = env.unwrapped.judge
    _, info = env.reset(seed=0)
    scenario = env.unwrapped.scenario
    honest, _ = env.unwrapped.reference_answer(scenario)
    replies = [honest, f"I feel {scenario.emotion}. Emotion: {scenario.emotion}."]
    failures = 0
    for reply in replies:
        env.reset(options={"scenario_id": info["scenario_id"]})
        _, _, terminated, _, step = env.step(reply)
        assert terminated
        judged = step["reward_components"].get("judge")
        if step["judge_failures"]:
            assert judged is None  # a failed judging is left out of the reward, never scored 0
        else:
            assert 0.0 <= judged <= 1.0
        failures += step["judge_failures"]
    assert judge.failures == failures and judge.calls >= len(replies)
    answered = [entry for entry in lm.history if entry.get("response") is not None]
    assert answered and all(entry["usage"]["completion_tokens"] >= 1 for entry in answered)
    assert {entry["response_model"] for entry in answered} == {model}


def test_a_folder_without_a_model_is_refused_naming_what_is_accepted(tmp_path):
    from affectgym.agents.serve_local import served_model

    with pytest.raises(FileNotFoundError, match="no config.json.*model alias"):
        served_model(str(tmp_path))


def test_a_model_folder_is_served_under_its_own_name(tmp_path):
    from affectgym.agents.serve_local import served_model

    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "config.json").write_text("{}")
    served = served_model(str(tmp_path / "my-model"), port=8123)
    assert served.folder == (tmp_path / "my-model").resolve() and served.model == "my-model"
    assert served.base_url == "http://127.0.0.1:8123/v1"


def test_bad_limits_on_the_command_line_are_refused_naming_the_setting(tmp_path):
    run = subprocess.run([sys.executable, "-m", "affectgym.agents.serve_local", "--max-pending", "0"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "max_pending must be a whole number of at least 1, got 0" in run.stderr
