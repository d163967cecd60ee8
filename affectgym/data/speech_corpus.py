"""The embedded speech corpora: espeak-ng renderings committed under affectgym/data.

Two versions (:data:`CORPUS_VERSIONS`), each a folder with one ``manifest.jsonl`` that two
kinds share: ``"sarcasm"`` (lines rendered sincere and sarcastic; *pivot* lines say the same
words both ways) and ``"emotion"`` (neutral sentences read angry / fearful / happy / neutral /
sad). The label lives only in the manifest; clip ids and file names are neutral.

* ``"v2"`` (``affectgym/data/speech_v2``, the default): every label in several deliveries
  whose cues overlap across labels, every cue varied clip by clip, eight voices with their own
  baselines; no single cue decides (``tools/make_speech_corpus_v2.py``).
* ``"v1"`` (``affectgym/data/speech``): one fixed delivery per label, which one prosody
  threshold separates; kept so that results measured on it reproduce
  (``tools/make_speech_corpus.py``).

Regenerating needs espeak-ng; the package never does.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from affectgym.data.jsonl import iter_json_lines

KINDS = ("sarcasm", "emotion")
LABELS = {
    "sarcasm": ("sarcastic", "sincere"),
    "emotion": ("angry", "fearful", "happy", "neutral", "sad"),
}
# field -> accepted Python types
_REQUIRED_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "kind": (str,),
    "audio": (str,),
    "duration_s": (int, float),
    "text": (str,),
    "context": (list,),
    "speaker": (str,),
    "voice": (str,),
    "label": (str,),
    "pivot": (bool, type(None)),
    "pair_id": (str,),
    "delivery": (dict,),
}


#: Corpus version -> its folder under affectgym/data.
CORPUS_VERSIONS = {"v1": "speech", "v2": "speech_v2"}
#: The version envs serve by default.
DEFAULT_VERSION = "v2"


class SpeechManifestError(ValueError):
    """The speech manifest is malformed; the message names the file, line and field."""


def speech_root(version: str = DEFAULT_VERSION) -> Path:
    """Directory of one version of the embedded corpus inside the installed package.

    Args:
        version: A key of :data:`CORPUS_VERSIONS`.

    Returns:
        Absolute path of ``affectgym/data/speech_v2`` (v2) or ``affectgym/data/speech`` (v1).

    Raises:
        ValueError: An unknown version.
    """
    if version not in CORPUS_VERSIONS:
        raise ValueError(f"unknown speech corpus version {version!r}; accepted: {', '.join(CORPUS_VERSIONS)}.")
    return Path(str(resources.files("affectgym") / "data" / CORPUS_VERSIONS[version])).resolve()


def load_speech_manifest(
    kind: str = "sarcasm", root: str | Path | None = None, version: str = DEFAULT_VERSION
) -> list[dict[str, Any]]:
    """Validated manifest records of one kind, with absolute audio paths.

    Args:
        kind: ``"sarcasm"`` or ``"emotion"``.
        root: A directory holding ``manifest.jsonl`` and the audio it names (same
            layout as the embedded corpus); the embedded corpus of ``version`` if ``None``.
        version: Which embedded corpus (:data:`CORPUS_VERSIONS`) when ``root`` is ``None``.

    Returns:
        One dict per clip, in id order: the manifest fields (``id``, ``text``,
        ``context`` as ``"SPEAKER: text"`` strings, ``speaker``, ``voice``, ``label``,
        ``pivot``, ``pair_id``, ``delivery``, ``duration_s``, ...) plus ``audio_path``,
        the absolute path of the clip's FLAC file.

    Raises:
        ValueError: Unknown ``kind``.
        SpeechManifestError: Missing manifest or audio, malformed line, wrong field
            type, unknown label, duplicate id, or an id/file name that contains its label.

    >>> clips = load_speech_manifest("sarcasm")
    >>> len(clips) >= 120 and Path(clips[0]["audio_path"]).is_absolute()
    True
    >>> len(load_speech_manifest("sarcasm", version="v1"))
    256
    """
    if kind not in KINDS:
        raise ValueError(f"unknown speech corpus kind {kind!r}; accepted: {', '.join(KINDS)}.")
    base = Path(root).resolve() if root is not None else speech_root(version)
    manifest = base / "manifest.jsonl"
    if not manifest.is_file():
        raise SpeechManifestError(
            f"{manifest}: speech manifest not found; expected manifest.jsonl with audio/ beside it "
            "(regenerate the embedded one with tools/make_speech_corpus.py)."
        )
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    with open(manifest, encoding="utf-8") as handle:
        for line_number, record in iter_json_lines(handle, manifest, SpeechManifestError):
            where = f"{manifest}:{line_number}"
            if not isinstance(record, dict):
                raise SpeechManifestError(f"{where}: each line must be a JSON object.")
            _validate(record, where, base)
            if record["id"] in seen:
                raise SpeechManifestError(f"{where}: duplicate id {record['id']!r}.")
            seen.add(record["id"])
            if record["kind"] == kind:
                records.append({**record, "audio_path": str((base / record["audio"]).resolve())})
    if not records:
        raise SpeechManifestError(f"{manifest}: no records of kind {kind!r}.")
    return sorted(records, key=lambda record: record["id"])


def _validate(record: dict[str, Any], where: str, base: Path) -> None:
    for name, types in _REQUIRED_FIELDS.items():
        if name not in record:
            raise SpeechManifestError(f"{where}: missing field {name!r}.")
        if not isinstance(record[name], types) or (
            isinstance(record[name], bool) and bool not in types
        ):
            accepted = " or ".join(t.__name__ for t in types)
            raise SpeechManifestError(
                f"{where}: field {name!r} is {type(record[name]).__name__}, expected {accepted}."
            )
    kind, label = record["kind"], record["label"]
    if kind not in KINDS:
        raise SpeechManifestError(f"{where}: kind {kind!r}; accepted: {', '.join(KINDS)}.")
    if label not in LABELS[kind]:
        raise SpeechManifestError(
            f"{where}: label {label!r} for kind {kind!r}; accepted: {', '.join(LABELS[kind])}."
        )
    for line in record["context"]:
        if not isinstance(line, str) or ": " not in line:
            raise SpeechManifestError(
                f"{where}: context entry {line!r} must be a string 'SPEAKER: text'."
            )
    for label_word in LABELS[kind]:
        if label_word in record["id"].lower() or label_word in record["audio"].lower():
            raise SpeechManifestError(
                f"{where}: id/file name {record['id']!r}/{record['audio']!r} contains the label "
                f"word {label_word!r}; ids must not reveal labels."
            )
    audio = (base / record["audio"]).resolve()
    if base not in audio.parents:
        raise SpeechManifestError(f"{where}: audio path {record['audio']!r} leaves {base}.")
    if not audio.is_file():
        raise SpeechManifestError(f"{where}: audio file {audio} does not exist.")
