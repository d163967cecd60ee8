"""Emotionally tagged dialogues: labels, tag splitting, and the datasets ``dataset=`` names.

The emotional-RLAIF data (LLaMA-Factory "alpaca with history" JSON) stores one record per
dialogue: ``system``, ``history`` (``[[human, chatbot], ...]``), ``instruction`` (the last
human turn), ``input``, ``output`` (the last chatbot reply), ``dialogue_id`` and ``set``.
Human turns carry their emotion tag (``(SADNESS) Not yet, ...``); chatbot replies are three
tagged sentences (``(SADNESS) ... (HAPPINESS) ... (NEUTRAL) ...?``). Each dialogue becomes a
:class:`Dialogue` whose user turns are :class:`DialogueTurn` scenarios, each carrying the
history before it (with the reference replies), the user's emotion, the emotion requested of
the chatbot's second sentence (the second tag of the reference reply) and the reference reply.

Datasets (kind ``"dialogue"`` of :mod:`affectgym.data.registry`; :func:`load_dialogues` reads
one by name): ``"embedded"`` (:func:`load_embedded_dialogues`, 44 dialogues written for
affectgym, shipped in ``affectgym/data/dialogues/``), ``"file"`` (:func:`load_dialogue_file`,
a local JSON / JSONL file) and ``"hub"`` (:func:`load_hub_dialogues`,
``mario-rc/aif-emotional-generation`` through ``datasets``; with no network it fails with one
line naming ``data_file``), and any a package adds through the entry-point group
``affectgym.datasets.dialogue``: a :class:`DialogueLoader`.

>>> dialogue_label("happiness"), dialogue_label(" Joy "), dialogue_label("(fear)"), dialogue_label("pride")
('HAPPINESS', 'HAPPINESS', 'FEAR', None)
>>> classifier_label("HAPPINESS"), classifier_label("SADNESS")
('joy', 'sadness')
>>> lead, segments = split_tagged("(sadness) Oh no [HAPPINESS] but well done （NEUTRAL） what now？")
>>> lead, [(s.label, s.text) for s in segments]
('', [('SADNESS', 'Oh no'), ('HAPPINESS', 'but well done'), ('NEUTRAL', 'what now?')])
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from affectgym.data.registry import read_dataset, register_dataset
from affectgym.data.speech_sources import DatasetError
from affectgym.data.splits import select_split, stable_hash
from affectgym.emotions import canonical_emotion

DIALOGUE_LABELS: tuple[str, ...] = ("ANGER", "FEAR", "SADNESS", "DISGUST", "HAPPINESS", "SURPRISE", "NEUTRAL")
"""The seven tags of the emotional-RLAIF data, in its order."""

EMOTION_OF_LABEL: Mapping[str, str] = {
    "ANGER": "anger",
    "FEAR": "fear",
    "SADNESS": "sadness",
    "DISGUST": "disgust",
    "HAPPINESS": "joy",
    "SURPRISE": "surprise",
    "NEUTRAL": "neutral",
}
"""Dialogue tag -> classifier label (:data:`affectgym.emotions.EMOTIONS`). Only
HAPPINESS is spelled differently (the classifier's ``joy``); the others are lower-cased."""

LABEL_OF_EMOTION: Mapping[str, str] = {emotion: label for label, emotion in EMOTION_OF_LABEL.items()}
"""Classifier label -> dialogue tag (``joy`` -> ``HAPPINESS``)."""

HUB_DATASET = "mario-rc/aif-emotional-generation"
"""The emotional-RLAIF dialogues on the Hugging Face hub."""

EMBEDDED_FILE = Path(__file__).with_name("dialogues") / "embedded.json"

# A tag: a word or two in round, square or (after NFKC) full-width brackets, optionally bold.
# Matched from its bracket; the bold and spaces before it are taken back by _tag_start (a
# pattern starting with them would retry a whole run of spaces at each one: quadratic).
_TAG = re.compile(r"[\(\[]\s*([A-Za-z][A-Za-z _-]{0,24}?)\s*[\)\]]\s*\**")
_SPEAKER = re.compile(r"^\s*(?:chatbot|assistant|bot|response)\s*:\s*", re.IGNORECASE)


def dialogue_label(name: str) -> str | None:
    """The dialogue tag that ``name`` spells, in any case or synonym the emotion aliases know.

    Args:
        name: ``"SADNESS"``, ``"sad"``, ``"joy"``, ``"(FEAR)"``...

    Returns:
        One of :data:`DIALOGUE_LABELS`, or ``None`` for anything else.
    """
    emotion = canonical_emotion(name.strip().strip("()[]").strip())
    return LABEL_OF_EMOTION.get(emotion) if emotion else None


def classifier_label(tag: str) -> str:
    """The classifier label of a dialogue tag (``HAPPINESS`` -> ``joy``).

    Raises:
        ValueError: ``tag`` names none of the seven emotions.
    """
    label = dialogue_label(tag)
    if label is None:
        raise ValueError(f"emotion tag {tag!r} is none of {DIALOGUE_LABELS}")
    return EMOTION_OF_LABEL[label]


@dataclass(frozen=True)
class TaggedSegment:
    """One tagged piece of a turn.

    Attributes:
        raw_tag: The tag as written (``"sadness"``).
        label: Its dialogue tag, or ``None`` for an unknown upper-case tag (``"(CONFUSED)"``).
        text: The text after the tag, up to the next tag, stripped of spaces.
    """

    raw_tag: str
    label: str | None
    text: str


def normalise_text(text: str) -> str:
    """NFKC-normalise (full-width brackets and ``？`` become ASCII, ``…`` becomes ``...``).

    >>> normalise_text("（SADNESS） Really？ Yes…")
    '(SADNESS) Really? Yes...'
    """
    return unicodedata.normalize("NFKC", text)


def split_tagged(text: str) -> tuple[str, list[TaggedSegment]]:
    """Split a tagged turn into the text before the first tag and its tagged segments.

    A bracketed word counts as a tag when it spells an emotion (any case, see
    :func:`dialogue_label`) or is written in capitals (an unknown tag such as ``(CONFUSED)``);
    other bracketed words (``(honestly)``) stay part of the text. A leading ``Chatbot:`` or
    ``Assistant:`` is dropped.

    Args:
        text: A human turn or a chatbot reply.

    Returns:
        ``(text before the first tag, segments)``.
    """
    text = _SPEAKER.sub("", normalise_text(text))
    tags = []
    previous_end = 0
    for match in _TAG.finditer(text):
        start = _tag_start(text, match.start(), previous_end)
        previous_end = match.end()
        name = match.group(1)
        if dialogue_label(name) is not None or name.replace(" ", "").replace("_", "").isupper():
            tags.append((start, match.end(), name.strip()))
    if not tags:
        return text.strip(), []
    lead = text[: tags[0][0]].strip()
    segments = []
    for (_, end, raw), following in zip(tags, [*tags[1:], None], strict=True):
        stop = following[0] if following is not None else len(text)
        segments.append(TaggedSegment(raw, dialogue_label(raw), text[end:stop].strip()))
    return lead, segments


def _tag_start(text: str, bracket: int, floor: int) -> int:
    """Where the tag whose bracket is at ``bracket`` starts: before the spaces and then the asterisks before it (not before ``floor``)."""
    start = bracket
    while start > floor and text[start - 1].isspace():
        start -= 1
    while start > floor and text[start - 1] == "*":
        start -= 1
    return start


def reply_tags(reply: str | None) -> list[str | None]:
    """The tags of a chatbot reply, in order (``None`` for unknown tags).

    >>> reply_tags("(SADNESS) Oh no. (joy) Still, well done. (NEUTRAL) What next?")
    ['SADNESS', 'HAPPINESS', 'NEUTRAL']
    """
    if not reply:
        return []
    return [segment.label for segment in split_tagged(reply)[1]]


@dataclass(frozen=True)
class DialogueTurn:
    """One user turn of a dialogue: the scenario of one chatbot reply.

    Attributes:
        id: ``"<dialogue_id>/t<index>"``.
        dialogue_id: The dialogue it belongs to.
        index: Position of the turn in the dialogue (0 = first).
        n_turns: User turns in the dialogue.
        user_emotion: The user's tag (one of :data:`DIALOGUE_LABELS`); sentence 1 mirrors it.
        user_text: The user's words, without the tag.
        target_emotion: The tag requested of the chatbot's second sentence.
        reference: The dataset's reply, or ``None`` (e.g. a simulated user's turn).
        history: The turns before, as ``(tagged user line, chatbot reply)`` pairs.
        topic: A few words on what the dialogue is about (may be empty).
        simulated: Whether a user simulator wrote ``user_text``.
    """

    id: str
    dialogue_id: str
    index: int
    n_turns: int
    user_emotion: str
    user_text: str
    target_emotion: str
    reference: str | None = None
    history: tuple[tuple[str, str], ...] = ()
    topic: str = ""
    simulated: bool = False

    @property
    def user_line(self) -> str:
        """The user's turn with its tag, as the dataset writes it."""
        return f"({self.user_emotion}) {self.user_text}"

    @property
    def required_tags(self) -> tuple[str, str, str]:
        """The tags the reply must use, slot by slot: user's emotion, requested emotion, NEUTRAL."""
        return (self.user_emotion, self.target_emotion, "NEUTRAL")


@dataclass(frozen=True)
class Dialogue:
    """A dialogue: its user turns, each a :class:`DialogueTurn` with the history before it.

    Attributes:
        id: The dataset's ``dialogue_id`` (as text).
        turns: The user turns, in order.
        source_split: The dataset's own ``set`` field, if any (``"train"``, ``"test"``...).
    """

    id: str
    turns: tuple[DialogueTurn, ...]
    source_split: str | None = None


# ----------------------------------------------------------------------------- records
def _user_turn(line: Any, where: str) -> tuple[str, str]:
    if not isinstance(line, str) or not line.strip():
        raise DatasetError(f"{where}: a human turn must be non-empty text, got {line!r}")
    lead, segments = split_tagged(line)
    if segments and not lead and segments[0].label is not None:
        text = " ".join(s.text if i == 0 else f"({s.raw_tag}) {s.text}" for i, s in enumerate(segments))
        return segments[0].label, text.strip()
    return "NEUTRAL", normalise_text(line).strip()


def _target_of(reply: str | None, fallback: str) -> str:
    tags = reply_tags(reply)
    return tags[1] if len(tags) >= 2 and tags[1] is not None else fallback


def dialogue_from_record(record: Mapping[str, Any], where: str = "record") -> Dialogue:
    """Turn one LLaMA-Factory record into a :class:`Dialogue`.

    Args:
        record: ``history``, ``instruction``, ``output`` (``input``, ``system``,
            ``dialogue_id``, ``set`` and ``topic`` optional). A record without
            ``dialogue_id`` gets one from a stable hash of its first human turn.
        where: Names the record in error messages.

    Returns:
        The dialogue; the target emotion of a turn is the second tag of its reply
        (``NEUTRAL`` when the reply has none).

    Raises:
        DatasetError: A field is missing or of the wrong type.

    Examples:
        >>> d = dialogue_from_record({"history": [["(FEAR) Exams soon.", "(FEAR) Oof. (HAPPINESS) You got this. (NEUTRAL) Which one?"]],
        ...                           "instruction": "(HAPPINESS) Passed!", "output": "(HAPPINESS) Yes! (SURPRISE) Wow. (NEUTRAL) How?",
        ...                           "dialogue_id": 7})
        >>> [(t.id, t.user_emotion, t.target_emotion, len(t.history)) for t in d.turns]
        [('7/t0', 'FEAR', 'HAPPINESS', 0), ('7/t1', 'HAPPINESS', 'SURPRISE', 1)]
    """
    if not isinstance(record, Mapping):
        raise DatasetError(f"{where}: expected a JSON object, got {type(record).__name__}")
    history = record.get("history") or []
    if not isinstance(history, list) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in history):
        raise DatasetError(f"{where}: 'history' must be a list of [human, chatbot] pairs")
    instruction = record.get("instruction")
    extra = record.get("input") or ""
    if isinstance(instruction, str) and isinstance(extra, str) and extra.strip():
        instruction = f"{instruction}\n{extra}"
    pairs = [(h, b) for h, b in history] + [(instruction, record.get("output"))]
    first = pairs[0][0] if isinstance(pairs[0][0], str) else ""
    raw_id = record.get("dialogue_id")
    dialogue_id = str(raw_id) if raw_id not in (None, "") else f"d{stable_hash(first) % 10**10:010d}"
    topic = str(record.get("topic") or "")
    turns: list[DialogueTurn] = []
    past: list[tuple[str, str]] = []
    for index, (human, bot) in enumerate(pairs):
        emotion, text = _user_turn(human, f"{where} (dialogue {dialogue_id}, turn {index})")
        reference = normalise_text(bot).strip() if isinstance(bot, str) and bot.strip() else None
        turns.append(
            DialogueTurn(
                id=f"{dialogue_id}/t{index}",
                dialogue_id=dialogue_id,
                index=index,
                n_turns=len(pairs),
                user_emotion=emotion,
                user_text=text,
                target_emotion=_target_of(reference, "NEUTRAL"),
                reference=reference,
                history=tuple(past),
                topic=topic,
            )
        )
        past.append((f"({emotion}) {text}", reference or ""))
    split = record.get("set")
    return Dialogue(dialogue_id, tuple(turns), str(split) if split not in (None, "") else None)


