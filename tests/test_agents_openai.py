"""OpenAIAgent against a real HTTP server on 127.0.0.1 speaking the chat-completions wire format."""

from __future__ import annotations

import asyncio
import threading

import pytest
from openai_server import OpenAIServer, Reply, ToolCall
from toy_env import ToyMoodEnv

from affectgym.agents.openai_agent import OpenAIAgent


def toy_policy(request):
    """Call read_note until a tool output is in the chat, then answer."""
    if any(message["role"] == "tool" for message in request["messages"]):
        return "<answer>happy</answer>"
    return ToolCall("read_note", {})


def play(agent, scenario_id="n01"):
    env = ToyMoodEnv()
    observation, info = env.reset(options={"scenario_id": scenario_id})
    actions = []
    done = False
    while not done:
        actions.append(agent.act(observation, info))
        observation, _, terminated, truncated, info = env.step(actions[-1])
        done = terminated or truncated
    return actions, info


def test_tool_calls_round_trip_through_the_wire_format():
    with OpenAIServer(toy_policy, api_key="sk-test") as server:
        agent = OpenAIAgent("test-model", base_url=server.url, api_key="sk-test")
        actions, info = play(agent)
        agent.close()
    assert actions == ['<tool_call>{"name": "read_note", "arguments": {}}</tool_call>', "<answer>happy</answer>"]
    assert info["episode_reward"] == pytest.approx(1.0)
    first, second = server.requests
    assert first["tools"][0]["function"]["name"] == "read_note" and first["tool_choice"] == "auto"
    assistant, tool = second["messages"][2], second["messages"][3]
    assert assistant["content"] is None and assistant["tool_calls"][0]["function"]["name"] == "read_note"
    assert tool == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "The sun came out and my sister called."}


def test_text_before_a_tool_call_is_kept_in_the_action():
    with OpenAIServer([Reply(content="Let me read it.", tool_calls=[ToolCall("read_note", {})])]) as server:
        agent = OpenAIAgent("test-model", base_url=server.url)
        env = ToyMoodEnv()
        observation, info = env.reset(options={"scenario_id": "n02"})
        action = agent.act(observation, info)
    assert action == 'Let me read it.\n<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'


def test_failed_requests_are_retried_with_backoff():
    with OpenAIServer(toy_policy, fail_first=2, fail_status=503) as server:
        agent = OpenAIAgent("test-model", base_url=server.url, max_retries=2)
        actions, _ = play(agent)
    assert len(actions) == 2 and server.calls == 4


def test_an_error_after_the_last_retry_reaches_the_caller():
    import openai

    with OpenAIServer(toy_policy, fail_first=10, fail_status=500) as server:
        agent = OpenAIAgent("test-model", base_url=server.url, max_retries=0)
        with pytest.raises(openai.InternalServerError):
            play(agent)


def test_requests_in_flight_are_bounded_across_workers():
    with OpenAIServer(toy_policy, latency_s=0.05) as server:
        agent = OpenAIAgent("test-model", base_url=server.url, max_concurrency=2)
        workers = [threading.Thread(target=play, args=(agent.for_worker(),)) for _ in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert server.calls == 12 and server.max_in_flight == 2


def test_async_act_runs_concurrent_requests():
    env = ToyMoodEnv()
    _, info = env.reset(options={"scenario_id": "n01"})

    async def many(agent):
        return await asyncio.gather(*(agent.aact("", info) for _ in range(4)))

    with OpenAIServer(toy_policy, latency_s=0.05) as server:
        replies = asyncio.run(many(OpenAIAgent("test-model", base_url=server.url)))
    assert set(replies) == {'<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'}
    assert server.max_in_flight > 1


def test_a_named_key_variable_that_is_unset_is_an_error(monkeypatch):
    monkeypatch.delenv("MY_ROUTER_KEY", raising=False)
    with pytest.raises(ValueError, match="MY_ROUTER_KEY"):
        OpenAIAgent("m", base_url="http://127.0.0.1:9/v1", api_key_env="MY_ROUTER_KEY")


def sarcasm_policy(request):
    """Measure the prosody once, then answer."""
    if any(message["role"] == "tool" for message in request["messages"]):
        return '<final>{"label": "sarcastic", "confidence": 0.6}</final>'
    return ToolCall("get_prosody_features", {}, id="srv-call-7")


def test_native_tools_replace_the_prompts_text_tool_call_format_and_the_run_keeps_raw_messages_and_usage(tmp_path):
    from affectgym.eval import EvalConfig, run_eval
    from affectgym.eval.results import read_results

    with OpenAIServer(sarcasm_policy) as server:
        agent = OpenAIAgent("test-model", base_url=server.url)
        run_eval(EvalConfig(env_id="affectgym/Sarcasm-v0", agent="openai", out=tmp_path / "run", n=1, split="eval",
                            progress=False), agent=agent)
        agent.close()
    system = server.requests[0]["messages"][0]["content"]
    assert "<tool_call>" not in system and "Call a tool through the function-calling tools of this chat" in system
    assert "<final>" in system, "the answer format is still asked for as text"
    (record,), _ = read_results(tmp_path / "run" / "results.jsonl")
    raw = record["agent_log"]["raw_messages"]
    assert [m["role"] for m in raw] == ["assistant", "assistant"] and raw[0]["tool_calls"][0]["id"] == "srv-call-7"
    usage = record["agent_log"]["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert record["reward"] is not None and record["tool_calls"] == ["get_prosody_features"]


def test_each_episode_logs_only_its_own_requests():
    with OpenAIServer(toy_policy) as server:
        agent = OpenAIAgent("test-model", base_url=server.url)
        play(agent)
        agent.reset(seed=1)
        play(agent, "n02")
        agent.close()
    assert len(agent.episode_log()["raw_messages"]) == 2
