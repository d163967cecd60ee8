"""Hostile agent messages, bad reset options and non-finite numeric actions (issue 14, items 1-6)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from toy_env import ToyMoodEnv

import affectgym
from affectgym.data.dialogues import split_tagged
from affectgym.envs.checker import check_env, hostile_actions, hostile_actions_for
from affectgym.envs.core import ANSWER_AFTER_TOOL_CALLS, AffectEnv
from affectgym.envs.emotion_state import EmotionStateEnv, EmotionStateVectorEnv
from affectgym.envs.emotion_state_text import EmotionStateTextEnv
from affectgym.envs.parsing import (
    MAX_JSON_DEPTH,
    last_json_object,
    loads_json,
    parse_tool_calls,
    tagged_blocks,
)
from affectgym.envs.registration import affectgym_env_ids
from affectgym.envs.sarcasm import SarcasmEnv

CALL = '<tool_call>{"name": "get_transcript", "arguments": {}}</tool_call>'
ANSWER = '<final>{"label": "sarcastic", "confidence": 0.8}</final>'


def text_env_ids() -> list[str]:
    ids = []
    for env_id in affectgym_env_ids():
        made = gym.make(env_id)
        if isinstance(made.unwrapped, AffectEnv):
            ids.append(env_id)
        made.close()
    return ids


TEXT_ENV_IDS = text_env_ids()


@pytest.fixture(scope="module", params=TEXT_ENV_IDS)
def text_env(request):
    env = affectgym.make(request.param).unwrapped
    yield env
    env.close()


# ----------------------------------------------------------------------------- item 1: huge integers
@pytest.mark.parametrize(
    "action",
    [
        '<tool_call>{"name":"get_transcript","arguments":{"x":' + "9" * 5000 + "}}</tool_call>",
        '<final>{"label":"sarcastic","confidence":' + "1" * 5000 + "}</final>",
    ],
)
def test_integers_beyond_pythons_digit_limit_are_an_invalid_action_not_an_exception(action):
    env = SarcasmEnv(split="all")
    env.reset(seed=0)
    observation, reward, terminated, truncated, _ = env.step(action)
    assert observation.startswith("Error") and reward == pytest.approx(-0.05) and not terminated
    if "tool_call" in action:
        assert "integer of 5,000 digits (at most 100 are read)" in observation


def test_json_reader_refuses_long_integers_and_deep_nesting_with_a_reason():
    assert loads_json('{"x": ' + "9" * 101 + "}")[1] == "it holds an integer of 101 digits (at most 100 are read)"
    assert loads_json('{"x": ' + "9" * 100 + "}")[0] == {"x": int("9" * 100)}
    assert loads_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))[1] == "it is nested deeper than 100 levels"
    assert loads_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)[1] is None
    assert last_json_object('{"confidence": -' + "1" * 5000 + "}")[1].startswith("the JSON object does not parse (it holds")


# ----------------------------------------------------------------------------- item 2: deep nesting
def test_deeply_nested_emotion_action_is_refused_with_the_depth_limit():
    env = EmotionStateTextEnv()
    env.reset(seed=0)
    observation, reward, terminated, *_ = env.step('{"anger": ' + "[" * 3000 + "]" * 3000 + "}")
    assert "nested deeper than 100 levels" in observation and "accepted" in observation
    assert reward == pytest.approx(-0.05) and not terminated


def test_deep_tool_call_arguments_are_refused_with_the_depth_limit():
    parsed = parse_tool_calls('<tool_call>{"name": "f", "arguments": ' + "[" * 3000 + "]" * 3000 + "}</tool_call>")
    assert not parsed.calls and "nested deeper than 100 levels" in parsed.errors[0]


# ----------------------------------------------------------------------------- item 3: linear-time parsing
def test_every_text_env_answers_every_hostile_action_of_max_length(text_env):
    low, high = text_env.reward_range
    for name, action in hostile_actions_for(text_env).items():
        text_env.reset(seed=0)
        observation, reward, *_ = text_env.step(action)
        assert text_env.observation_space.contains(observation), name
        assert math.isfinite(reward) and low - 1e-9 <= reward <= high + 1e-9, name


def test_dialogue_reply_of_two_words_and_a_run_of_spaces_is_read_as_untagged():
    env = affectgym.make("affectgym/EmpatheticDialogue-v0").unwrapped
    env.reset(seed=0)
    *_, info = env.step("x" + " " * (env.max_action_chars - 2) + "x")
    assert info["parse_error"].startswith("no emotion tags found") and info["reward_components"]["structure"] == 0.0


def test_tag_splitting_keeps_bold_and_spaces_before_a_tag_out_of_the_sentence_before_it():
    lead, segments = split_tagged("(JOY) great **  (NEUTRAL) why? " + " " * 30_000 + "(FEAR)")
    assert lead == "" and [(s.label, s.text) for s in segments] == [("HAPPINESS", "great"), ("NEUTRAL", "why?"), ("FEAR", "")]


def test_emotion_state_text_reads_a_message_of_only_opening_braces_as_no_json():
    env = EmotionStateTextEnv()
    env.reset(seed=0)
    observation, *_ = env.step("{" * 32_000)
    assert "no JSON object found" in observation


def test_final_answer_after_thousands_of_unclosed_final_tags_is_still_read():
    env = SarcasmEnv(split="all")
    clip = env.scenarios[0]
    env.reset(options={"scenario_id": clip.id})
    text = "<final>" * 4_000 + f'{{"label": "{clip.label}", "confidence": 0.6}}'
    *_, terminated, _, info = env.step(text)
    assert terminated and info["outcome"]["correct"]


def test_last_json_object_treats_an_unclosed_brace_as_prose_and_reads_inside_a_broken_object():
    assert last_json_object('I am torn :-{ so {"label": "sincere", "confidence": 0.5}')[0] == {"label": "sincere", "confidence": 0.5}
    assert last_json_object('{"draft": oops, "final": {"label": "sincere"}}')[0] == {"label": "sincere"}
    assert last_json_object('{"text": "a } inside", "n": 1}')[0] == {"text": "a } inside", "n": 1}
    assert last_json_object("{}" * 16_000)[0] == {}


def test_tagged_blocks_and_fences_read_long_runs_in_one_pass():
    assert tagged_blocks("<final>" * 5_000 + "x", "final") == []
    body = "```json" + " " * 30_000 + '{"name": "f", "arguments": {}}' + " " * 30_000 + "```"
    assert parse_tool_calls(body).calls[0].name == "f"


# ----------------------------------------------------------------------------- item 4: tool call + answer
def test_answer_after_a_tool_call_is_not_read_the_tool_runs_and_the_message_counts_as_invalid():
    env = SarcasmEnv(split="all")
    clip = env.scenarios[0]
    env.reset(options={"scenario_id": clip.id})
    observation, reward, terminated, truncated, info = env.step(CALL + "\n" + ANSWER)
    assert not terminated and not truncated
    assert observation.startswith("Context:") and ANSWER_AFTER_TOOL_CALLS in observation
    assert reward == pytest.approx(-0.05) and info["reward_components"]["invalid_actions"] == pytest.approx(-0.05)
    assert [entry["type"] for entry in env.trace] == ["tool_call", "invalid"]
    *_, terminated, _, info = env.step(f'<final>{{"label": "{clip.label}", "confidence": 0.8}}</final>')
    assert terminated and info["outcome"]["correct"]


def test_reasoning_before_a_tool_call_is_not_read_as_an_answer():
    env = SarcasmEnv(split="all")
    env.reset(seed=0)
    observation, reward, terminated, *_ = env.step(ANSWER + " but let me check the words first. " + CALL)
    assert not terminated and reward == 0.0 and "Error" not in observation


def test_text_after_a_tool_call_that_is_no_answer_is_ignored():
    env = SarcasmEnv(split="all")
    env.reset(seed=0)
    _, reward, terminated, *_ = env.step(CALL + "\nLet me see what it says.")
    assert reward == 0.0 and not terminated


# ----------------------------------------------------------------------------- item 5: reset options
@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"scenario": "sc0001"}, "options['scenario'] must be a scenario object with a str id"),
        ({"scenario_id": ["n01"]}, "options['scenario_id'] must be a scenario id (a str), got list"),
        ({"scenario_idx": 1}, "unknown reset options ['scenario_idx']; accepted: {'scenario_id'"),
        (["n01"], "reset options must be a dict, got list"),
    ],
)
def test_bad_reset_options_raise_a_clear_value_error_and_leave_the_env_usable(options, fragment):
    env = ToyMoodEnv()
    env.reset(seed=0)
    env.step('<tool_call>{"name": "read_note", "arguments": {}}</tool_call>')
    with pytest.raises(ValueError) as raised:
        env.reset(options=options)
    assert fragment in str(raised.value)
    observation, reward, terminated, *_ = env.step("<answer>happy</answer>")
    assert "call reset()" in observation and terminated and reward == pytest.approx(-env.invalid_action_penalty)
    _, info = env.reset(options={"scenario_id": "n01"})
    assert info["scenario_id"] == "n01"
    *_, terminated, _, info = env.step("<answer>happy</answer>")
    assert terminated and info["episode_reward"] > 0


def test_a_string_as_scenario_names_the_scenario_id_option():
    with pytest.raises(ValueError, match=r"pass options=\{'scenario_id': 'sc0001'\}"):
        SarcasmEnv(split="all").reset(options={"scenario": "sc0001"})


def test_emotion_state_text_rejects_a_string_scenario_and_stays_usable():
    env = EmotionStateTextEnv()
    with pytest.raises(ValueError, match="options\\['scenario'\\]"):
        env.reset(options={"scenario": "good_news"})
    env.reset(options={"scenario_id": "good_news"})
    assert env.step(env.fuzz_actions()[1])[1] > 0


# ----------------------------------------------------------------------------- item 6: numeric env
def test_nan_action_is_invalid_keeps_the_state_and_pays_zero():
    env = EmotionStateEnv()
    obs, _ = env.reset(seed=0)
    action = obs[7:14].copy()
    action[2] = np.nan
    state = env.state
    obs, reward, _, _, info = env.step(action)
    assert reward == 0.0 and info["invalid_action"] and set(info["reward_components"].values()) == {0.0}
    np.testing.assert_array_equal(env.state, state)
    np.testing.assert_array_equal(obs[14:21], state)
    for _ in range(5):
        obs, reward, _, _, info = env.step(obs[7:14])
        assert np.isfinite(obs).all() and math.isfinite(reward) and reward > 0 and not info["invalid_action"]


def test_infinite_action_entries_are_clipped_like_any_out_of_range_value():
    env = EmotionStateEnv()
    env.reset(seed=0)
    inf = np.array([np.inf, -np.inf, 0, 0, 0, 0, 0], dtype=np.float32)
    clipped = np.array([1, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    obs_inf, reward_inf, *_ = env.step(inf)
    env.reset(seed=0)
    obs_clip, reward_clip, *_ = env.step(clipped)
    np.testing.assert_array_equal(obs_inf, obs_clip)
    assert reward_inf == reward_clip


@pytest.mark.parametrize(
    "action",
    [
        0.5,
        np.float32(0.5),
        [0.5] * 6,
        [0.5] * 8,
        [[0.5] * 7],
        np.zeros((7, 1)),
        np.zeros((2, 7)),
        [],
        None,
        "abcdefg",
        ["a"] * 7,
        [None] * 7,
        np.zeros(7, dtype=complex),
        np.zeros(7, dtype=bool),
        [[1, 2], [3]],
        {"anger": 1.0},
    ],
)
def test_wrong_action_shape_or_dtype_is_one_clear_value_error(action):
    env = EmotionStateEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(7,\) with a real dtype \(e\.g\. float32.*nothing is broadcast"):
        env.step(action)
    assert math.isfinite(env.step(np.zeros(7, dtype=np.float32))[1])


def test_vector_env_nan_row_is_invalid_and_the_other_rows_step():
    env = EmotionStateVectorEnv(num_envs=3)
    env.reset(seed=0)
    actions = np.full((3, 7), 0.5, dtype=np.float32)
    actions[1, 0] = np.nan
    before = env._batch.state.copy()
    obs, reward, _, _, info = env.step(actions)
    assert info["invalid_action"].tolist() == [False, True, False]
    assert reward[1] == 0.0 and reward[0] > 0 and reward[2] > 0
    assert all(values[1] == 0.0 for values in info["reward_components"].values())
    np.testing.assert_array_equal(obs[1, :7], before[1])
    assert np.isfinite(obs).all()
    obs, reward, *_ = env.step(np.full((3, 7), 0.5, dtype=np.float32))
    assert np.isfinite(obs).all() and np.isfinite(reward).all()


@pytest.mark.parametrize("actions", [np.zeros(7), 0.5, np.zeros((3, 6)), np.zeros((4, 7)), np.zeros((3, 7), dtype=bool)])
def test_vector_env_refuses_other_shapes_without_broadcasting(actions):
    env = EmotionStateVectorEnv(num_envs=3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(3, 7\)"):
        env.step(actions)


# ----------------------------------------------------------------------------- the checker's corpus
def test_hostile_corpus_covers_each_kind_of_attack_and_fits_max_action_chars():
    corpus = hostile_actions(2_000)
    assert all(len(action) <= 2_000 for action in corpus.values())
    for kind in ("big_integer", "deep", "spaces", "final_tags", "surrogate", "tool_call_and_answer"):
        assert any(name.startswith(kind) for name in corpus), kind
    assert "\ud800" in corpus.values()


def test_checker_fuzz_sends_the_hostile_corpus_to_plugin_envs():
    sent = []

    class RecordingEnv(ToyMoodEnv):
        def step(self, action):
            sent.append(action)
            return super().step(action)

    check_env(RecordingEnv(), fuzz_actions=2_000)
    corpus = set(hostile_actions_for(RecordingEnv()).values())
    assert len(corpus & set(sent)) >= 5
    assert any("<tool_call>" in text and "<answer>" in text for text in sent)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", TEXT_ENV_IDS)
def test_every_text_env_survives_20000_fuzzed_actions_with_finite_rewards(env_id):
    report = check_env(affectgym.make(env_id), fuzz_actions=20_000, max_scenarios=5, seed=3)
    assert report.fuzzed_actions >= 20_000 and not report.problems


def test_tool_calls_of_one_message_are_priced_as_if_each_came_alone():
    names = ["get_transcript", "get_prosody_features", "get_pitch_contour", "get_transcript", "get_transcript", "get_transcript"]
    calls = [f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>' for name in names]
    together = SarcasmEnv(split="all")
    together.reset(seed=0)
    one_message = together.step("".join(calls))[1]
    alone = SarcasmEnv(split="all")
    alone.reset(seed=0)
    separate = sum(alone.step(call)[1] for call in calls)
    assert one_message == pytest.approx(separate) and together.reward_range[0] <= one_message < 0


def test_the_hostile_corpus_speaks_no_envs_vocabulary_but_names_the_checked_envs_tool_and_label():
    neutral = "\n".join(hostile_actions(2_000).values())
    assert "sarcastic" not in neutral and "get_transcript" not in neutral
    toy = "\n".join(hostile_actions_for(ToyMoodEnv()).values())
    assert '"name": "read_note"' in toy and '"label": "happy"' in toy and "sarcastic" not in toy