def dialogues_from_records(records: Iterable[Mapping[str, Any]], source: str = "records") -> list[Dialogue]:
    """Dialogues from LLaMA-Factory records, one per ``dialogue_id``.

    Data that stores one record per turn (the history growing record by record) is merged:
    of the records sharing an id, the one with the most turns is kept.

    Args:
        records: The records.
        source: Names the data in error messages (e.g. the file).

    Returns:
        The dialogues in order of first appearance.
    """
    by_id: dict[str, Dialogue] = {}
    for number, record in enumerate(records):
        dialogue = dialogue_from_record(record, f"{source}, record {number}")
        kept = by_id.get(dialogue.id)
        if kept is None or len(dialogue.turns) > len(kept.turns):
            by_id[dialogue.id] = dialogue
    return list(by_id.values())


def load_dialogue_file(path: str | Path) -> list[Dialogue]:
    """Dialogues from a local LLaMA-Factory file: a JSON list of records, or JSON lines.

    Raises:
        DatasetError: The file is missing or is not such JSON.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"dialogue file {str(path)!r} does not exist; expected a LLaMA-Factory JSON (or JSONL) file")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        records = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        try:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as error:
            raise DatasetError(
                f"dialogue file {str(path)!r} is neither a JSON list of records nor JSON lines ({error})"
            ) from None
    dialogues = dialogues_from_records(records, source=str(path))
    if not dialogues:
        raise DatasetError(f"dialogue file {str(path)!r} holds no records")
    return dialogues


def load_embedded_dialogues() -> list[Dialogue]:
    """The 44 dialogues shipped with affectgym (see ``affectgym/data/dialogues/README.md``)."""
    return load_dialogue_file(EMBEDDED_FILE)


def load_hub_dialogues(name: str = HUB_DATASET, config: str | None = None) -> list[Dialogue]:
    """The dialogues of a hub dataset in the LLaMA-Factory layout (every split of it).

    Args:
        name: Hub dataset id.
        config: Its configuration, if it has several.

    Raises:
        DatasetError: The hub cannot be reached or the dataset does not load (one line,
            naming the ``data_file`` alternative).
    """
    try:
        from datasets import load_dataset

        loaded = load_dataset(name, config)
        records = [dict(row) for split in loaded.values() for row in split]
    except Exception as error:  # datasets raises many kinds (ConnectionError, OSError, ValueError...)
        first_line = (str(error).strip().splitlines() or [""])[0][:160]
        raise DatasetError(
            f"could not load the hub dataset {name!r} ({type(error).__name__}: {first_line}); "
            "without hub access pass data_file=PATH to its LLaMA-Factory JSON file"
        ) from None
    return dialogues_from_records(records, source=name)


class DialogueLoader(Protocol):
    """Reads a dialogue dataset, given the env's data arguments as keywords (a loader may ignore them)."""

    def __call__(self, *, data_file: str | None, hub_name: str) -> list[Dialogue]:
        """The dataset's dialogues; ``data_file`` and ``hub_name`` are what the env was given."""


