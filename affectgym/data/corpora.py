"""Standard speech-emotion corpora by name, read in their own layouts (no copying, no glue).

* :func:`load_ravdess` -- RAVDESS's audio-only speech files,
  ``Actor_NN/03-01-EE-II-SS-RR-NN.wav``: modality (03 audio-only), vocal channel (01
  speech), emotion ``EE`` (:data:`RAVDESS_EMOTIONS`), intensity, statement ``SS``
  (:data:`RAVDESS_STATEMENTS`), repetition, actor. Licence: CC BY-NC-SA 4.0.
* :func:`load_crema_d` -- CREMA-D's ``AudioWAV/AAAA_SSS_EEE_LL.wav``: actor, sentence code
  (:data:`CREMA_D_SENTENCES`), emotion (:data:`CREMA_D_EMOTIONS`), level. Licence: ODbL.

Both give each clip its actor as speaker and as split group, so a split holds every actor
out whole (speaker-independent, as EmoBox's folds are), and its statement as transcript.
Clip ids are hashed from the audio bytes: the file names encode the emotion, and an agent
sees the ids. Files whose names do not follow the corpus's pattern are named and skipped.

>>> sorted(set(RAVDESS_EMOTIONS.values()))[:3], CREMA_D_EMOTIONS["ANG"]
(['angry', 'calm', 'disgust'], 'angry')
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from affectgym.data.speech_sources import DatasetError, SpeechClip, hashed_clip_id

log = logging.getLogger(__name__)

RAVDESS_EMOTIONS: Mapping[str, str] = {
    "01": "neutral", "02": "calm", "03": "happy", "04": "sad", "05": "angry", "06": "fearful", "07": "disgust",
    "08": "surprised",
}
RAVDESS_STATEMENTS: Mapping[str, str] = {"01": "Kids are talking by the door.", "02": "Dogs are sitting by the door."}
_RAVDESS_NAME = re.compile(r"^(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)$")

CREMA_D_EMOTIONS: Mapping[str, str] = {
    "ANG": "angry", "DIS": "disgust", "FEA": "fearful", "HAP": "happy", "NEU": "neutral", "SAD": "sad",
}
CREMA_D_SENTENCES: Mapping[str, str] = {
    "IEO": "It's eleven o'clock.", "TIE": "That is exactly what happened.", "IOM": "I'm on my way to the meeting.",
    "IWW": "I wonder what this is about.", "TAI": "The airplane is almost full.",
    "MTI": "Maybe tomorrow it will be cold.", "IWL": "I would like a new alarm clock.",
    "ITH": "I think I have a doctor's appointment.", "DFA": "Don't forget a jacket.",
    "ITS": "I think I've seen this before.", "TSI": "The surface is slick.",
    "WSI": "We'll stop in a couple of minutes.",
}
_CREMA_D_NAME = re.compile(r"^(\d{4})_([A-Z]{3})_([A-Z]{3})_([A-Z]{2})$")


def load_ravdess(data_dir: str | Path) -> list[SpeechClip]:
    """RAVDESS's audio-only speech clips under ``data_dir`` (its ``Actor_NN`` folders, at any depth).

    Song (vocal channel 02) and video files are left out: this is the speech set.

    Raises:
        DatasetError: ``data_dir`` is not a folder, or holds no RAVDESS speech file.
    """
    def clip(audio: Path, parts: tuple[str, ...], clip_id: Callable[[Path], str]) -> SpeechClip | None:
        modality, channel, emotion, _, statement, _, actor = parts
        if modality != "03" or channel != "01" or emotion not in RAVDESS_EMOTIONS or statement not in RAVDESS_STATEMENTS:
            return None
        return SpeechClip(id=clip_id(audio), transcript=RAVDESS_STATEMENTS[statement],
                          label=RAVDESS_EMOTIONS[emotion], audio_path=str(audio), speaker=f"actor{actor}",
                          group=f"actor{actor}")

    return _load_named_files(data_dir, "ravdess", _RAVDESS_NAME, clip, "Actor_01/03-01-05-01-02-01-01.wav")


def load_crema_d(data_dir: str | Path) -> list[SpeechClip]:
    """CREMA-D's clips under ``data_dir`` (its ``AudioWAV`` folder, or the folder that holds it).

    Raises:
        DatasetError: ``data_dir`` is not a folder, or holds no CREMA-D file.
    """
    def clip(audio: Path, parts: tuple[str, ...], clip_id: Callable[[Path], str]) -> SpeechClip | None:
        actor, sentence, emotion, _ = parts
        if emotion not in CREMA_D_EMOTIONS or sentence not in CREMA_D_SENTENCES:
            return None
        return SpeechClip(id=clip_id(audio), transcript=CREMA_D_SENTENCES[sentence],
                          label=CREMA_D_EMOTIONS[emotion], audio_path=str(audio), speaker=f"actor{actor}",
                          group=f"actor{actor}")

    return _load_named_files(data_dir, "crema-d", _CREMA_D_NAME, clip, "AudioWAV/1001_DFA_ANG_XX.wav")


def _load_named_files(data_dir: str | Path, corpus: str, pattern: re.Pattern[str],
                      make_clip: Callable[[Path, tuple[str, ...], Callable[[Path], str]], SpeechClip | None],
                      example: str) -> list[SpeechClip]:
    """The clips of every ``.wav`` under ``data_dir`` whose name the corpus's pattern reads; the rest named once."""
    root = Path(data_dir)
    if not root.is_dir():
        raise DatasetError(f"dataset={corpus!r} needs data_dir=<the corpus folder>, e.g. holding {example}; "
                           f"{str(root)!r} is not a folder")
    clips, unread, copies = [], [], {}
    for audio in sorted(root.rglob("*.wav")):
        if audio.name.startswith("."):
            continue
        found = pattern.match(audio.stem)
        made = make_clip(audio, found.groups(), lambda path: hashed_clip_id(path, root, copies)) if found else None
        if made is None:
            unread.append(audio.relative_to(root).as_posix())
        else:
            clips.append(made)
    if unread:
        log.warning("%s: %d .wav file(s) left out, not named as its speech clips are: %s", corpus, len(unread),
                    ", ".join(unread[:5]) + (" ..." if len(unread) > 5 else ""))
    if not clips:
        raise DatasetError(f"no {corpus} clip found under {str(root)!r}; expected files such as {example}")
    return clips


__all__ = [
    "CREMA_D_EMOTIONS",
    "CREMA_D_SENTENCES",
    "RAVDESS_EMOTIONS",
    "RAVDESS_STATEMENTS",
    "load_crema_d",
    "load_ravdess",
]
