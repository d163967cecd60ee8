"""EmotionStyle-v0's embedded demonstrations: replies that show an emotion without naming it.

``affectgym/data/style_demonstrations/demonstrations.jsonl`` holds 210 replies, 30 for each
of the seven emotions, each to a scenario of the env's train split, written for affectgym
under its licence (the folder's ``README.md`` says how they were written and chosen). They
are a warm start's teaching set (``python -m affectgym.train.style_demonstrations OUT`` writes
them as an eval folder ``affectgym train --algo sft --demos OUT`` learns) and the offline
classifier's validation set (``benchmarks/bench_style_demos.py``).

>>> demos = load_style_demonstrations()
>>> len(demos), demos[0].scenario_id, demos[0].instruction_id
(210, 'es001:anger', 'es001')
>>> sorted({d.emotion for d in demos})
['anger', 'disgust', 'fear', 'joy', 'neutral', 'sadness', 'surprise']
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from affectgym.data.jsonl import string_rows
from affectgym.data.speech_sources import DatasetError
from affectgym.emotions import EMOTIONS

STYLE_DEMONSTRATIONS = Path(__file__).parent / "style_demonstrations" / "demonstrations.jsonl"
"""The embedded demonstrations (JSON Lines: ``scenario_id``, ``emotion``, ``reply``)."""

__all__ = ["STYLE_DEMONSTRATIONS", "StyleDemonstration", "load_style_demonstrations"]


@dataclass(frozen=True)
class StyleDemonstration:
    """One demonstration reply.

    Attributes:
        scenario_id: The EmotionStyle-v0 scenario, ``"<instruction id>:<emotion>"``.
        emotion: The emotion the reply shows, one of :data:`~affectgym.emotions.EMOTIONS`.
        reply: The reply.
    """

    scenario_id: str
    emotion: str
    reply: str

    @property
    def instruction_id(self) -> str:
        """The instruction the reply answers (the scenario id before ``:``)."""
        return self.scenario_id.partition(":")[0]


@lru_cache(maxsize=4)
def load_style_demonstrations(path: str | Path = STYLE_DEMONSTRATIONS) -> tuple[StyleDemonstration, ...]:
    """The demonstrations of a JSON Lines file (by default the embedded set), in file order.

    Args:
        path: A file of ``{"scenario_id", "emotion", "reply"}`` lines.

    Returns:
        The demonstrations (a tuple: read once per process and path).

    Raises:
        DatasetError: The file is missing, a line is not such an object, an emotion is not
            one of the seven, a scenario id does not end in its emotion, or a scenario repeats.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise DatasetError(f"style demonstrations {path} could not be read ({error})") from error
    demonstrations: list[StyleDemonstration] = []
    seen: set[str] = set()
    for where, row in string_rows(text, path, ("scenario_id", "emotion", "reply"), DatasetError, {"emotion": EMOTIONS}):
        if not row["scenario_id"].endswith(f":{row['emotion']}"):
            raise DatasetError(f"{where}: scenario_id {row['scenario_id']!r} must be '<instruction id>:{row['emotion']}'")
        if row["scenario_id"] in seen:
            raise DatasetError(f"{where}: scenario {row['scenario_id']!r} is demonstrated twice")
        seen.add(row["scenario_id"])
        demonstrations.append(StyleDemonstration(row["scenario_id"], row["emotion"], row["reply"]))
    return tuple(demonstrations)
