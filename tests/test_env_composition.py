"""An env is composed of its scenarios, a task format and a rubric, each a public value it can be given."""

from __future__ import annotations

import pytest

import affectgym
from affectgym.envs.dialogue_format import DialogueFormat
from affectgym.envs.label_format import SHORT_YESNO, LabelFormat
from affectgym.envs.speech_rubrics import SPEECH_RUBRICS, answer_format, signed_correctness
from affectgym.envs.state_text_format import StateTextFormat
from affectgym.envs.style_format import StyleFormat
from affectgym.rewards.rubric import Criterion, Rubric
from affectgym.train.recipes import SARCASM_SHORT_FORM

SARCASM = "affectgym/Sarcasm-v0"
REPLIES = ("Yes", "No.", "no idea", "", "Yes, sarcastic.")


def totals(env, replies=REPLIES) -> list[tuple[str, float]]:
    """Every reply's score on the first 12 clips, with the flat trace, in order."""
    return [
        (reply, env.score(clip, reply, env.flat_trace(clip)).total)
        for clip in env.scenarios[:12]
        for reply in replies
    ]


def test_sarcasm_given_a_rubric_and_a_task_format_scores_as_the_recipe_that_names_them():
    by_name = affectgym.make(SARCASM, **SARCASM_SHORT_FORM).unwrapped
    signed = Rubric([Criterion("correctness", signed_correctness, 0.70), Criterion("format", answer_format, 0.30)])
    composed = affectgym.make(SARCASM, rubric=signed, task_format=LabelFormat(answer="yesno", flat_prompt="compact")).unwrapped
    assert totals(composed) == totals(by_name)
    clip = composed.scenarios[0]
    assert composed.flat_prompt(clip) == by_name.flat_prompt(clip)
    assert composed.reward_range == by_name.reward_range == (-0.75, 1.0)


def test_a_rubric_of_ones_own_criteria_scores_the_env():
    def short(scenario, reply, trace):
        return float(reply.text is not None and len(reply.text) <= 3)

    env = affectgym.make(SARCASM, task_format=SHORT_YESNO,
                         rubric=Rubric([*SPEECH_RUBRICS["label"].criteria, Criterion("short", short, 0.5)])).unwrapped
    clip = next(c for c in env.scenarios if c.label == "sincere")
    result = env.score(clip, "No", env.flat_trace(clip))
    assert result.components["short"] == 1.0 and result.total == pytest.approx(0.70 + 0.30 + 0.5)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"task_format": "tiny"}, "unknown task_format 'tiny'; named formats: json, word, yesno, short-yesno"),
    ({"task_format": {"answer": "yesno", "prompt": "compact"}}, r"unknown task_format fields \['prompt'\]"),
    ({"task_format": 3}, "task_format must be a LabelFormat"),
    ({"rubric": "dense"}, "rubric must be a Rubric or one of multi, single, label, got 'dense'"),
])
def test_a_bad_task_format_or_rubric_is_refused_naming_what_is_accepted(kwargs, message):
    with pytest.raises(ValueError, match=message):
        affectgym.make(SARCASM, **kwargs)


STYLE = ("affectgym/EmotionStyle-v0", {"classifier": "nade"})
DIALOGUE = ("affectgym/EmpatheticDialogue-v0", {})
STATE_TEXT = ("affectgym/EmotionStateText-v0", {})


@pytest.mark.parametrize(("env", "default"), [
    (STYLE, StyleFormat()), (DIALOGUE, DialogueFormat()), (STATE_TEXT, StateTextFormat()),
    (("affectgym/Sarcasm-v0", {}), LabelFormat()),
], ids=lambda value: value[0] if isinstance(value, tuple) else type(value).__name__)
def test_every_text_env_given_its_default_task_format_as_an_object_or_a_name_prompts_as_built(env, default):
    env_id, kwargs = env
    built, given, named = (affectgym.make(env_id, **kwargs, **extra).unwrapped
                           for extra in ({}, {"task_format": default}, {"task_format": "default" if not isinstance(default, LabelFormat) else "json"}))
    assert built.task_format == given.task_format == named.task_format == default
    for scenario in built.scenarios[:5]:
        assert built.flat_prompt(scenario) == given.flat_prompt(scenario) == named.flat_prompt(scenario)
        assert built.reset(options={"scenario_id": scenario.id})[0] == given.reset(options={"scenario_id": scenario.id})[0]


