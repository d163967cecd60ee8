"""Labelled speech clips from the three kinds of source: embedded, local folder, hub.

Every loader returns :class:`SpeechClip` records. Clip ids never encode the label (a
folder dataset's ``angry/take01.wav`` gets an id hashed from its audio bytes, not from its
label or file name), because an agent sees the id.

* :func:`load_embedded` -- the espeak-ng corpora shipped in the package (offline).
* :func:`load_audio_folder` -- ``DIR/<label>/<clip>.<ext>`` with an optional ``<clip>.txt``
  transcript beside each clip; the label set is the folder names (hidden ones skipped).
* :func:`load_manifest` -- a CSV or JSONL manifest of ``path,label[,transcript,speaker,group,split]``
  rows, for a corpus in any layout.
* :func:`load_mustard` -- MUStARD's ``sarcasm_data.json`` (or any data in its format), with
  audio from ``DIR/audio/<id>.<ext>`` or the original ``DIR/utterances_final/<id>.mp4``.
* :func:`load_mustard_hub` -- the authors' JSON and the audio dataset from the Hugging Face
  hub; with no network it fails with one line naming the ``data_dir`` alternative.

:func:`screen_clips` checks every clip's audio file (header only) and skips or refuses the
bad ones; :func:`clip_groups` gives each clip the group key its train/eval split keeps
together. Every problem with a dataset's files is a :class:`DatasetError` naming the file,
and for MUStARD's JSON the clip id and the field.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from affectgym.data.jsonl import iter_json_lines

AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".mp3", ".m4a", ".aac", ".mp4")
MUSTARD_LABELS = ("sarcastic", "sincere")
MUSTARD_HUB_AUDIO = "DynamicSuperb/SarcasmDetection_Mustard"
MUSTARD_JSON_URL = "https://raw.githubusercontent.com/soujanyaporia/MUStARD/master/data/sarcasm_data.json"
#: Named ways of grouping clips for a split; a path to a JSON or CSV mapping file works too.
GROUP_KEYS = ("transcript", "speaker", "group", "clip")
#: What :func:`screen_clips` does with a clip whose audio file is unusable.
BAD_CLIP_POLICIES = ("skip", "error")
#: Columns of a manifest (CSV header or JSONL keys): the first two are required.
MANIFEST_COLUMNS = ("path", "label", "transcript", "speaker", "group", "split")
#: Largest transcript file read beside a clip.
MAX_TRANSCRIPT_BYTES = 1 << 20
#: Longest value of one manifest column, in characters (csv's own default field limit).
MAX_MANIFEST_FIELD_CHARS = 131072
#: Longest manifest line read at once, in characters: a manifest is read a line at a time, never whole.
MAX_MANIFEST_LINE_CHARS = 8 * MAX_MANIFEST_FIELD_CHARS
#: A manifest row as JSONL writes it, for error messages.
_EXAMPLE_ROW = '{"path": "clips/a.wav", "label": "angry"}'
_SPACES = re.compile(r"\s+")
_PLAIN_CLIP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a file name stem, never a path

log = logging.getLogger(__name__)


class DatasetError(ValueError):
    """A dataset could not be read; the message names the path and what is expected."""


@dataclass(frozen=True)
class SpeechClip:
    """One labelled utterance.

    Attributes:
        id: Stable id that does not encode the label.
        transcript: What is said.
        label: Gold label.
        audio_path: Audio file, or ``None`` when the clip has no audio.
        context: Preceding lines, each ``"SPEAKER: text"``.
        speaker: Who says the line.
        pivot: Whether only the delivery decides the label (the words alone are ambiguous).
        show: Source show or corpus part (MUStARD's speaker-independent split uses it).
        group: The clip's split group as its source gives it (a manifest's ``group`` column):
            clips of one group always land in the same split.
        split: The split its source puts it in (a manifest's ``split`` column, e.g. a corpus's
            official ``train``/``eval`` partition), or ``None``.
    """

    id: str
    transcript: str
    label: str
    audio_path: str | None = None
    context: tuple[str, ...] = ()
    speaker: str | None = None
    pivot: bool = False
    show: str | None = None
    group: str | None = None
    split: str | None = None


def load_embedded(kind: str, version: str = "v2") -> list[SpeechClip]:
    """The embedded espeak-ng corpus: ``kind="sarcasm"`` or ``"emotion"``, corpus ``version`` ``"v2"`` or ``"v1"``."""
    from affectgym.data.speech_corpus import load_speech_manifest

    return [
        SpeechClip(
            id=record["id"],
            transcript=record["text"],
            label=record["label"],
            audio_path=str(record["audio_path"]),
            context=tuple(record.get("context", ())),
            speaker=record.get("speaker"),
            pivot=bool(record.get("pivot", False)),
            show="embedded",
        )
        for record in load_speech_manifest(kind, version=version)
    ]


def load_audio_folder(data_dir: str | Path, on_bad_clip: str = "skip") -> list[SpeechClip]:
    """Clips from ``DIR/<label>/<clip>.<audio ext>`` (+ optional ``<clip>.txt`` transcripts).

    Hidden folders and files (names starting with ``.``, such as ``.ipynb_checkpoints``
    or macOS's ``._take01.wav``) are skipped. Every entry with an audio extension becomes
    a clip, even one that is no usable audio file (a folder named ``x.wav``, a dangling
    link, a FIFO, a link to a device): :func:`screen_clips` reports those with their
    reasons. Nothing but a regular file is ever read. A clip whose transcript cannot be used
    (not UTF-8, not a regular file, over :data:`MAX_TRANSCRIPT_BYTES`) is skipped with one
    warning naming each (``on_bad_clip="skip"``) or refused.

    Raises:
        DatasetError: The folder is missing or holds no audio in label sub-folders, or
            ``on_bad_clip="error"`` and some clip's transcript is bad (each named).
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise DatasetError(f"data_dir {str(root)!r} is not a folder; expected DIR/<label>/<clip>.wav")
    clips, bad = [], []
    copies: dict[str, int] = {}
    for label_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        candidates = (
            p for p in label_dir.iterdir() if p.suffix.lower() in AUDIO_EXTENSIONS and not p.name.startswith(".")
        )
        for audio in sorted(candidates):
            transcript, problem = _read_transcript(audio.with_suffix(".txt"))
            if problem:
                bad.append(f"{audio}: {problem}")
                continue
            clips.append(SpeechClip(id=hashed_clip_id(audio, root, copies), transcript=transcript, label=label_dir.name,
                                    audio_path=str(audio)))
    if bad and on_bad_clip == "error":
        raise DatasetError(f"{len(bad)} clip(s) cannot be used (pass on_bad_clip='skip' to leave them out): "
                           + "; ".join(bad))
    if bad:
        log.warning("skipping %d clip(s) that cannot be used: %s", len(bad), "; ".join(bad))
    if not clips:
        raise DatasetError(
            f"no audio found in {str(root)!r}; expected DIR/<label>/<clip>.<ext> with ext in "
            f"{', '.join(AUDIO_EXTENSIONS)}"
        )
    return clips


def load_manifest(path: str | Path) -> list[SpeechClip]:
    """Clips listed in a manifest: a CSV file with a header row, or JSONL, one clip a row.

    Columns (:data:`MANIFEST_COLUMNS`): ``path`` (the audio file, relative to the manifest's
    folder or absolute) and ``label`` are required; ``transcript``, ``speaker``, ``group``
    (clips of one group share a split) and ``split`` (the corpus's own partition, e.g.
    ``train``/``eval``) are optional, each text of at most :data:`MAX_MANIFEST_FIELD_CHARS`
    characters. The no-code path for any corpus: write one line per clip, whatever its
    layout on disk. The file is read a line at a time (never whole, and no line longer than
    :data:`MAX_MANIFEST_LINE_CHARS`). Clip ids are hashed from the audio bytes, as a folder
    dataset's; two files of the same bytes and different labels load with a warning naming
    both rows; bad audio files are left to :func:`screen_clips`.

    Raises:
        DatasetError: The manifest is missing, not a regular file, not CSV/JSONL or UTF-8,
            lists no clip, or has an unknown column, a row without its path or label, a value
            that is not text or is too long, or one audio file listed twice, however its path
            is spelled (file, line and column named).
    """
    manifest = Path(path)
    if not manifest.is_file():
        raise DatasetError(f"manifest {str(manifest)!r} is not a file; expected a .csv or .jsonl of "
                           f"{', '.join(MANIFEST_COLUMNS)} rows")
    root, clips = manifest.parent, []
    rows_of_file: dict[str, tuple[int, str]] = {}  # the audio file, links and '..' resolved -> (line, path)
    rows_of_bytes: dict[str, tuple[int, str, str]] = {}  # audio bytes' digest -> (line, path, label)
    other_labels: list[str] = []
    copies: dict[str, int] = {}
    for number, row in _manifest_rows(manifest):
        audio = Path(row["path"]) if Path(row["path"]).is_absolute() else root / row["path"]
        first = rows_of_file.setdefault(os.path.realpath(audio), (number, row["path"]))
        if first[0] != number:
            raise DatasetError(f"{manifest}:{number}: {row['path']!r} is the same audio file as line {first[0]} "
                               f"({first[1]!r}); list each clip once")
        digest = content_digest(audio, root)
        line, first_path, first_label = rows_of_bytes.setdefault(digest, (number, row["path"], row["label"]))
        if first_label != row["label"]:
            other_labels.append(f"line {number} ({row['path']!r}, {row['label']!r}) has the same bytes as "
                                f"line {line} ({first_path!r}, {first_label!r})")
        clips.append(SpeechClip(
            id=hashed_clip_id(audio, root, copies, digest=digest), transcript=row.get("transcript") or "",
            label=row["label"], audio_path=str(audio), speaker=row.get("speaker") or None,
            group=row.get("group") or None, split=row.get("split") or None,
        ))
    if not clips:
        raise DatasetError(f"manifest {str(manifest)!r} lists no clip")
    if other_labels:
        log.warning("%s: %d clip(s) are byte-identical to a clip of another label (one audio, two labels): %s",
                    manifest, len(other_labels), "; ".join(other_labels))
    return clips


def _manifest_rows(manifest: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line number, row)`` of a CSV or JSONL manifest, read a line at a time, every row checked."""
    suffix = manifest.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise DatasetError(f"manifest {str(manifest)!r}: expected a .csv (with a header row) or .jsonl file")
    try:  # csv wants newline="" (quoted fields may hold line breaks); JSON Lines end at any line break
        with manifest.open(encoding="utf-8-sig", newline="" if suffix == ".csv" else None) as handle:
            rows = _csv_rows(manifest, handle) if suffix == ".csv" else _jsonl_rows(manifest, handle)
            for number, row in rows:
                yield number, _checked_row(manifest, number, row)
    except UnicodeDecodeError as exc:
        raise DatasetError(f"manifest {str(manifest)!r} is not UTF-8 text ({exc.reason}); save it as UTF-8") from None


def _capped_lines(handle: TextIO) -> Iterator[str]:
    """The lines of ``handle``; a line longer than :data:`MAX_MANIFEST_LINE_CHARS` comes in pieces of that size."""
    while line := handle.readline(MAX_MANIFEST_LINE_CHARS + 1):
        yield line


def _jsonl_rows(manifest: Path, handle: TextIO) -> Iterator[tuple[int, Any]]:
    def lines() -> Iterator[str]:
        for number, line in enumerate(_capped_lines(handle), 1):
            if len(line.rstrip("\r\n")) > MAX_MANIFEST_LINE_CHARS:
                raise DatasetError(f"{manifest}:{number}: the line is longer than {MAX_MANIFEST_LINE_CHARS} characters; "
                                   f"a row holds one clip's {', '.join(MANIFEST_COLUMNS)}")
            yield line

    for number, row in iter_json_lines(lines(), manifest, DatasetError):
        if not isinstance(row, dict):
            raise DatasetError(f"{manifest}:{number}: a row must be a JSON object of {', '.join(MANIFEST_COLUMNS)}")
        yield number, row


def _csv_rows(manifest: Path, handle: TextIO) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of a CSV manifest, each with the line it starts on; csv's own errors named by file, line and column."""
    record: list[str] = []  # the lines of the row being read

    def lines() -> Iterator[str]:
        for line in _capped_lines(handle):
            record.append(line)
            yield line

    reader = csv.DictReader(lines())
    start = 1

    def named(exc: csv.Error, columns: Sequence[str] | None) -> DatasetError:
        start_of_row = start + sum(1 for _ in itertools.takewhile(_is_blank, record))
        if "field larger than field limit" not in str(exc):
            return DatasetError(f"{manifest}:{start_of_row}: not CSV ({exc})")
        limit = csv.field_size_limit()
        return DatasetError(_too_long(manifest, start_of_row, _long_csv_field(record, columns, limit), limit))

    try:
        columns = reader.fieldnames
    except csv.Error as exc:
        raise named(exc, None) from None
    while columns is not None:
        start, record[:] = reader.line_num + 1, []
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise named(exc, columns) from None
        yield start + sum(1 for _ in itertools.takewhile(_is_blank, record)), row


def _is_blank(line: str) -> bool:
    return line in ("\n", "\r\n", "\r")


def _long_csv_field(record: Sequence[str], columns: Sequence[str] | None, limit: int) -> str:
    """The column of the first field of a CSV row (its lines ``record``) longer than ``limit`` characters."""
    index, length, quoted = 0, 0, False
    for char in itertools.chain.from_iterable(record):
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            index, length = index + 1, 0
        else:
            length += 1
            if length > limit:
                break
    if columns is None:
        return f"header's column {index + 1}"
    return repr(columns[index]) if index < len(columns) else f"extra column {index + 1}"


def _too_long(manifest: Path, number: int, column: str, limit: int) -> str:
    return (f"{manifest}:{number}: the {column} field is longer than {limit} characters, the most a manifest "
            "field holds; a transcript is one utterance")


def _checked_row(manifest: Path, number: int, row: Mapping[Any, Any]) -> dict[str, str]:
    """A manifest row whose columns are known, whose path and label are there, and whose values are short text."""
    unknown = sorted(str(key) for key in row if key not in MANIFEST_COLUMNS)
    if unknown:
        raise DatasetError(f"{manifest}:{number}: unknown column(s) {unknown}; accepted: {', '.join(MANIFEST_COLUMNS)}")
    for key, value in row.items():
        if value is not None and not isinstance(value, str):
            raise DatasetError(f"{manifest}:{number}: {key} is {_json_type(value)}, not text; every manifest column "
                               f"holds a JSON string, e.g. {_EXAMPLE_ROW}")
        if value is not None and len(value) > MAX_MANIFEST_FIELD_CHARS:
            raise DatasetError(_too_long(manifest, number, repr(key), MAX_MANIFEST_FIELD_CHARS))
    for key in ("path", "label"):
        if not (row.get(key) or "").strip():
            raise DatasetError(f"{manifest}:{number}: no {key}; every row needs a path and a label")
    return {key: value.strip() for key, value in row.items() if value is not None}


def _read_transcript(path: Path) -> tuple[str, str | None]:
    """The transcript beside a clip (``""`` when there is none), or why it cannot be used."""
    if not path.exists() and not path.is_symlink():
        return "", None
    if not path.is_file():
        return "", f"its transcript {path.name} is not a regular file"
    size = path.stat().st_size
    if size > MAX_TRANSCRIPT_BYTES:
        return "", f"its transcript {path.name} is {size} bytes, more than {MAX_TRANSCRIPT_BYTES}"
    try:
        return path.read_text(encoding="utf-8").strip(), None
    except UnicodeDecodeError as exc:
        return "", (f"its transcript {path.name} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                    "save it as UTF-8 (e.g. iconv -f latin1 -t utf-8)")
    except OSError as exc:
        return "", f"its transcript {path.name} cannot be read ({exc.strerror or exc})"


def hashed_clip_id(audio: Path, root: Path, copies: dict[str, int], digest: str | None = None) -> str:
    """A clip's id from its audio bytes (never its name, which may encode the label); byte-identical
    files get ``-2``, ``-3``, ... in the order they are met (``copies`` counts them). ``digest`` is
    the file's :func:`content_digest` when the caller has it already."""
    digest = "clip-" + (digest or content_digest(audio, root))[:12]
    copies[digest] = copies.get(digest, 0) + 1
    return digest if copies[digest] == 1 else f"{digest}-{copies[digest]}"


def content_digest(audio: Path, root: Path) -> str:
    """SHA-256 of a clip's bytes, or of its path when it is no regular file or cannot be read (a bad clip,
    for :func:`screen_clips`): a FIFO or a device is never read."""
    try:
        if audio.is_file():
            digest = hashlib.sha256()
            with audio.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            return digest.hexdigest()
    except OSError:
        pass
    where = audio.relative_to(root) if audio.is_relative_to(root) else audio
    return hashlib.sha256(b"unreadable:" + where.as_posix().encode()).hexdigest()


def screen_clips(
    clips: Sequence[SpeechClip], on_bad_clip: str = "skip", min_duration_s: float = 0.0
) -> list[SpeechClip]:
    """The clips whose audio file passes fast header checks; the bad ones skipped or refused.

    A clip is bad when its file is missing, a dangling link, a folder, empty, not audio
    libsndfile can read, shorter than ``min_duration_s`` or longer than the audio loader
    measures (:data:`~affectgym.features.audio.DEFAULT_MAX_DURATION_S`; see
    :func:`~affectgym.features.audio.audio_file_problem`). Clips without audio
    (``audio_path=None``) are kept: their audio tools say there is none.

    Args:
        clips: The clips of a dataset.
        on_bad_clip: ``"skip"`` (leave bad clips out, with one warning listing each with its
            path and reason) or ``"error"`` (raise, listing them).
        min_duration_s: Shortest usable clip, e.g. ``ProsodyParams().min_duration_s``.

    Returns:
        The good clips, in their order.

    Raises:
        ValueError: Unknown ``on_bad_clip``.
        DatasetError: ``on_bad_clip="error"`` and some clip is bad.

    >>> screen_clips([SpeechClip("c1", "Oh great.", "sarcastic", audio_path="/nonexistent/c1.wav")])
    []
    """
    from affectgym.features.audio import audio_file_problem

    if on_bad_clip not in BAD_CLIP_POLICIES:
        raise ValueError(f"on_bad_clip must be one of {', '.join(BAD_CLIP_POLICIES)}, got {on_bad_clip!r}")
    good, bad = [], []
    for clip in clips:
        problem = None if clip.audio_path is None else audio_file_problem(clip.audio_path, min_duration_s)
        if problem is None:
            good.append(clip)
        else:
            bad.append(f"{clip.audio_path}: {problem}")
    if bad and on_bad_clip == "error":
        raise DatasetError(
            f"{len(bad)} of {len(clips)} clips have unusable audio (pass on_bad_clip='skip' to leave them "
            "out): " + "; ".join(bad)
        )
    if bad:
        log.warning("skipping %d of %d clips with unusable audio: %s", len(bad), len(clips), "; ".join(bad))
    return good


def clip_groups(
    clips: Sequence[SpeechClip], group_by: str | None = None, data_dir: str | Path | None = None
) -> dict[str, str]:
    """The split group of each clip: clips of one group always land in the same split.

    Args:
        clips: The clips of a dataset.
        group_by: ``"group"`` (the source's own groups, a manifest's ``group`` column: the
            default, used when ``None``, when every clip has one), ``"transcript"`` (the
            default otherwise: every clip of the same
            line, whatever voice or delivery, shares a group; clips with no transcript are
            groups of their own), ``"speaker"`` (all clips of a speaker; every clip must name
            its speaker), ``"clip"`` (no grouping: a line recorded twice can then sit
            on both sides), or the path of a JSON object or a two-column CSV (``clip,group``)
            mapping each clip, by file path relative to ``data_dir`` or by id, to a group.
        data_dir: The dataset folder, for paths in a mapping file.

    Returns:
        Clip id -> group key.

    Raises:
        DatasetError: An unknown ``group_by``, an unreadable mapping file, clips it misses, or
            ``"speaker"`` with clips that name no speaker.

    >>> clips = [SpeechClip("a", "Oh, great.", "sarcastic"), SpeechClip("b", "oh,  GREAT.", "sincere")]
    >>> clip_groups(clips) == {"a": "line:oh, great.", "b": "line:oh, great."}
    True
    """
    mode = group_by or ("group" if clips and all(c.group for c in clips) else "transcript")
    if mode == "group":
        missing = [c.audio_path or c.id for c in clips if not c.group]
        if missing:
            raise DatasetError(f"group_by='group' needs every clip's group (a manifest's group column); "
                               f"{len(missing)} clips have none, e.g. {', '.join(missing[:2])}")
        return {c.id: f"group:{c.group}" for c in clips}
    if mode == "transcript":
        return {c.id: f"line:{_SPACES.sub(' ', c.transcript).strip().lower()}" if c.transcript.strip() else c.id for c in clips}
    if mode == "speaker":
        require_speakers(clips, "group_by='speaker'")
        return {c.id: f"speaker:{c.speaker}" for c in clips}
    if mode == "clip":
        return {c.id: c.id for c in clips}
    path = Path(mode)
    if not path.is_file():
        raise DatasetError(
            f"group_by={group_by!r} is neither one of {', '.join(GROUP_KEYS)} nor an existing JSON/CSV file "
            "mapping clips to groups"
        )
    mapping = _read_group_file(path)
    root = Path(data_dir) if data_dir is not None else None
    groups, missing = {}, []
    for clip in clips:
        keys = [clip.id]
        if root is not None and clip.audio_path:
            keys.append(_relative_path(Path(clip.audio_path), root))
        group = next((mapping[k] for k in keys if k in mapping), None)
        if group is None:
            missing.append(keys[-1])
        else:
            groups[clip.id] = f"group:{group}"
    if missing:
        raise DatasetError(f"{str(path)!r} gives no group for {len(missing)} clip(s), e.g. {', '.join(missing[:3])}")
    return groups


def require_speakers(clips: Sequence[SpeechClip], option: str) -> None:
    """Refuse an option that needs every clip's speaker when some clip names none.

    Raises:
        DatasetError: Names the option, how many clips lack a speaker and what to do.
    """
    missing = [c.audio_path or c.id for c in clips if not c.speaker]
    if missing:
        raise DatasetError(
            f"{option} needs every clip's speaker, but {len(missing)} of {len(clips)} clips name none (e.g. "
            f"{', '.join(missing[:2])}); a DIR/<label>/ folder records no speakers: pass group_by=<a clip,group "
            "CSV> mapping each clip to its speaker instead"
        )


def _relative_path(path: Path, root: Path) -> str:
    """A clip's path inside the data folder, as the folder lists it (a symbolic link is not followed out)."""
    if path.absolute().is_relative_to(root.absolute()):
        return path.absolute().relative_to(root.absolute()).as_posix()
    return path.resolve().relative_to(root.resolve()).as_posix() if path.resolve().is_relative_to(root.resolve()) \
        else path.as_posix()


def _read_group_file(path: Path) -> Mapping[str, str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{str(path)!r} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise DatasetError(f"{str(path)!r} must be a JSON object mapping clip -> group")
        return {str(k): str(v) for k, v in data.items()}
    rows = [row for row in csv.reader(text.splitlines()) if row]
    if rows and [cell.strip().lower() for cell in rows[0]] == ["clip", "group"]:
        rows = rows[1:]
    if any(len(row) != 2 for row in rows):
        raise DatasetError(f"{str(path)!r}: every CSV row must be 'clip,group' (a .json file may map them instead)")
    return {row[0].strip(): row[1].strip() for row in rows}


def load_mustard(data_dir: str | Path) -> list[SpeechClip]:
    """MUStARD-format annotations from ``DIR/sarcasm_data.json``, in the file's key order.

    The file is a JSON object mapping each clip id (a plain name such as ``"1_60"``) to a
    record with ``utterance`` and ``speaker`` (non-empty strings), ``context`` and
    ``context_speakers`` (lists of strings of one length), ``sarcasm`` (``true`` or
    ``false``, nothing else) and optionally ``show`` (a string). Other fields are ignored.
    Audio is looked up as ``DIR/audio/<id>.<wav|flac|mp3|m4a|aac>`` and then
    ``DIR/utterances_final/<id>.mp4``; clips without either have ``audio_path=None``.

    Raises:
        DatasetError: The JSON is missing, unreadable, or not in that format; the message
            names the file, the clip id and the field.
    """
    root = Path(data_dir)
    path = root / "sarcasm_data.json"
    data = _read_json(path, "data_dir must hold MUStARD's sarcasm_data.json")
    if not isinstance(data, dict):
        raise DatasetError(f"{str(path)!r} must be a JSON object mapping clip ids to records, got {_json_type(data)}")
    return [_mustard_clip(root, clip_id, record, path) for clip_id, record in data.items()]


def _read_json(path: Path, what: str) -> Any:
    """Parse a dataset's JSON file; every way it can fail is a :class:`DatasetError` naming it."""
    if not path.is_file():
        raise DatasetError(f"{str(path)!r} not found; {what}")

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        unique = dict(pairs)
        if len(unique) < len(pairs):
            repeated = next(key for key in unique if sum(k == key for k, _ in pairs) > 1)
            raise DatasetError(f"{str(path)!r}: the key {repeated!r} appears more than once in one object")
        return unique

    try:
        return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except RecursionError as exc:
        raise DatasetError(f"{str(path)!r} is nested too deeply to be a dataset file") from exc
    except ValueError as exc:  # JSONDecodeError, and integers past Python's digit limit
        raise DatasetError(f"{str(path)!r} is not valid JSON: {exc}") from exc
    except OSError as exc:
        raise DatasetError(f"{str(path)!r} cannot be read ({exc.strerror or exc})") from exc


def _json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for error messages."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"the number {value!r}"
    return names.get(type(value), type(value).__name__)


def _mustard_clip(root: Path, clip_id: str, record: object, path: Path) -> SpeechClip:
    where = f"{str(path)!r}: clip {clip_id!r}"
    if not _PLAIN_CLIP_ID.match(clip_id):
        raise DatasetError(
            f"{where}: the clip id must be a plain file name stem (letters, digits, '_', '.', '-'), "
            "since the audio is looked up by it"
        )
    if not isinstance(record, dict):
        raise DatasetError(f"{where}: the record must be a JSON object, got {_json_type(record)}")

    def field(name: str, ok: bool, expected: str) -> None:
        if name not in record:
            raise DatasetError(f"{where}: field {name!r} is missing; expected {expected}")
        if not ok:
            raise DatasetError(f"{where}: field {name!r} is {_json_type(record[name])}; expected {expected}")

    for name in ("utterance", "speaker"):
        value = record.get(name)
        field(name, isinstance(value, str) and bool(value.strip()), "a non-empty string")
    for name in ("context", "context_speakers"):
        value = record.get(name)
        field(name, isinstance(value, list) and all(isinstance(line, str) for line in value), "a list of strings")
    if len(record["context"]) != len(record["context_speakers"]):
        raise DatasetError(
            f"{where}: field 'context_speakers' has {len(record['context_speakers'])} entries for "
            f"{len(record['context'])} lines of 'context'; expected one speaker per line"
        )
    field("sarcasm", isinstance(record.get("sarcasm"), bool), "true or false")
    show = record.get("show")
    if show is not None and not isinstance(show, str):
        raise DatasetError(f"{where}: field 'show' is {_json_type(show)}; expected a string (or no field)")
    return SpeechClip(
        id=clip_id,
        transcript=record["utterance"],
        label="sarcastic" if record["sarcasm"] else "sincere",
        audio_path=_find_audio(root, clip_id),
        context=tuple(f"{speaker}: {line}" for speaker, line in zip(record["context_speakers"], record["context"], strict=True)),
        speaker=record["speaker"],
        show=show,
    )


def _find_audio(root: Path, clip_id: str) -> str | None:
    for ext in (".wav", ".flac", ".mp3", ".m4a", ".aac"):
        candidate = root / "audio" / f"{clip_id}{ext}"
        if candidate.is_file():
            return str(candidate)
    video = root / "utterances_final" / f"{clip_id}.mp4"
    return str(video) if video.is_file() else None


def mustard_folds(data_dir: str | Path) -> list[dict[str, list[str]]]:
    """The authors' 5 speaker-dependent folds from ``DIR/split_indices.json``, as clip ids.

    The file is a JSON array of ``{"train": [...], "test": [...]}`` objects whose entries
    index the clips of ``DIR/sarcasm_data.json`` in its key order: integers from 0 to the
    number of clips - 1, none twice in a part, none in both parts of a fold.

    Returns:
        One ``{"train": [ids], "test": [ids]}`` per fold.

    Raises:
        DatasetError: Either file is missing or malformed; the message names the file, the
            fold, the field and the index or clip id at fault.
    """
    root = Path(data_dir)
    path = root / "split_indices.json"
    folds = _read_json(path, "fold splits need MUStARD's split_indices.json")
    clip_ids = [clip.id for clip in load_mustard(root)]
    shape = "a JSON array of {'train': [...], 'test': [...]} folds"
    if not isinstance(folds, list) or not folds:
        raise DatasetError(f"{str(path)!r} must be {shape}, got {_json_type(folds)}")
    resolved = []
    for number, fold in enumerate(folds, start=1):
        if not isinstance(fold, dict):
            raise DatasetError(f"{str(path)!r}: fold {number} is {_json_type(fold)}; expected {shape}")
        parts = {}
        for part in ("train", "test"):
            where = f"{str(path)!r}: fold {number}, field {part!r}"
            indices = fold.get(part)
            if not isinstance(indices, list):
                raise DatasetError(f"{where} is {'missing' if part not in fold else _json_type(indices)}; expected a list of clip indices")
            for index in indices:
                if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(clip_ids):
                    raise DatasetError(
                        f"{where}: index {index!r} is not a clip of sarcasm_data.json; expected integers "
                        f"0..{len(clip_ids) - 1}"
                    )
            ids = [clip_ids[index] for index in indices]
            if len(set(ids)) < len(ids):
                repeated = next(i for i in ids if ids.count(i) > 1)
                raise DatasetError(f"{where}: clip {repeated!r} is listed more than once")
            parts[part] = ids
        train = set(parts["train"])
        overlap = [i for i in parts["test"] if i in train]
        if overlap:
            raise DatasetError(
                f"{str(path)!r}: fold {number}: clip {overlap[0]!r} is in both 'train' and 'test' "
                f"({len(overlap)} clips in all); a fold's parts must be disjoint"
            )
        resolved.append(parts)
    return resolved


def load_mustard_hub(cache_dir: str | Path | None = None) -> list[SpeechClip]:
    """MUStARD from the hub: the authors' JSON and the audio parquet, cached locally.

    Raises:
        DatasetError: The hub cannot be reached (the message names the ``data_dir`` alternative).
    """
    import tempfile
    import urllib.error
    import urllib.request

    target = Path(cache_dir or tempfile.mkdtemp(prefix="affectgym-mustard-"))
    target.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(MUSTARD_JSON_URL, timeout=20) as response:
            (target / "sarcasm_data.json").write_bytes(response.read())
        from datasets import load_dataset

        audio = load_dataset(MUSTARD_HUB_AUDIO, split="test", cache_dir=str(target / "hf"))
    except (urllib.error.URLError, OSError, ConnectionError) as exc:
        raise DatasetError(
            f"could not download MUStARD ({exc.__class__.__name__}); without network, pass "
            "dataset='mustard', data_dir=DIR with DIR/sarcasm_data.json (and optional DIR/audio/<id>.wav)"
        ) from exc
    (target / "audio").mkdir(exist_ok=True)
    for row in audio:
        clip_id = str(row.get("file", row.get("id", ""))).rsplit("/", 1)[-1].split(".")[0]
        samples = row["audio"]
        if clip_id:
            import soundfile

            soundfile.write(target / "audio" / f"{clip_id}.wav", samples["array"], samples["sampling_rate"])
    return load_mustard(target)


__all__ = [
    "BAD_CLIP_POLICIES",
    "GROUP_KEYS",
    "MANIFEST_COLUMNS",
    "MAX_MANIFEST_FIELD_CHARS",
    "MAX_MANIFEST_LINE_CHARS",
    "DatasetError",
    "clip_groups",
    "SpeechClip",
    "content_digest",
    "hashed_clip_id",
    "load_audio_folder",
    "load_embedded",
    "load_manifest",
    "load_mustard",
    "load_mustard_hub",
    "mustard_folds",
    "require_speakers",
    "screen_clips",
]
