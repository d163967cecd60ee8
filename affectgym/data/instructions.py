"""Open-ended instructions for emotion-conditioned generation, and the instruction sets ``instructions=`` names.

Every loader returns :class:`Instruction` records (an id, the instruction text, and where
known a short topic phrase that a reference reply can talk about). The sets are kind
``"instructions"`` of :mod:`affectgym.data.registry` (:func:`load_instructions` reads one by
name): ``"embedded"``, ``"file"`` and ``"wizardlm"`` below, and any a package adds through the
entry-point group ``affectgym.datasets.instructions``: an :class:`InstructionLoader`.

* :func:`load_embedded_instructions` (``"embedded"``) -- 221 varied instructions written for affectgym
  (advice, descriptions, stories, explanations, opinions, short letters, talks), shipped in
  ``affectgym/data/instructions/instructions.jsonl``; works offline.
* :func:`load_instruction_file` (``"file"``) -- a local JSON, JSON Lines or parquet file: either
  WizardLM-style records (the instruction is the first human turn of ``conversations``) or
  records with an ``instruction`` field.
* :func:`load_wizardlm_instructions` (``"wizardlm"``) -- ``WizardLMTeam/WizardLM_evol_instruct_V2_196k`` from
  the Hugging Face hub (instructions only, never the answers); with no network it fails
  with one line naming the ``data_file=`` alternative.

:func:`load_reference_replies` reads the hand-written honest replies the EmotionStyle env
composes its reference answers from (``affectgym/data/instructions/reference_replies.json``).

>>> items = load_embedded_instructions()
>>> len(items) >= 200, items[0].id, items[0].topic
(True, 'es001', 'a first job interview')
>>> first_human_turn([{"from": "human", "value": " Explain tides. "}, {"from": "gpt", "value": "..."}])
'Explain tides.'
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from affectgym.data.registry import read_dataset, register_dataset

WIZARDLM_HUB_ID = "WizardLMTeam/WizardLM_evol_instruct_V2_196k"
EMBEDDED_INSTRUCTIONS = Path(__file__).parent / "instructions" / "instructions.jsonl"
REFERENCE_REPLIES = Path(__file__).parent / "instructions" / "reference_replies.json"
HUMAN_ROLES = ("human", "user")

__all__ = [
    "EMBEDDED_INSTRUCTIONS",
    "REFERENCE_REPLIES",
    "WIZARDLM_HUB_ID",
    "Instruction",
    "InstructionDataError",
    "InstructionLoader",
    "first_human_turn",
    "instruction_topic",
    "load_embedded_instructions",
    "load_instruction_file",
    "load_instructions",
    "load_reference_replies",
    "load_wizardlm_instructions",
]


class InstructionDataError(ValueError):
    """Instructions could not be read; the message names the source and what is expected."""


@dataclass(frozen=True)
class Instruction:
    """One open-ended instruction.

    Attributes:
        id: Stable id (``es001`` for the embedded set, ``wz-<idx>`` for WizardLM records).
        text: The instruction as the user writes it.
        topic: A short noun phrase naming what the instruction is about, or ``None``
            (see :func:`instruction_topic` for a derived one).
        kind: Kind of task (``advice``, ``story``, ...) where known.
        source: Where it came from: ``embedded``, ``wizardlm`` or ``file``.
    """

    id: str
    text: str
    topic: str | None = None
    kind: str | None = None
    source: str = "embedded"


def load_embedded_instructions() -> list[Instruction]:
    """The instructions shipped with affectgym, in file order.

    Returns:
        221 instructions with ids ``es001``... and hand-written topics.
    """
    return load_instruction_file(EMBEDDED_INSTRUCTIONS, source="embedded")


@lru_cache(maxsize=1)
def load_reference_replies() -> Mapping[str, tuple[str, ...]]:
    """The reference-reply bank: for each emotion label, replies that show it without naming it.

    Each reply is a template with ``{topic}`` and ``{Topic}`` (the instruction's topic, the
    second capitalised). Read once per process.

    Returns:
        ``{label: replies}`` (read-only); every basic label and ``"neutral"`` have one.

    Raises:
        InstructionDataError: The file is missing or not a ``{"replies": {label: [text...]}}`` object.

    >>> banks = load_reference_replies()
    >>> len(banks["joy"]), "{topic}" in banks["neutral"][0]
    (3, True)
    """
    try:
        replies = json.loads(REFERENCE_REPLIES.read_text(encoding="utf-8"))["replies"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InstructionDataError(
            f"{REFERENCE_REPLIES} could not be read as {{'replies': {{label: [reply, ...]}}}} ({error})"
        ) from error
    if not isinstance(replies, dict) or not all(
        isinstance(bank, list) and bank and all(isinstance(text, str) for text in bank)
        for bank in replies.values()
    ):
        raise InstructionDataError(
            f"{REFERENCE_REPLIES}: 'replies' must map each label to a non-empty list of strings"
        )
    return MappingProxyType({label: tuple(bank) for label, bank in replies.items()})


def first_human_turn(conversations: Any) -> str | None:
    """The first human (or user) message of a ShareGPT-style ``conversations`` list.

    Args:
        conversations: ``[{"from": "human" | "gpt", "value": text}, ...]`` (``role``/``content``
            keys are accepted too).

    Returns:
        The stripped text, or ``None`` when there is no non-empty human turn.

    >>> first_human_turn([{"role": "user", "content": "Hi"}]), first_human_turn("junk")
    ('Hi', None)
    """
    if not isinstance(conversations, (list, tuple)):
        return None
    for turn in conversations:
        if not isinstance(turn, Mapping):
            continue
        role = str(turn.get("from", turn.get("role", ""))).strip().lower()
        text = turn.get("value", turn.get("content"))
        if role in HUMAN_ROLES and isinstance(text, str) and text.strip():
            return text.strip()
    return None


_LEADING_REQUEST = re.compile(
    r"^(?:(?:please|kindly|can you|could you|would you|i want you to|i need you to)\s+)*"
    r"(?:write|explain|describe|tell(?: me)?|give(?: me)?|create|compose|generate|summari[sz]e|"
    r"list|discuss|draft|provide|suggest|imagine|share)\s+"
    r"(?:(?:(?:a|an|the|some)\s+)?(?:me|us|short|brief|detailed|few|story|poem|letter|note|essay|paragraph|"
    r"description|explanation|summary|list|of|on|about|why|how|what)\s+)*",
    re.IGNORECASE,
)


def instruction_topic(text: str, max_words: int = 10) -> str:
    """A short phrase naming what an instruction is about, for instructions without a topic.

    Takes the first sentence, drops a leading request ("Write a short story about",
    "Explain why") and keeps at most ``max_words`` words.

    Args:
        text: The instruction.
        max_words: Longest phrase kept.

    Returns:
        The phrase, lower-cased at its start; ``"this"`` when nothing is left.

    >>> instruction_topic("Explain why the traffic light is taking so long to change.")
    'the traffic light is taking so long to change'
    >>> instruction_topic("Write a short story about a lighthouse keeper. Make it sad.")
    'a lighthouse keeper'
    """
    first = re.split(r"(?<=[.!?])\s+|\n", text.strip(), maxsplit=1)[0]
    phrase = _LEADING_REQUEST.sub("", first).strip().rstrip(".!?:;,")
    words = re.findall(r"[^\s]+", phrase)[:max_words]
    if not words:
        return "this"
    phrase = " ".join(words).rstrip(".!?:;,")
    return phrase[0].lower() + phrase[1:] if phrase[:2] != phrase[:2].upper() else phrase


def load_instruction_file(path: str | Path, *, source: str = "file", id_prefix: str = "") -> list[Instruction]:
    """Instructions from a local JSON, JSON Lines or parquet file.

    Each record is either WizardLM-style (``{"idx": ..., "conversations": [{"from": "human",
    "value": ...}, ...]}``: the instruction is the first human turn) or has an ``instruction``
    field (optional ``id``, ``topic``, ``kind``). Records without an id get one hashed from
    their text; empty records and repeated ids are skipped.

    Args:
        path: A ``.json`` (a list of records), ``.jsonl`` or ``.parquet`` file.
        source: Recorded in each :class:`Instruction`.
        id_prefix: Prepended to each record's id (``"wz-"`` for WizardLM).

    Returns:
        The instructions, in file order.

    Raises:
        InstructionDataError: The file is missing, unreadable, or holds no instruction.
    """
    path = Path(path)
    if not path.is_file():
        raise InstructionDataError(
            f"instruction file {str(path)!r} does not exist; expected a .json, .jsonl or .parquet file "
            "of WizardLM records (conversations) or records with an 'instruction' field"
        )
    records = _read_records(path)
    instructions = _to_instructions(records, source=source, id_prefix=id_prefix)
    if not instructions:
        raise InstructionDataError(
            f"instruction file {str(path)!r} holds no instruction; expected records with "
            "'conversations' (a first human turn) or an 'instruction' field"
        )
    return instructions


def load_wizardlm_instructions(
    data_file: str | Path | None = None,
    *,
    max_instructions: int | None = None,
    cache_dir: str | Path | None = None,
) -> list[Instruction]:
    """WizardLM evol-instruct V2 instructions (the first human turns; answers are ignored).

    Args:
        data_file: A local copy (``.json`` as published, ``.jsonl`` or ``.parquet``); ``None``
            loads :data:`WIZARDLM_HUB_ID` from the hub with ``datasets``.
        max_instructions: Keep only the first this many.
        cache_dir: ``datasets`` cache folder for the hub download.

    Returns:
        Instructions with ids ``wz-<idx>``.

    Raises:
        InstructionDataError: The hub cannot be reached (the message names ``data_file=``),
            or the local file cannot be read.
    """
    if data_file is not None:
        items = load_instruction_file(data_file, source="wizardlm", id_prefix="wz-")
    else:
        try:
            from datasets import load_dataset

            rows: Iterable[Mapping[str, Any]] = load_dataset(
                WIZARDLM_HUB_ID, split="train", cache_dir=None if cache_dir is None else str(cache_dir)
            )
        except ImportError as exc:
            raise InstructionDataError(
                f"loading {WIZARDLM_HUB_ID} needs the datasets package (pip install 'affectgym[train]'); "
                "or pass data_file=PATH to a local copy (.json, .jsonl or .parquet)"
            ) from exc
        except (OSError, ConnectionError, ValueError) as exc:
            raise InstructionDataError(
                f"could not load {WIZARDLM_HUB_ID} from the hub ({type(exc).__name__}); without network, "
                "pass data_file=PATH to a local copy (.json, .jsonl or .parquet)"
            ) from exc
        items = _to_instructions(rows, source="wizardlm", id_prefix="wz-")
    return items[:max_instructions] if max_instructions is not None else items


def _read_records(path: Path) -> list[Mapping[str, Any]]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist()
        text = path.read_text(encoding="utf-8")
        if suffix == ".jsonl" or (suffix != ".json" and not text.lstrip().startswith("[")):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InstructionDataError(
            f"could not read instruction file {str(path)!r} ({type(exc).__name__}: {exc}); "
            "expected JSON (a list of records), JSON Lines or parquet"
        ) from exc
    except ImportError as exc:
        raise InstructionDataError(f"reading {str(path)!r} needs pyarrow (pip install pyarrow)") from exc
    if isinstance(data, Mapping):
        data = data.get("data", data.get("train", [data]))
    if not isinstance(data, list):
        raise InstructionDataError(f"instruction file {str(path)!r} must hold a list of records, got {type(data).__name__}")
    return data


def _to_instructions(records: Iterable[Any], *, source: str, id_prefix: str) -> list[Instruction]:
    seen: set[str] = set()
    instructions: list[Instruction] = []
    for record in records:
        if not isinstance(record, Mapping):
            continue
        text = first_human_turn(record.get("conversations"))
        if text is None:
            raw = record.get("instruction")
            text = raw.strip() if isinstance(raw, str) and raw.strip() else None
        if text is None:
            continue
        raw_id = record.get("id", record.get("idx"))
        item_id = str(raw_id) if raw_id not in (None, "") else hashlib.sha256(text.encode()).hexdigest()[:12]
        item_id = id_prefix + item_id
        if item_id in seen:
            continue
        seen.add(item_id)
        topic = record.get("topic")
        kind = record.get("kind")
        instructions.append(
            Instruction(
                id=item_id,
                text=text,
                topic=topic.strip() if isinstance(topic, str) and topic.strip() else None,
                kind=kind if isinstance(kind, str) else None,
                source=source,
            )
        )
    return instructions


class InstructionLoader(Protocol):
    """Reads an instruction set, given the env's ``data_file`` as a keyword (a loader may ignore it)."""

    def __call__(self, *, data_file: str | Path | None) -> list[Instruction]:
        """The set's instructions; ``data_file`` is what the env was given."""