def load_dialogues(dataset: str, *, data_file: str | None = None, hub_name: str = HUB_DATASET) -> list[Dialogue]:
    """The dialogues of the dataset registered as ``dataset`` (``"embedded"``, ``"file"``, ``"hub"``, a plug-in's).

    Args:
        dataset: A name of :func:`affectgym.data.registry.datasets` ``("dialogue")``.
        data_file: A LLaMA-Factory JSON/JSONL file: what ``"file"`` reads, and ``"hub"``
            instead of the hub (a local copy).
        hub_name: The hub dataset ``"hub"`` reads.

    Raises:
        ValueError: An unknown name (the message lists the known ones and the plug-in way).
        DatasetError: The dataset cannot be read, or its loader returned no dialogues.

    Examples:
        >>> [d.id for d in load_dialogues("embedded")][:2]
        ['ed001', 'ed002']
    """
    return read_dataset("dialogue", dataset, Dialogue, DatasetError, data_file=data_file, hub_name=hub_name)


def _embedded(*, data_file: str | None, hub_name: str) -> list[Dialogue]:
    """The 44 dialogues shipped with affectgym."""
    return load_embedded_dialogues()


def _file(*, data_file: str | None, hub_name: str) -> list[Dialogue]:
    """A local LLaMA-Factory JSON or JSONL file, ``data_file``."""
    if data_file is None:
        raise DatasetError("dataset='file' needs data_file=PATH (a LLaMA-Factory JSON or JSONL file)")
    return load_dialogue_file(data_file)


