"""LM-free baselines on the embedded sarcasm corpora: v1 falls to one cue, v2 needs the tools' cues together."""

from __future__ import annotations

import pytest

import affectgym
from affectgym.agents.label_baselines import (
    MajorityAgent,
    ProbeAgent,
    ProsodyRuleAgent,
    RandomAgent,
)


def play_split(agent, env_id="affectgym/Sarcasm-v0", split="eval", **env_kwargs) -> list[dict]:
    env = affectgym.make(env_id, split=split, **env_kwargs)
    outcomes = []
    for index, scenario_id in enumerate(env.unwrapped.scenario_ids):
        observation, info = env.reset(seed=index, options={"scenario_id": scenario_id})
        agent.reset(seed=index)
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
            done = terminated or truncated
        assert terminated, f"{agent.name} did not answer {scenario_id}"
        outcomes.append(info["outcome"])
    return outcomes


def accuracy(outcomes: list[dict]) -> float:
    return sum(o["correct"] for o in outcomes) / len(outcomes)


V1 = {"dataset": "embedded-sarcasm-v1"}


@pytest.fixture(scope="module")
def eval_outcomes():
    return {
        "prosody-rule": play_split(ProsodyRuleAgent()),
        "feature-probe": play_split(ProbeAgent(features="tools")),
        "probe-text": play_split(ProbeAgent(features="text")),
        "probe": play_split(ProbeAgent()),
        "majority": play_split(MajorityAgent("affectgym/Sarcasm-v0")),
        "random": play_split(RandomAgent("affectgym/Sarcasm-v0")),
    }


def test_prosody_rule_solves_the_v1_corpus_where_one_cue_decides():
    assert accuracy(play_split(ProsodyRuleAgent(env_kwargs=V1), **V1)) >= 0.85


def test_prosody_rule_refitted_on_v2_stays_near_one_cue(eval_outcomes):
    assert accuracy(eval_outcomes["prosody-rule"]) <= 0.80


def test_feature_probe_hears_sarcasm_from_the_tools_on_v2(eval_outcomes):
    assert accuracy(eval_outcomes["feature-probe"]) >= 0.85
    assert accuracy(eval_outcomes["feature-probe"]) >= accuracy(eval_outcomes["prosody-rule"]) + 0.10


def test_text_only_probe_cannot_decide_pivot_clips(eval_outcomes):
    pivots = [o for o in eval_outcomes["probe-text"] if o["pivot"]]
    assert len(pivots) >= 10
    assert accuracy(pivots) <= 0.65


def test_probe_with_prosody_beats_text_only_probe(eval_outcomes):
    assert accuracy(eval_outcomes["probe"]) > accuracy(eval_outcomes["probe-text"])


def test_trivial_baselines_sit_at_chance(eval_outcomes):
    for name in ("majority", "random"):
        assert 0.25 <= accuracy(eval_outcomes[name]) <= 0.75
    assert all(0 <= o["confidence"] <= 1 for outcomes in eval_outcomes.values() for o in outcomes)


def test_prosody_rule_refuses_a_label_set_it_cannot_threshold():
    with pytest.raises(ValueError, match="sarcastic/sincere"):
        ProsodyRuleAgent("affectgym/SpeechEmotion-v0")
