"""The seven basic emotion labels shared by every affectgym environment and scorer.

The label set is Ekman's six basic emotions plus ``neutral``, in the order used by the
reference classifier (j-hartmann/emotion-english-distilroberta-base) and by the
emotion-state environment. Other datasets spell them differently (``HAPPINESS`` in the
emotional-RLAIF dialogues, ``angry``/``happy`` in speech corpora); :func:`canonical_emotion`
maps those spellings onto the seven labels.

>>> EMOTIONS
('anger', 'disgust', 'fear', 'joy', 'neutral', 'sadness', 'surprise')
>>> canonical_emotion("HAPPINESS"), canonical_emotion(" Angry "), canonical_emotion("sad")
('joy', 'anger', 'sadness')
>>> canonical_emotion("condescending") is None
True
"""

from __future__ import annotations

from collections.abc import Mapping

EMOTIONS: tuple[str, ...] = ("anger", "disgust", "fear", "joy", "neutral", "sadness", "surprise")
"""The seven labels, alphabetical (the reference classifier's order)."""

EMOTION_INDEX: Mapping[str, int] = {label: i for i, label in enumerate(EMOTIONS)}
"""Position of each label in :data:`EMOTIONS` (e.g. in a 7-dim emotion state vector)."""

EMOTION_ALIASES: Mapping[str, str] = {
    # anger
    "anger": "anger",
    "angry": "anger",
    "ang": "anger",
    "mad": "anger",
    "rage": "anger",
    "fury": "anger",
    "furious": "anger",
    "annoyance": "anger",
    "annoyed": "anger",
    # disgust
    "disgust": "disgust",
    "disgusted": "disgust",
    "dis": "disgust",
    "revulsion": "disgust",
    # fear
    "fear": "fear",
    "afraid": "fear",
    "fearful": "fear",
    "scared": "fear",
    "fea": "fear",
    "anxiety": "fear",
    "anxious": "fear",
    # joy
    "joy": "joy",
    "happy": "joy",
    "happiness": "joy",
    "hap": "joy",
    "joyful": "joy",
    "glad": "joy",
    "excited": "joy",
    # neutral
    "neutral": "neutral",
    "neu": "neutral",
    "none": "neutral",
    "calm": "neutral",
    "no emotion": "neutral",
    # sadness
    "sadness": "sadness",
    "sad": "sadness",
    "sorrow": "sadness",
    "grief": "sadness",
    "unhappy": "sadness",
    # surprise
    "surprise": "surprise",
    "surprised": "surprise",
    "sur": "surprise",
    "amazement": "surprise",
    "astonishment": "surprise",
}
"""Lower-case spellings seen in emotion datasets, mapped onto :data:`EMOTIONS`."""


def canonical_emotion(name: str) -> str | None:
    """Map a dataset's spelling of an emotion onto one of the seven labels.

    Args:
        name: A label as a dataset or a user writes it (any case, surrounding spaces,
            ``_`` or ``-`` for spaces).

    Returns:
        One of :data:`EMOTIONS`, or ``None`` for a label outside the seven (open-vocabulary
        labels such as ``"condescending"`` are valid targets for the judge, not for the
        classifier).
    """
    key = name.strip().lower().replace("_", " ").replace("-", " ")
    return EMOTION_ALIASES.get(key)


def is_basic_emotion(name: str) -> bool:
    """Whether ``name`` spells one of the seven labels.

    Args:
        name: Any label.

    Returns:
        ``True`` when :func:`canonical_emotion` maps it.

    >>> is_basic_emotion("Fear"), is_basic_emotion("pride")
    (True, False)
    """
    return canonical_emotion(name) is not None