def test_emotion_style_tag_only_format_shows_the_emotion_tag_alone_and_scores_as_the_default():
    default = affectgym.make(*STYLE[:1], **STYLE[1]).unwrapped
    tag_only = affectgym.make(STYLE[0], **STYLE[1], task_format="tag-only").unwrapped
    assert any(s.preface for s in default.scenarios) and not any(s.preface for s in tag_only.scenarios)
    scenario = tag_only.scenarios[0]
    assert tag_only.first_observation(scenario) == f"EMOTION: {scenario.emotion}\n\n{scenario.instruction}"
    reply = "The tide turns twice a day, pulled along by the moon."
    assert tag_only.score(scenario, reply, []).total == default.score(scenario, reply, []).total


def test_dialogue_no_hint_format_asks_with_the_humans_line_alone_and_scores_as_the_default():
    default = affectgym.make(DIALOGUE[0]).unwrapped
    no_hint = affectgym.make(DIALOGUE[0], task_format={"turn_hint": False}).unwrapped
    turn = next(t for t in no_hint.scenarios if t.history)
    assert no_hint.first_observation(turn) == turn.user_line
    assert no_hint.flat_prompt(turn)[1]["content"].endswith(f"\n\n{turn.user_line}")
    reply, trace = default.reference_answer(turn)
    assert no_hint.score(turn, reply, trace).total == default.score(turn, reply, trace).total


def test_emotion_state_text_state_only_format_leaves_out_the_situation_and_the_previous_state():
    env = affectgym.make(STATE_TEXT[0], task_format="state-only").unwrapped
    text, _ = env.reset(seed=0)
    assert "Current state:" in text and "Target (" in text
    assert "Situation:" not in text and "Previous state:" not in text


def test_emotion_state_text_given_a_rubric_scores_with_it_and_ranges_from_its_weights():
    built = affectgym.make(STATE_TEXT[0]).unwrapped
    match_only = Rubric([c for c in built.rubric.criteria if c.name == "target_match"]).with_weights({"target_match": 2.0})
    env = affectgym.make(STATE_TEXT[0], rubric=match_only).unwrapped
    scenario = env.scenarios[0]
    reply, trace = env.reference_answer(scenario)
    assert env.score(scenario, reply, trace).total == pytest.approx(2 * built.score(scenario, reply, trace).components["target_match"])
    assert env.reward_range == pytest.approx((-0.05, 2.0)) and built.reward_range == pytest.approx((-0.05, 1.0))


@pytest.mark.parametrize(("env", "kwargs", "message"), [
    (STYLE, {"task_format": "loud"}, "unknown task_format 'loud'; named formats: default, preface, tag-only"),
    (STYLE, {"task_format": {"preface_fraction": 2}}, r"preface_fraction must be a number in \[0, 1\], got 2"),
    (DIALOGUE, {"task_format": {"turn_hint": "yes"}}, "turn_hint must be true or false, got 'yes'"),
    (DIALOGUE, {"task_format": 3}, r"task_format must be a DialogueFormat, one of default, no-hint or a mapping"),
    (STATE_TEXT, {"task_format": {"numbers": True}}, r"unknown task_format fields \['numbers'\]; accepted: \['situation', 'previous_state'\]"),
    (STATE_TEXT, {"rubric": "mean"}, "rubric must be None .* or a Rubric, got 'mean'"),
], ids=str)
def test_a_text_envs_bad_task_format_is_refused_naming_what_is_accepted(env, kwargs, message):
    with pytest.raises(ValueError, match=message):
        affectgym.make(env[0], **env[1], **kwargs)
