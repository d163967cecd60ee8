"""An env is composed of its scenarios, a task format and a rubric, each a public value it can be given."""

from __future__ import annotations

import warnings

import pytest

import affectgym
from affectgym.envs.label_format import SHORT_YESNO, LabelFormat
from affectgym.envs.speech_rubrics import SPEECH_RUBRICS, answer_format, signed_correctness
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


def test_the_former_arguments_still_work_with_a_warning_that_names_the_new_form():
    with pytest.warns(FutureWarning, match=r"pass task_format=\{'answer': 'yesno', 'flat_prompt': 'compact'\}, rubric='label'"):
        old = affectgym.make(SARCASM, answer="yesno", flat_prompt="compact", reward="label").unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = affectgym.make(SARCASM, **SARCASM_SHORT_FORM).unwrapped
    assert old.task_format == new.task_format == SHORT_YESNO and totals(old) == totals(new)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"task_format": "tiny"}, "unknown task_format 'tiny'; named formats: json, word, yesno, short-yesno"),
    ({"task_format": {"answer": "yesno", "prompt": "compact"}}, r"unknown task_format fields \['prompt'\]"),
    ({"task_format": 3}, "task_format must be a LabelFormat"),
    ({"rubric": "dense"}, "rubric must be a Rubric or one of multi, single, label, got 'dense'"),
    ({"answer": "yesno", "task_format": "json"}, r"pass \['answer'\] inside task_format, not beside it"),
])
def test_a_bad_task_format_or_rubric_is_refused_naming_what_is_accepted(kwargs, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ValueError, match=message):
            affectgym.make(SARCASM, **kwargs)
