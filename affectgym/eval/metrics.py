"""Evaluation metrics over episode records: classification, calibration, pass@k, intervals.

A classification env reveals ``prediction``, ``label``, ``correct`` and ``confidence`` (and
boolean subset flags such as ``pivot``) in ``info["outcome"]`` once an episode is over; the
eval runner keeps that outcome under each episode record's ``"outcome"``, and the env's
``"classification"`` summary (:mod:`affectgym.eval.summary`) passes those outcomes to
:func:`classification_metrics`. Unanswered episodes (``prediction`` ``None``) count as wrong.

>>> round(pass_at_k(n=5, c=2, k=2), 4)
0.7
>>> mean_ci95([1.0, 1.0, 1.0])
(1.0, 0.0)
>>> round(brier_score([0.9, 0.6], [True, False]), 3)
0.185
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: Stands for "no answer" among the predicted labels.
UNANSWERED = "(unanswered)"
#: Outcome keys that are not subset flags.
_OUTCOME_FIELDS = {"prediction", "label", "correct", "confidence"}


def mean_ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (Student's t).

    Args:
        values: The sample.

    Returns:
        ``(mean, half_width)``; ``(nan, nan)`` for an empty sample, half-width ``0`` for one value
        (no interval, not a certain one: tables print it as ``n=1``, :func:`affectgym.eval.summary.format_mean_ci95`).

    Raises:
        ImportError: scipy (the ``eval`` extra) is not installed.

    >>> mean, half = mean_ci95([0.0, 1.0, 0.0, 1.0])
    >>> mean, round(half, 3)
    (0.5, 0.919)
    """
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    mean = math.fsum(values) / n
    if n == 1:
        return mean, 0.0
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, _t_quantile_975(n - 1) * math.sqrt(variance / n)


