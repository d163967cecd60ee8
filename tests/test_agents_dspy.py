"""DSPyAgent: ReAct over the env's tools, driven by DSPy's own test LM."""

from __future__ import annotations

import pytest
from toy_env import ToyMoodEnv

from affectgym.agents.dspy_agent import DSPyAgent


def test_react_calls_the_env_tool_then_submits_its_answer():
    from dspy.utils import DummyLM

    lm = DummyLM(
        [
            {"next_thought": "I should read the note.", "next_tool_name": "read_note", "next_tool_args": {}},
            {"next_thought": "The writer sounds glad.", "next_tool_name": "finish", "next_tool_args": {}},
            {"reasoning": "Sun and a call from a sister.", "answer": "<answer>happy</answer>"},
        ]
    )
    env = ToyMoodEnv()
    observation, info = env.reset(options={"scenario_id": "n01"})
    rewards = []

    def step(action):
        result = env.step(action)
        rewards.append(result[1])
        return result

    DSPyAgent(lm).play(step, observation, info)
    _, _, _, _, final = env.step("ignored")  # after the end: the env says so
    messages = final["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[2]["tool_calls"][0]["function"]["name"] == "read_note"
    assert messages[3]["content"] == "The sun came out and my sister called."
    assert messages[4]["content"] == "<answer>happy</answer>"
    assert sum(rewards) == pytest.approx(1.0)
    prompt = lm.history[0]["messages"][0]["content"]
    assert "read_note" in prompt and "Read the note with read_note" in prompt


def test_act_explains_that_react_plays_whole_episodes():
    from dspy.utils import DummyLM

    with pytest.raises(NotImplementedError, match="play"):
        DSPyAgent(DummyLM([])).act("", {})
