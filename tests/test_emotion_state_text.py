"""Specification of affectgym/EmotionStateText-v0 (text form of the emotion-state control task)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from affectgym.envs.emotion_state import EMOTIONS, next_state, reward_components, step_reward
from affectgym.envs.emotion_state_text import EmotionStateTextEnv, parse_emotion_action


def _json(values) -> str:
    return json.dumps(dict(zip(EMOTIONS, [float(v) for v in values], strict=True)))


def _play(env: EmotionStateTextEnv, policy, arc: str) -> tuple[float, dict]:
    env.reset(seed=0, options={"scenario_id": arc})
    total, done, info, k = 0.0, False, {}, 0
    schedule = env.core.schedules[env.core.arc_ids[arc]]
    while not done:
        _, reward, terminated, truncated, info = env.step(policy(schedule[k], k))
        total += reward
        done = terminated or truncated
        k += 1
    return total, info


def test_observation_shows_situation_state_in_words_and_numbers_and_target():
    env = EmotionStateTextEnv()
    text, info = env.reset(seed=0, options={"scenario_id": "argument"})
    assert "Situation:" in text and "Current state:" in text and "Target (calm):" in text
    assert "neutral 0.80 (strong)" in text
    assert info["tools"] == [] and info["scenario_id"] == "argument"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("I feel great", "no JSON object"),
        ('{"joy": 1', "no JSON object"),
        ('{"joy": 1,}', "does not parse"),
        ('{"joy": 0.5}', "is missing anger"),
        (_json([0.1] * 6 + [1.5]), "numbers in [0, 1] for surprise"),
        (
            json.dumps({**dict.fromkeys(EMOTIONS, 0.1), "anger": True}),
            "numbers in [0, 1] for anger",
        ),
        (json.dumps({**dict.fromkeys(EMOTIONS, 0.1), "love": 1}), "unknown keys love"),
    ],
)
def test_malformed_actions_get_a_clear_message_and_the_base_penalty(text, fragment):
    env = EmotionStateTextEnv()
    env.reset(seed=0)
    state_before = env._batch.state.copy()
    observation, reward, terminated, truncated, info = env.step(text)
    assert fragment in observation and "accepted" in observation
    assert reward == pytest.approx(-0.05) and not terminated and not truncated
    np.testing.assert_array_equal(env._batch.state, state_before)
    assert parse_emotion_action(text)[0] is None


def test_json_inside_prose_or_code_fences_is_read():
    action, error = parse_emotion_action(
        "Sure:\n```json\n" + _json([0, 0, 0, 1, 0, 0, 0.25]) + "\n```"
    )
    assert error is None and action.tolist() == [0, 0, 0, 1, 0, 0, 0.25]


def test_step_rewards_are_the_numeric_kernels_divided_by_steps_and_sum_to_the_score():
    env = EmotionStateTextEnv()
    env.reset(seed=0, options={"scenario_id": "good_news"})
    schedule = env.core.schedules[env.core.arc_ids["good_news"]]
    core = env.core
    mirror = schedule[:1].astype(np.float64)
    rewards = []
    for k in range(env.steps):
        action = schedule[k]
        prev, mirror = mirror, next_state(mirror, action[None].astype(np.float64), core.multipliers, core.alpha)
        components = reward_components(mirror, prev, schedule[k][None].astype(np.float64), core.smoothness_scale)
        expected = step_reward(components, core.weights)
        _, reward, terminated, truncated, info = env.step(_json(action))
        rewards.append(reward)
        if k < env.steps - 1:
            assert reward == pytest.approx(float(expected[0]) / env.steps, abs=1e-6)
            assert set(info["reward_components"]) == {"target_match", "smoothness", "intensity"}
    assert terminated and not truncated
    assert sum(rewards) == pytest.approx(info["episode_reward"], abs=1e-9)
    ref_text, ref_trace = env.reference_answer(env.scenario)
    assert env.score(env.scenario, ref_text, ref_trace).total == pytest.approx(
        info["episode_reward"], abs=1e-9
    )


def test_commanding_the_target_beats_loud_silent_and_frozen_canaries_on_every_arc():
    env = EmotionStateTextEnv()
    for scenario in env.scenarios:
        reference = env.score(scenario, *env.reference_answer(scenario)).total
        for name, (text, trace) in env.canaries(scenario).items():
            assert env.score(scenario, text, trace).total < reference - 0.02, (scenario.id, name)


def test_turn_limit_truncates_and_missing_steps_score_zero():
    env = EmotionStateTextEnv(steps=4, spare_turns=1)
    env.reset(seed=0, options={"scenario_id": "good_news"})
    env.step("nonsense")
    env.step("more nonsense")
    env.step(_json([0.05] * 7))
    env.step(_json([0.05] * 7))
    observation, reward, terminated, truncated, info = env.step(_json([0.05] * 7))
    assert truncated and not terminated and info["truncated_unanswered"]
    assert "Turn limit" in observation
    full, _ = _play(EmotionStateTextEnv(steps=4), lambda target, k: _json(target), "good_news")
    assert info["episode_reward"] < full


def test_same_seed_picks_the_same_arc_and_split_partitions_the_arcs():
    a, b = EmotionStateTextEnv(), EmotionStateTextEnv()
    assert a.reset(seed=5)[1]["scenario_id"] == b.reset(seed=5)[1]["scenario_id"]
    train, validation, evaluation = (set(EmotionStateTextEnv(split=split).scenario_ids)
                                     for split in ("train", "validation", "eval"))
    assert train and validation and evaluation
    assert not train & evaluation and not train & validation and not validation & evaluation
    assert train | validation | evaluation == set(EmotionStateTextEnv().scenario_ids)


def test_affectgym_checker_passes_gymnasium_fuzz_and_canary_checks():
    from affectgym.envs.checker import check_env

    report = check_env(EmotionStateTextEnv(), fuzz_actions=300, max_scenarios=10)
    assert not report.problems