def load_instructions(name: str, *, data_file: str | Path | None = None) -> list[Instruction]:
    """The instructions of the set registered as ``name`` (``"embedded"``, ``"file"``, ``"wizardlm"``, a plug-in's).

    Args:
        name: A name of :func:`affectgym.data.registry.datasets` ``("instructions")``.
        data_file: A local JSON, JSON Lines or parquet file: what ``"file"`` reads, and
            ``"wizardlm"`` instead of the hub (a local copy).

    Raises:
        ValueError: An unknown name (the message lists the known ones and the plug-in way).
        InstructionDataError: The set cannot be read, or its loader returned no instructions.

    Examples:
        >>> [item.id for item in load_instructions("embedded")][:2]
        ['es001', 'es002']
    """
    return read_dataset("instructions", name, Instruction, InstructionDataError, data_file=data_file)


def _embedded(*, data_file: str | Path | None) -> list[Instruction]:
    """The 221 instructions shipped with affectgym."""
    return load_embedded_instructions()


def _file(*, data_file: str | Path | None) -> list[Instruction]:
    """A local JSON, JSON Lines or parquet file, ``data_file``."""
    if data_file is None:
        raise InstructionDataError("instructions='file' needs data_file=PATH (a .json, .jsonl or .parquet file)")
    return load_instruction_file(data_file)


def _wizardlm(*, data_file: str | Path | None) -> list[Instruction]:
    """WizardLM evol-instruct V2 from the hub, or ``data_file`` as its local copy."""
    return load_wizardlm_instructions(data_file)


register_dataset("instructions", "embedded", _embedded)
register_dataset("instructions", "file", _file)
register_dataset("instructions", "wizardlm", _wizardlm)
