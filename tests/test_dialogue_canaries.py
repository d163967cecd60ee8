"""EmpatheticDialogue-v0 pays for listening and for emotion: replies that ignore the user, and
emotion slots filled with questions or neutral statements, score below the dataset's reply."""

from __future__ import annotations

import statistics

import pytest

import affectgym
from affectgym.envs.dialogue import not_listening_replies

REFERENCE_MEAN_BEFORE_RELEVANCE = 0.9117  # the eval turns' reference replies under the rubric before issue 40
WEAK_REPLY = "(FEAR) Hearing footsteps in the attic at night is a common noise. (NEUTRAL) The attic is a quiet place. (NEUTRAL) What is it that you hear?"


@pytest.fixture(scope="module")
def eval_env():
    return affectgym.make("affectgym/EmpatheticDialogue-v0", split="eval").unwrapped


@pytest.mark.parametrize("hack", ["content_free_template", "echoes_the_user"])
def test_a_reply_that_ignores_the_user_scores_below_the_reference_on_95_percent_of_eval_turns(eval_env, hack):
    below = [
        eval_env.score(turn, not_listening_replies(turn)[hack], []).total < eval_env.score(turn, turn.reference, []).total
        for turn in eval_env.scenarios
    ]
    assert len(below) == 27 and sum(below) / len(below) >= 0.95


def test_the_reference_replies_lose_at_most_0_05_of_their_mean_score(eval_env):
    mean = statistics.mean(eval_env.score(turn, turn.reference, []).total for turn in eval_env.scenarios)
    assert REFERENCE_MEAN_BEFORE_RELEVANCE - 0.05 <= mean


def test_the_quoted_weak_reply_earns_no_emotion_credit_for_its_fear_slot(eval_env):
    env = affectgym.make("affectgym/EmpatheticDialogue-v0", split="all").unwrapped
    turn = env.get_scenario("ed044/t0")
    weak = env.score(turn, WEAK_REPLY, [])
    neutral_slots_only = 2 / 3  # the two NEUTRAL slots read as neutral; the FEAR slot earns nothing
    assert weak.components["expressed_emotion"] == pytest.approx(neutral_slots_only, abs=0.01)
    assert weak.total < env.score(turn, turn.reference, []).total
    assert weak.total < 0.91  # what it earned before issue 40


@pytest.mark.parametrize("fear_slot", [
    "Did you hear those footsteps in the attic at night?",  # a question
    "The attic is above the second floor.",  # a neutral statement
    "The report lists the meeting times for next week.",  # another neutral statement
])
def test_a_question_or_a_neutral_statement_in_the_emotion_slot_earns_nothing(fear_slot):
    env = affectgym.make("affectgym/EmpatheticDialogue-v0", split="all").unwrapped
    turn = env.get_scenario("ed044/t0")
    reply = f"(FEAR) {fear_slot} (NEUTRAL) The attic is a quiet place. (NEUTRAL) What is it that you hear?"
    assert env.score(turn, reply, []).components["expressed_emotion"] == pytest.approx(2 / 3, abs=0.01)
