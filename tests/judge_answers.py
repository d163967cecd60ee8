"""Scripted answers of the EMOTRON judge, as ratings and as the text a judge LM sends, for tests and benchmarks."""

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


def format_judge_reply(**overrides: object) -> str:
    """The text a judge LM answers with under DSPy's ChatAdapter: :func:`ratings` as
    ``[[ ## field ## ]]`` sections ending in ``[[ ## completed ## ]]`` (for fake judge servers)."""
    body = "\n\n".join(f"[[ ## {name} ## ]]\n{value}" for name, value in ratings(**overrides).items())
    return f"{body}\n\n[[ ## completed ## ]]"
