"""The offline emotion probe's training replies: answers to EmotionStyle-v0's train instructions in an emotion.

``affectgym/data/emotion_training/replies.jsonl`` holds 420 replies, 60 for each of the seven
emotions, each answering an instruction of the env's **train** split and showing its emotion
without naming it (the folder's ``README.md`` gives the rules and the licence). With the 210
demonstrations (:mod:`affectgym.data.style_demonstrations`) they are what the probe of
:mod:`affectgym.rewards.emotion_probe` is fitted on; the held-out set it is measured on is
:mod:`affectgym.data.emotion_validation_set`.

>>> replies = load_emotion_training()
>>> len(replies), replies[0].instruction_id, replies[0].emotion
(420, 'es002', 'anger')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from affectgym.data.jsonl import string_rows
from affectgym.data.speech_sources import DatasetError
from affectgym.emotions import EMOTIONS

EMOTION_TRAINING = Path(__file__).parent / "emotion_training" / "replies.jsonl"
"""The shipped training replies (JSON Lines: ``id``, ``instruction_id``, ``emotion``, ``reply``)."""

__all__ = ["EMOTION_TRAINING", "TrainingReply", "load_emotion_training"]


@dataclass(frozen=True)
class TrainingReply:
    """One training reply.

    Attributes:
        id: ``"<instruction id>:<emotion>:<n>"``.
        instruction_id: The train-split instruction it answers.
        emotion: The emotion it shows, one of :data:`~affectgym.emotions.EMOTIONS`.
        reply: The reply.
    """

    id: str
    instruction_id: str
    emotion: str
    reply: str


def load_emotion_training(path: str | Path = EMOTION_TRAINING) -> list[TrainingReply]:
    """The replies of a JSON Lines file (by default the shipped set), in file order.

    Raises:
        DatasetError: The file is missing, a line is not such an object, an emotion is not one
            of the seven, or an id repeats.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise DatasetError(f"emotion training set {source} could not be read ({error})") from error
    replies: list[TrainingReply] = []
    seen: set[str] = set()
    keys = ("id", "instruction_id", "emotion", "reply")
    for where, row in string_rows(text, source, keys, DatasetError, {"emotion": EMOTIONS}):
        if row["id"] in seen:
            raise DatasetError(f"{where}: id {row['id']!r} appears twice")
        seen.add(row["id"])
        replies.append(TrainingReply(*(row[key] for key in keys)))
    return replies
