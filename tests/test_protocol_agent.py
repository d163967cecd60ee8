"""The protocol demonstrator plays the tool protocol and carries no label information."""

from __future__ import annotations

import json

import pytest

import affectgym
from affectgym.eval import EvalConfig, run_eval

FORM = {"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "rubric": "label"}


@pytest.fixture(scope="module")
def train_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("protocol")
    run_eval(EvalConfig(env_id="affectgym/Sarcasm-v0", agent="protocol", out=out, split="train", env_kwargs=FORM,
                        progress=False))
    return out


def test_protocol_episodes_make_the_flat_tool_calls_in_one_message_then_answer(train_run):
    summary = json.loads((train_run / "summary.json").read_text())
    assert summary["tool_use"]["tool_use_rate"] == 1.0 and summary["tool_use"]["mean_tool_calls"] == 2.0
    assert summary["tool_use"]["answered_rate"] == 1.0 and summary["tool_use"]["invalid_actions_mean"] == 0.0
    record = json.loads((train_run / "results.jsonl").read_text().splitlines()[0])
    assistant = [m["content"] for m in record["messages"] if m["role"] == "assistant"]
    assert record["tool_calls"] == ["get_transcript", "get_prosody_features"]
    assert len(assistant) == 2 and assistant[1] in ("Yes", "No")


def test_protocol_demonstrations_are_at_chance_on_the_train_split(train_run):
    records = [json.loads(line) for line in (train_run / "results.jsonl").read_text().splitlines()]
    correct = sum(r["outcome"]["correct"] for r in records)
    n = len(records)
    # a binomial 99.9% band around chance: a demonstrator that peeked would sit far outside it
    assert n == len(affectgym.make("affectgym/Sarcasm-v0", split="train").unwrapped.scenarios)
    assert abs(correct / n - 0.5) < 3.3 * (0.25 / n) ** 0.5


def test_protocol_answer_depends_on_the_episode_seed_only_never_on_the_clip():
    from affectgym.agents.protocol import ProtocolAgent

    env = affectgym.make("affectgym/Sarcasm-v0", split="train", **FORM)
    agent = ProtocolAgent("affectgym/Sarcasm-v0", FORM)
    answers = {}
    for scenario in env.unwrapped.scenarios[:12]:
        _, info = env.reset(options={"scenario_id": scenario.id})
        agent.reset(seed=7)
        _, _, _, _, info = env.step(agent.act("", info))
        answers.setdefault(agent.act("", info), set()).add(scenario.label)
    assert len(answers) == 1 and len(next(iter(answers.values()))) == 2  # one answer for clips of both labels


def test_protocol_agent_refuses_an_env_without_labels():
    from affectgym.agents.registry import make_agent

    with pytest.raises(ValueError, match="label_set is empty"):
        make_agent("protocol", env_id="affectgym/EmotionStyle-v0", env_kwargs={"classifier": "nade"})
