"""Classification, calibration and pass@k metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from affectgym.eval.metrics import (
    brier_score,
    classification_metrics,
    expected_calibration_error,
    mean_ci95,
    pass_at_k,
    tool_use_stats,
)


def records(pairs, confidences=None):
    confidences = confidences or [None] * len(pairs)
    return [{"label": g, "prediction": p, "confidence": c} for (g, p), c in zip(pairs, confidences, strict=True)]


def test_precision_recall_f1_match_a_hand_computation():
    rows = records([("s", "s"), ("s", "s"), ("s", "n"), ("n", "n"), ("n", "s"), ("n", None)])
    m = classification_metrics(rows)
    # s: tp 2, fp 1, fn 1 -> P 2/3, R 2/3; n: tp 1, fp 1, fn 2 (one unanswered) -> P 1/2, R 1/3
    assert m["per_label"]["s"]["precision"] == pytest.approx(2 / 3) and m["per_label"]["n"]["recall"] == pytest.approx(1 / 3)
    f1_s, f1_n = 2 / 3, 2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3)
    assert m["macro_f1"] == pytest.approx((f1_s + f1_n) / 2)
    assert m["weighted_f1"] == pytest.approx((3 * f1_s + 3 * f1_n) / 6)
    assert m["accuracy"] == pytest.approx(3 / 6) and m["unanswered_rate"] == pytest.approx(1 / 6)
    assert m["labels"] == ["n", "s"] and m["predicted_labels"] == ["n", "s", "(unanswered)"]
    assert m["confusion_matrix"] == [[1, 1, 1], [1, 2, 0]]
    assert m["ece"] is None and m["n_with_confidence"] == 0


def test_wa_ua_and_micro_f1_are_reported_as_speech_emotion_papers_define_them():
    # imbalanced: 4 angry (3 right), 1 sad (wrong); UA weighs each class alike, WA each clip
    m = classification_metrics(records([("angry", "angry")] * 3 + [("angry", "sad"), ("sad", "angry")]))
    assert m["weighted_accuracy"] == pytest.approx(3 / 5)
    assert m["unweighted_accuracy"] == pytest.approx((3 / 4 + 0 / 1) / 2)
    assert m["micro_f1"] == pytest.approx(3 / 5), "with every clip answered, micro F1 is the accuracy"


def test_calibration_from_stated_confidences():
    rows = records([("s", "s"), ("s", "n"), ("n", "n"), ("n", "n")], confidences=[0.9, 0.8, 0.55, 0.65])
    m = classification_metrics(rows, n_bins=2)
    # one bin (0.5-1.0): accuracy 3/4, mean confidence 0.725
    assert m["ece"] == pytest.approx(abs(0.75 - 0.725))
    assert m["brier"] == pytest.approx((0.1**2 + 0.8**2 + 0.45**2 + 0.35**2) / 4)
    assert expected_calibration_error([1.0, 0.0], [True, False], n_bins=10) == 0.0
    assert math.isnan(brier_score([], []))


def test_pass_at_k_edge_cases_and_errors():
    assert pass_at_k(10, 10, 1) == 1.0 and pass_at_k(10, 0, 10) == 0.0
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)


def test_mean_interval_uses_student_t():
    mean, half = mean_ci95([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.302653 * 1.0 / math.sqrt(3), rel=1e-5)
    assert all(math.isnan(v) for v in mean_ci95([]))


def test_tool_use_rate_counts_episodes_with_any_call():
    stats = tool_use_stats([["a", "b"], [], [], ["b"]])
    assert stats["tool_use_rate"] == 0.5 and stats["calls_by_tool"] == {"a": 1, "b": 2}
