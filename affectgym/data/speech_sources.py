"""Labelled speech clips from the three kinds of source: embedded, local folder, hub.

Every loader returns :class:`SpeechClip` records. Clip ids never encode the label (a
folder dataset's ``angry/take01.wav`` gets an id hashed from its audio bytes, not from its
label or file name), because an agent sees the id.

* :func:`load_embedded` -- the espeak-ng corpora shipped in the package (offline).
* :func:`load_audio_folder` -- ``DIR/<label>/<clip>.<ext>`` with an optional ``<clip>.txt``
  transcript beside each clip; the label set is the folder names.
* :func:`load_mustard` -- MUStARD's ``sarcasm_data.json`` (or any data in its format), with
  audio from ``DIR/audio/<id>.<ext>`` or the original ``DIR/utterances_final/<id>.mp4``.
* :func:`load_mustard_hub` -- the authors' JSON and the audio dataset from the Hugging Face
  hub; with no network it fails with one line naming the ``data_dir`` alternative.

:func:`clip_groups` gives each clip the group key its train/eval split keeps together.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".mp3", ".m4a", ".aac", ".mp4")
MUSTARD_LABELS = ("sarcastic", "sincere")
MUSTARD_HUB_AUDIO = "DynamicSuperb/SarcasmDetection_Mustard"
MUSTARD_JSON_URL = "https://raw.githubusercontent.com/soujanyaporia/MUStARD/master/data/sarcasm_data.json"
#: Named ways of grouping clips for a split; a path to a JSON or CSV mapping file works too.
GROUP_KEYS = ("transcript", "speaker", "clip")
_SPACES = re.compile(r"\s+")


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
    """

    id: str
    transcript: str
    label: str
    audio_path: str | None = None
    context: tuple[str, ...] = ()
    speaker: str | None = None
    pivot: bool = False
    show: str | None = None


def load_embedded(kind: str) -> list[SpeechClip]:
    """The embedded espeak-ng corpus: ``kind="sarcasm"`` or ``"emotion"``."""
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
        for record in load_speech_manifest(kind)
    ]


