"""Labelled speech clips from the three kinds of source: embedded, local folder, hub.

Every loader returns :class:`SpeechClip` records. Clip ids never encode the label (a
folder dataset's ``angry/take1.wav`` gets an id hashed from its path), because an agent
sees the id.

* :func:`load_embedded` -- the espeak-ng corpora shipped in the package (offline).
* :func:`load_audio_folder` -- ``DIR/<label>/<clip>.<ext>`` with an optional ``<clip>.txt``
  transcript beside each clip; the label set is the folder names.
* :func:`load_mustard` -- MUStARD's ``sarcasm_data.json`` (or any data in its format), with
  audio from ``DIR/audio/<id>.<ext>`` or the original ``DIR/utterances_final/<id>.mp4``.
* :func:`load_mustard_hub` -- the authors' JSON and the audio dataset from the Hugging Face
  hub; with no network it fails with one line naming the ``data_dir`` alternative.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".mp3", ".m4a", ".aac", ".mp4")
MUSTARD_LABELS = ("sarcastic", "sincere")
MUSTARD_HUB_AUDIO = "DynamicSuperb/SarcasmDetection_Mustard"
MUSTARD_JSON_URL = "https://raw.githubusercontent.com/soujanyaporia/MUStARD/master/data/sarcasm_data.json"


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
    for label_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for audio in sorted(p for p in label_dir.iterdir() if p.suffix.lower() in AUDIO_EXTENSIONS):
            transcript_file = audio.with_suffix(".txt")
            transcript = transcript_file.read_text(encoding="utf-8").strip() if transcript_file.exists() else ""
            relative = audio.relative_to(root).as_posix()
            clip_id = "clip-" + hashlib.sha256(relative.encode()).hexdigest()[:12]
            clips.append(SpeechClip(id=clip_id, transcript=transcript, label=label_dir.name, audio_path=str(audio)))
    if not clips:
        raise DatasetError(
            f"no audio found in {str(root)!r}; expected DIR/<label>/<clip>.<ext> with ext in "
            f"{', '.join(AUDIO_EXTENSIONS)}"
        )
    return clips


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
    "DatasetError",
    "SpeechClip",
    "load_audio_folder",
    "load_embedded",
    "load_mustard",
    "load_mustard_hub",
    "mustard_folds",
]
