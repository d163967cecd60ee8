"""A hand-written validation set for offline emotion scorers: replies that show an emotion without naming it.

``affectgym/data/emotion_validation/replies.jsonl`` holds 420 short English replies: for each
of the seven emotions, 20 everyday situations, each said three ways (paraphrases ``a``, ``b``
and ``c`` of one content). A scorer's accuracy on the set says how well it reads an emotion
that is shown, not named; the spread of its scores within a group (one situation's three
paraphrases) says how much of what it reads is wording rather than content. The situations
are disjoint from EmotionStyle-v0's instructions and from its demonstrations
(:mod:`affectgym.data.style_demonstrations`), so the set can validate a scorer tuned on
either. The folder's ``README.md`` gives the rules the replies follow and their licence.

>>> replies = load_emotion_validation()
>>> len(replies), replies[0].id, replies[0].group
(420, 'anger-01-a', 'anger-01')
>>> sorted({r.emotion for r in replies})
['anger', 'disgust', 'fear', 'joy', 'neutral', 'sadness', 'surprise']
>>> len({r.group for r in replies if r.emotion == "fear"})
20
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from affectgym.data.jsonl import string_rows
from affectgym.data.speech_sources import DatasetError
from affectgym.emotions import EMOTIONS

EMOTION_VALIDATION_FOLDER = "emotion_validation"
"""The folder of :mod:`affectgym.data` that holds the set."""
EMOTION_VALIDATION_FILE = "replies.jsonl"
"""The set's file (JSON Lines: ``id``, ``emotion``, ``group``, ``reply``)."""

_ID = re.compile(r"(?P<group>(?P<emotion>[a-z]+)-\d{2})-[abc]")

__all__ = [
    "EMOTION_VALIDATION_FILE",
    "EMOTION_VALIDATION_FOLDER",
    "ValidationReply",
    "load_emotion_validation",
]


@dataclass(frozen=True)
class ValidationReply:
    """One reply of the validation set.

    Attributes:
        id: ``"<emotion>-<NN>-<p>"``: the emotion, the situation (``01``...) and the paraphrase
            (``a``, ``b`` or ``c``), e.g. ``"fear-07-b"``.
        emotion: The emotion the reply shows, one of :data:`~affectgym.emotions.EMOTIONS`.
        group: ``"<emotion>-<NN>"``, shared by the paraphrases of one situation.
        reply: The reply.
    """

    id: str
    emotion: str
    group: str
    reply: str


def load_emotion_validation(path: str | Path | None = None) -> list[ValidationReply]:
    """The replies of a JSON Lines file (by default the embedded set), in file order.

    Args:
        path: A file of ``{"id", "emotion", "group", "reply"}`` lines; ``None`` reads the set
            shipped in the package (through :mod:`importlib.resources`).

    Returns:
        The replies (a new list on each call).

    Raises:
        DatasetError: The file is missing, a line is not such an object, an emotion is not one
            of the seven, an id is not ``"<group>-<a|b|c>"`` of its emotion's group, or an id
            repeats.
    """
    if path is None:
        source = resources.files("affectgym.data") / EMOTION_VALIDATION_FOLDER / EMOTION_VALIDATION_FILE
        where_file = f"affectgym/data/{EMOTION_VALIDATION_FOLDER}/{EMOTION_VALIDATION_FILE}"
    else:
        source = Path(path)
        where_file = str(source)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise DatasetError(f"emotion validation set {where_file} could not be read ({error})") from error
    replies: list[ValidationReply] = []
    seen: set[str] = set()
    for where, row in string_rows(text, where_file, ("id", "emotion", "group", "reply"), DatasetError, {"emotion": EMOTIONS}):
        match = _ID.fullmatch(row["id"])
        if not match or match["emotion"] != row["emotion"] or match["group"] != row["group"]:
            raise DatasetError(
                f"{where}: id {row['id']!r} must be '<group>-<a|b|c>' with group {row['group']!r} "
                f"of the form '{row['emotion']}-<NN>'"
            )
        if row["id"] in seen:
            raise DatasetError(f"{where}: id {row['id']!r} appears twice")
        seen.add(row["id"])
        replies.append(ValidationReply(row["id"], row["emotion"], row["group"], row["reply"]))
    return replies
