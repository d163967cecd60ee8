"""Scripted answers of the EMOTRON judge, shared by the judge and EmotionStyle tests."""

from __future__ import annotations


def ratings(**overrides: object) -> dict[str, object]:
    """The judge's six answers, all at their best unless overridden."""
    best = {
        "emotion_match": "high",
        "implicitness": True,
        "intensity": True,
        "authenticity": True,
        "response_only": True,
        "quality": "high",
    }
    return best | overrides
