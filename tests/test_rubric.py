"""A criterion scaled by another reports the product and costs the other's scoring once."""

from __future__ import annotations

import pytest

from affectgym.rewards.rubric import Criterion, Reply, Rubric, Unscored


def counting(value):
    """A batched criterion that returns ``value`` for every reply and counts its calls."""
    def fn(scenarios, replies, traces):
        fn.calls += 1
        return [value(r) if callable(value) else value for r in replies]
    fn.calls = 0
    return fn


def test_a_scaled_criterion_reports_its_value_times_the_other_and_the_other_is_scored_once():
    listens = counting(lambda reply: 0.5 if reply.text == "half" else 1.0)
    rubric = Rubric([Criterion("emotion", lambda s, r, t: 0.8, 0.6, scaled_by="listening"),
                     Criterion("listening", listens, 0.4, batched=True)])

    results = rubric.score_batch([None, None], [Reply("half"), Reply("all")], [[], []])

    assert [r.components for r in results] == [{"emotion": 0.4, "listening": 0.5}, {"emotion": 0.8, "listening": 1.0}]
    assert results[0].total == pytest.approx(0.6 * 0.4 + 0.4 * 0.5)
    assert listens.calls == 1


def test_a_scaling_criterion_that_went_unscored_leaves_the_scaled_one_unscored_and_none_leaves_it_as_is():
    rubric = Rubric([Criterion("emotion", lambda s, r, t: 0.8, scaled_by="judge"),
                     Criterion("judge", lambda s, r, t: Unscored("judge down") if r.text == "down" else None,
                               scorer="judge")])

    down, absent = rubric.score_batch([None, None], [Reply("down"), Reply("up")], [[], []])

    assert down.components["emotion"] is None and down.unscored == {"emotion": "judge down", "judge": "judge down"}
    assert absent.components["emotion"] == 0.8


@pytest.mark.parametrize(("scaled_by", "message"), [
    ("nothing", "scaled by 'nothing', which must be another criterion of the rubric: one of ['listening']"),
    ("emotion", "scaled by 'emotion', which must be another criterion"),
])
def test_scaling_by_a_criterion_the_rubric_lacks_or_by_itself_is_refused(scaled_by, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Rubric([Criterion("emotion", lambda s, r, t: 1.0, scaled_by=scaled_by),
                Criterion("listening", lambda s, r, t: 1.0)])


def test_scaling_by_a_criterion_that_is_itself_scaled_is_refused():
    with pytest.raises(ValueError, match="which is itself scaled by 'c'"):
        Rubric([Criterion("a", lambda s, r, t: 1.0, scaled_by="b"),
                Criterion("b", lambda s, r, t: 1.0, scaled_by="c"),
                Criterion("c", lambda s, r, t: 1.0)])