def load_audio_folder(data_dir: str | Path) -> list[SpeechClip]:
    """Clips from ``DIR/<label>/<clip>.<audio ext>`` (+ optional ``<clip>.txt`` transcripts).

    Raises:
        DatasetError: The folder is missing or holds no audio in label sub-folders.
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise DatasetError(f"data_dir {str(root)!r} is not a folder; expected DIR/<label>/<clip>.wav")
    clips = []
    copies: dict[str, int] = {}
    for label_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for audio in sorted(p for p in label_dir.iterdir() if p.suffix.lower() in AUDIO_EXTENSIONS):
            transcript_file = audio.with_suffix(".txt")
            transcript = transcript_file.read_text(encoding="utf-8").strip() if transcript_file.exists() else ""
            digest = "clip-" + hashlib.sha256(audio.read_bytes()).hexdigest()[:12]
            copies[digest] = copies.get(digest, 0) + 1  # byte-identical files: -2, -3, ... in path order
            clip_id = digest if copies[digest] == 1 else f"{digest}-{copies[digest]}"
            clips.append(SpeechClip(id=clip_id, transcript=transcript, label=label_dir.name, audio_path=str(audio)))
    if not clips:
        raise DatasetError(
            f"no audio found in {str(root)!r}; expected DIR/<label>/<clip>.<ext> with ext in "
            f"{', '.join(AUDIO_EXTENSIONS)}"
        )
    return clips


def clip_groups(
    clips: Sequence[SpeechClip], group_by: str | None = None, data_dir: str | Path | None = None
) -> dict[str, str]:
    """The split group of each clip: clips of one group always land in the same split.

    Args:
        clips: The clips of a dataset.
        group_by: ``"transcript"`` (the default, used when ``None``: every clip of the same
            line, whatever voice or delivery, shares a group; clips with no transcript are
            groups of their own), ``"speaker"`` (all clips of a speaker; clips with no speaker
            are their own group), ``"clip"`` (no grouping: a line recorded twice can then sit
            on both sides), or the path of a JSON object or a two-column CSV (``clip,group``)
            mapping each clip, by file path relative to ``data_dir`` or by id, to a group.
        data_dir: The dataset folder, for paths in a mapping file.

    Returns:
        Clip id -> group key.

    Raises:
        DatasetError: An unknown ``group_by``, an unreadable mapping file, or clips it misses.

    >>> clips = [SpeechClip("a", "Oh, great.", "sarcastic"), SpeechClip("b", "oh,  GREAT.", "sincere")]
    >>> clip_groups(clips) == {"a": "line:oh, great.", "b": "line:oh, great."}
    True
    """
    mode = group_by or "transcript"
    if mode == "transcript":
        return {c.id: f"line:{_SPACES.sub(' ', c.transcript).strip().lower()}" if c.transcript.strip() else c.id for c in clips}
    if mode == "speaker":
        return {c.id: f"speaker:{c.speaker}" if c.speaker else c.id for c in clips}
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
            keys.append(Path(clip.audio_path).resolve().relative_to(root.resolve()).as_posix())
        group = next((mapping[k] for k in keys if k in mapping), None)
        if group is None:
            missing.append(keys[-1])
        else:
            groups[clip.id] = f"group:{group}"
    if missing:
        raise DatasetError(f"{str(path)!r} gives no group for {len(missing)} clip(s), e.g. {', '.join(missing[:3])}")
    return groups


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

    Audio is looked up as ``DIR/audio/<id>.<wav|flac|mp3|m4a|aac>`` and then
    ``DIR/utterances_final/<id>.mp4``; clips without either have ``audio_path=None``.

    Raises:
        DatasetError: The JSON is missing or not in MUStARD's format.
    """
    root = Path(data_dir)
    path = root / "sarcasm_data.json"
    if not path.is_file():
        raise DatasetError(f"{str(path)!r} not found; data_dir must hold MUStARD's sarcasm_data.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{str(path)!r} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise DatasetError(f"{str(path)!r} must map clip ids to records, got {type(data).__name__}")
    return [_mustard_clip(root, clip_id, record, path) for clip_id, record in data.items()]


def _mustard_clip(root: Path, clip_id: str, record: object, path: Path) -> SpeechClip:
    required = ("utterance", "speaker", "context", "context_speakers", "sarcasm")
    if not isinstance(record, dict) or any(key not in record for key in required):
        raise DatasetError(f"{str(path)!r}: record {clip_id!r} needs the fields {', '.join(required)}")
    context = tuple(
        f"{speaker}: {line}" for speaker, line in zip(record["context_speakers"], record["context"], strict=False)
    )
    return SpeechClip(
        id=str(clip_id),
        transcript=str(record["utterance"]),
        label="sarcastic" if record["sarcasm"] else "sincere",
        audio_path=_find_audio(root, str(clip_id)),
        context=context,
        speaker=str(record["speaker"]),
        show=record.get("show"),
    )


def _find_audio(root: Path, clip_id: str) -> str | None:
    for ext in (".wav", ".flac", ".mp3", ".m4a", ".aac"):
        candidate = root / "audio" / f"{clip_id}{ext}"
        if candidate.is_file():
            return str(candidate)
    video = root / "utterances_final" / f"{clip_id}.mp4"
    return str(video) if video.is_file() else None


def mustard_folds(data_dir: str | Path) -> list[dict[str, list[int]]]:
    """The authors' 5 speaker-dependent folds from ``DIR/split_indices.json``.

    Returns:
        One ``{"train": [...], "test": [...]}`` per fold, indices into the JSON's key order.
    """
    path = Path(data_dir) / "split_indices.json"
    if not path.is_file():
        raise DatasetError(f"{str(path)!r} not found; fold splits need MUStARD's split_indices.json")
    folds = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(folds, list) or not all(isinstance(f, dict) and {"train", "test"} <= set(f) for f in folds):
        raise DatasetError(f"{str(path)!r} must be a list of {{'train': [...], 'test': [...]}} folds")
    return folds


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
    "GROUP_KEYS",
    "DatasetError",
    "clip_groups",
    "SpeechClip",
    "load_audio_folder",
    "load_embedded",
    "load_mustard",
    "load_mustard_hub",
    "mustard_folds",
]