def _t_quantile_975(dof: int) -> float:
    # no normal-quantile fallback: at 3 values it would make the interval 2.2 times too narrow
    try:
        from scipy.stats import t
    except ImportError as error:
        raise ImportError("the t interval needs scipy: pip install affectgym[eval]") from error
    return float(t.ppf(0.975, dof))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of ``k`` of ``n`` samples is correct.

    ``1 - C(n - c, k) / C(n, k)`` with ``c`` correct samples among ``n`` (Chen et al., 2021).

    Args:
        n: Samples drawn (rollouts of one scenario).
        c: Correct samples among them.
        k: Budget, ``1 <= k <= n``.

    >>> pass_at_k(4, 0, 2), pass_at_k(4, 3, 2), round(pass_at_k(3, 1, 1), 6)
    (0.0, 1.0, 0.333333)
    """
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k_table(successes_by_scenario: Mapping[str, Sequence[bool]], ks: Iterable[int] | None = None) -> dict[str, float]:
    """Mean pass@k over scenarios, for each ``k`` up to the smallest rollout count.

    Args:
        successes_by_scenario: Scenario id -> success of each rollout.
        ks: Budgets to report; default 1, 2, 4, ... and the rollout count itself.

    Returns:
        ``{"pass@1": ..., "pass@2": ...}``; empty when there are no scenarios.

    >>> pass_at_k_table({"a": [True, False], "b": [False, False]})
    {'pass@1': 0.25, 'pass@2': 0.5}
    """
    if not successes_by_scenario:
        return {}
    n_min = min(len(v) for v in successes_by_scenario.values())
    if ks is None:
        ks = sorted({2**i for i in range(n_min.bit_length()) if 2**i <= n_min} | {n_min})
    table = {}
    for k in ks:
        if 1 <= k <= n_min:
            values = [pass_at_k(len(v), sum(map(bool, v)), k) for v in successes_by_scenario.values()]
            table[f"pass@{k}"] = math.fsum(values) / len(values)
    return table


def brier_score(confidences: Sequence[float], correct: Sequence[bool]) -> float:
    """Mean squared gap between the stated confidence in the prediction and its correctness."""
    if not confidences:
        return math.nan
    return math.fsum((float(p) - float(y)) ** 2 for p, y in zip(confidences, correct, strict=True)) / len(confidences)


def reliability_bins(confidences: Sequence[float], correct: Sequence[bool], n_bins: int = 10) -> list[dict[str, float]]:
    """Equal-width confidence bins: each non-empty bin's range, count, mean confidence and accuracy.

    >>> reliability_bins([0.95, 0.91, 0.15], [True, False, False], n_bins=2)
    [{'low': 0.0, 'high': 0.5, 'count': 1, 'confidence': 0.15, 'accuracy': 0.0}, {'low': 0.5, 'high': 1.0, 'count': 2, 'confidence': 0.9299999999999999, 'accuracy': 0.5}]
    """
    bins: list[list[tuple[float, bool]]] = [[] for _ in range(n_bins)]
    for p, y in zip(confidences, correct, strict=True):
        p = min(max(float(p), 0.0), 1.0)
        bins[min(int(p * n_bins), n_bins - 1)].append((p, bool(y)))
    out = []
    for index, members in enumerate(bins):
        if members:
            out.append(
                {
                    "low": index / n_bins,
                    "high": (index + 1) / n_bins,
                    "count": len(members),
                    "confidence": math.fsum(p for p, _ in members) / len(members),
                    "accuracy": sum(y for _, y in members) / len(members),
                }
            )
    return out


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], n_bins: int = 10) -> float:
    """ECE: the count-weighted mean gap between accuracy and confidence over equal-width bins.

    >>> round(expected_calibration_error([0.9, 0.9, 0.6, 0.6], [True, True, True, False]), 3)
    0.1
    """
    if not confidences:
        return math.nan
    bins = reliability_bins(confidences, correct, n_bins)
    return math.fsum(b["count"] * abs(b["accuracy"] - b["confidence"]) for b in bins) / len(confidences)


def classification_metrics(records: Sequence[Mapping[str, Any]], n_bins: int = 10) -> dict[str, Any]:
    """Accuracy, precision/recall/F1 (macro and weighted), confusion matrix, calibration, subsets.

    Args:
        records: Episode outcomes with ``label`` and ``prediction`` (``None`` = unanswered),
            optionally ``correct`` (default: prediction equals label), ``confidence`` in
            [0, 1] and boolean subset flags (any other key whose values are all booleans).
        n_bins: Bins of the calibration metrics.

    Returns:
        A JSON-ready dict: ``n``, ``accuracy``, ``unanswered_rate``, ``macro_*``,
        ``weighted_*`` and ``micro_*`` precision/recall/F1 (sklearn, over the gold labels),
        ``weighted_accuracy`` (WA, the accuracy) and ``unweighted_accuracy`` (UA, the mean
        per-class recall), as speech-emotion papers and EmoBox report them, ``per_label``,
        ``labels`` and ``confusion_matrix`` (rows gold, columns predicted; predicted labels
        outside the gold set and unanswered get their own columns), ``ece``, ``brier`` and
        ``reliability`` over the records with a confidence, and ``subsets``
        (``{flag: {"true": {n, accuracy}, "false": {...}}}``). Empty when no record has a label.

    >>> m = classification_metrics([
    ...     {"label": "sarcastic", "prediction": "sarcastic", "confidence": 0.8, "pivot": True},
    ...     {"label": "sincere", "prediction": "sarcastic", "confidence": 0.6, "pivot": False},
    ...     {"label": "sincere", "prediction": None, "pivot": False}])
    >>> m["accuracy"], m["confusion_matrix"], m["subsets"]["pivot"]["true"]
    (0.3333333333333333, [[1, 0, 0], [1, 0, 1]], {'n': 1, 'accuracy': 1.0})
    >>> m["weighted_accuracy"], m["unweighted_accuracy"], round(m["micro_f1"], 3)
    (0.3333333333333333, 0.5, 0.4)
    """
    from sklearn.metrics import precision_recall_fscore_support

    rows = [r for r in records if r.get("label") is not None]
    if not rows:
        return {}
    gold = [str(r["label"]) for r in rows]
    predicted = [UNANSWERED if r.get("prediction") is None else str(r["prediction"]) for r in rows]
    correct = [bool(r["correct"]) if r.get("correct") is not None else g == p for r, g, p in zip(rows, gold, predicted, strict=True)]
    labels = sorted(set(gold))
    extra = sorted(set(predicted) - set(labels) - {UNANSWERED}) + ([UNANSWERED] if UNANSWERED in predicted else [])
    columns = labels + extra
    index = {label: i for i, label in enumerate(columns)}
    matrix = [[0] * len(columns) for _ in labels]
    for g, p in zip(gold, predicted, strict=True):
        matrix[index[g]][index[p]] += 1
    result: dict[str, Any] = {
        "n": len(rows),
        "accuracy": sum(correct) / len(rows),
        "unanswered_rate": predicted.count(UNANSWERED) / len(rows),
        "labels": labels,
        "predicted_labels": columns,
        "confusion_matrix": matrix,
    }
    for average in ("macro", "weighted", "micro"):
        precision, recall, f1, _ = precision_recall_fscore_support(gold, predicted, labels=labels, average=average, zero_division=0)
        result.update({f"{average}_precision": float(precision), f"{average}_recall": float(recall), f"{average}_f1": float(f1)})
    # the speech-emotion field's names: WA is the accuracy, UA the mean per-class recall (unanswered = wrong)
    result["weighted_accuracy"], result["unweighted_accuracy"] = result["accuracy"], result["macro_recall"]
    precision, recall, f1, support = precision_recall_fscore_support(gold, predicted, labels=labels, average=None, zero_division=0)
    result["per_label"] = {
        label: {"precision": float(precision[i]), "recall": float(recall[i]), "f1": float(f1[i]), "support": int(support[i])}
        for i, label in enumerate(labels)
    }
    stated = [(float(r["confidence"]), c) for r, c in zip(rows, correct, strict=True) if _is_number(r.get("confidence"))]
    confidences = [p for p, _ in stated]
    outcomes = [c for _, c in stated]
    result.update(
        n_with_confidence=len(stated),
        ece=expected_calibration_error(confidences, outcomes, n_bins) if stated else None,
        brier=brier_score(confidences, outcomes) if stated else None,
        reliability=reliability_bins(confidences, outcomes, n_bins) if stated else [],
    )
    result["subsets"] = subset_accuracy(rows, correct)
    return result


def subset_accuracy(records: Sequence[Mapping[str, Any]], correct: Sequence[bool]) -> dict[str, dict[str, dict[str, float]]]:
    """Accuracy on each side of every boolean flag of the records (e.g. ``pivot``).

    A key is a flag when every record that has it holds a bool; the outcome fields
    (prediction, label, correct, confidence) are not flags.

    >>> subset_accuracy([{"pivot": True}, {"pivot": False}, {"pivot": True}], [True, True, False])
    {'pivot': {'true': {'n': 2, 'accuracy': 0.5}, 'false': {'n': 1, 'accuracy': 1.0}}}
    """
    keys: dict[str, None] = {}
    for record in records:
        keys.update(dict.fromkeys(record))
    flags = [
        key
        for key in keys
        if key not in _OUTCOME_FIELDS
        and all(isinstance(r[key], bool) for r in records if r.get(key) is not None)
        and any(isinstance(r.get(key), bool) for r in records)
    ]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for flag in flags:
        out[flag] = {}
        for side, value in (("true", True), ("false", False)):
            hits = [c for r, c in zip(records, correct, strict=True) if r.get(flag) is value]
            if hits:
                out[flag][side] = {"n": len(hits), "accuracy": sum(hits) / len(hits)}
    return out


def tool_use_stats(tool_calls_per_episode: Sequence[Sequence[str]]) -> dict[str, Any]:
    """How often agents used tools: rate of episodes with a call, mean calls, calls per tool.

    >>> tool_use_stats([["read_note"], [], ["read_note", "read_note"]])
    {'episodes': 3, 'tool_use_rate': 0.6666666666666666, 'mean_tool_calls': 1.0, 'calls_by_tool': {'read_note': 3}}
    """
    n = len(tool_calls_per_episode)
    counts = Counter(name for calls in tool_calls_per_episode for name in calls)
    return {
        "episodes": n,
        "tool_use_rate": sum(1 for calls in tool_calls_per_episode if calls) / n if n else math.nan,
        "mean_tool_calls": sum(len(calls) for calls in tool_calls_per_episode) / n if n else math.nan,
        "calls_by_tool": dict(sorted(counts.items())),
    }


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


__all__ = [
    "UNANSWERED",
    "brier_score",
    "classification_metrics",
    "expected_calibration_error",
    "mean_ci95",
    "pass_at_k",
    "pass_at_k_table",
    "reliability_bins",
    "subset_accuracy",
    "tool_use_stats",
]