def _hub(*, data_file: str | None, hub_name: str) -> list[Dialogue]:
    """The hub dataset ``hub_name``, or ``data_file`` as its local copy."""
    return load_hub_dialogues(hub_name) if data_file is None else load_dialogue_file(data_file)


register_dataset("dialogue", "embedded", _embedded)
register_dataset("dialogue", "file", _file)
register_dataset("dialogue", "hub", _hub)


def split_dialogues(dialogues: Sequence[Dialogue], split: str, eval_fraction: float = 0.2) -> list[Dialogue]:
    """The dialogues of ``split`` (``"train"``, ``"validation"``, ``"eval"``, ``"all"``): a stable hash split by dialogue id.

    A dialogue's turns never straddle the split. Validation is carved out of train
    (:mod:`affectgym.data.splits`), so eval is the same with or without it.

    >>> ds = [Dialogue(f"ed{i:03d}", ()) for i in range(1, 45)]
    >>> [len(split_dialogues(ds, split)) for split in ("train", "validation", "eval")]
    [31, 4, 9]
    """
    chosen = set(select_split([(d.id, "dialogue") for d in dialogues], split, eval_fraction))
    return [d for d in dialogues if d.id in chosen]


__all__ = [
    "DIALOGUE_LABELS",
    "EMOTION_OF_LABEL",
    "HUB_DATASET",
    "LABEL_OF_EMOTION",
    "Dialogue",
    "DialogueLoader",
    "DialogueTurn",
    "TaggedSegment",
    "classifier_label",
    "dialogue_from_record",
    "dialogue_label",
    "dialogues_from_records",
    "load_dialogue_file",
    "load_dialogues",
    "load_embedded_dialogues",
    "load_hub_dialogues",
    "normalise_text",
    "reply_tags",
    "split_dialogues",
    "split_tagged",
]
