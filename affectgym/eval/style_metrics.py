"""Evaluation metrics of replies in a requested emotion: what the reward says, and one check it never reads.

From the outcomes of ``EmotionStyle-v0`` (``target``, ``classifier_top``,
``target_probability``, ``rule_hits``) and each episode's final text, :func:`style_summary`
gives the classifier's mean P(target), target accuracy (the classifier's top emotion is the
target), the rate of every rule violation, mean length in words, and **valence agreement**:
the share of replies whose sentiment by VADER (``vaderSentiment``, a lexicon that is not
part of any reward here) has the sign of the target emotion, over the targets with a clear
valence (:data:`EMOTION_VALENCE`). A policy that games the classifier without writing in the
emotion gains P(target) but not valence agreement.

>>> valence_agrees("What a wonderful, lovely day!", "joy"), valence_agrees("This is awful and cruel.", "joy")
(True, False)
>>> valence_agrees("The bus comes at nine.", "surprise") is None
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

#: The sign of each target emotion whose valence is clear (surprise and neutral have none).
EMOTION_VALENCE: Mapping[str, int] = {"joy": 1, "anger": -1, "disgust": -1, "fear": -1, "sadness": -1}
#: VADER's own convention: a compound score at or beyond ±0.05 is positive or negative.
VADER_NEUTRAL_BAND = 0.05


@lru_cache(maxsize=1)
def _analyzer() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def reply_valence(text: str | None) -> int:
    """The sign of the reply's VADER compound score: 1, -1, or 0 within the neutral band (or no text)."""
    if not text:
        return 0
    compound = _analyzer().polarity_scores(text)["compound"]
    return 1 if compound >= VADER_NEUTRAL_BAND else -1 if compound <= -VADER_NEUTRAL_BAND else 0


def valence_agrees(text: str | None, target: str) -> bool | None:
    """Whether the reply's valence has the target emotion's sign; ``None`` for a target without a clear valence."""
    sign = EMOTION_VALENCE.get(target.lower())
    return None if sign is None else reply_valence(text) == sign


def style_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The metrics of the module docstring over eval records (outcome under ``"outcome"``, reply under ``"final_text"``).

    Returns:
        ``episodes``, ``target_probability`` (mean over replies the classifier scored),
        ``target_accuracy``, ``rule_<name>`` (share of replies breaking each of the env's
        rules), ``any_rule`` (share breaking at least one), ``words`` (mean),
        ``valence_agreement`` and ``valence_episodes`` (the replies it is over). Rates are
        ``None`` without any episode they apply to.
    """
    from affectgym.envs.style_criteria import RULE_WEIGHTS

    rows = [(record.get("outcome") or {}, record.get("final_text")) for record in records]
    rows = [(outcome, text) for outcome, text in rows if outcome.get("target") is not None]
    probabilities = [float(o["target_probability"]) for o, _ in rows if o.get("target_probability") is not None]
    judged = [o for o, _ in rows if o.get("classifier_top") is not None or o.get("target_probability") is not None]
    agreement = [agrees for o, text in rows if (agrees := valence_agrees(text, str(o["target"]))) is not None]
    summary: dict[str, Any] = {
        "episodes": len(rows),
        "target_probability": _mean(probabilities),
        "target_accuracy": _mean([float(o.get("classifier_top") == o["target"]) for o in judged]),
        "any_rule": _mean([float(bool(o.get("rule_hits"))) for o, _ in rows]),
        "words": _mean([float(len((text or "").split())) for _, text in rows]),
        "valence_agreement": _mean([float(a) for a in agreement]),
        "valence_episodes": len(agreement),
    }
    for rule in RULE_WEIGHTS:
        summary[f"rule_{rule}"] = _mean([float(rule in (o.get("rule_hits") or ())) for o, _ in rows])
    return summary


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


__all__ = ["EMOTION_VALENCE", "reply_valence", "style_summary", "valence_agrees"]
