"""Standard speech-emotion corpora by name, read in their own layouts (no copying, no glue).

* :func:`load_ravdess` -- RAVDESS's audio-only speech files,
  ``Actor_NN/03-01-EE-II-SS-RR-NN.wav``: modality (03 audio-only), vocal channel (01
  speech), emotion ``EE`` (:data:`RAVDESS_EMOTIONS`), intensity, statement ``SS``
  (:data:`RAVDESS_STATEMENTS`), repetition, actor. Licence: CC BY-NC-SA 4.0.
* :func:`load_crema_d` -- CREMA-D's ``AudioWAV/AAAA_SSS_EEE_LL.wav``: actor, sentence code
  (:data:`CREMA_D_SENTENCES`), emotion (:data:`CREMA_D_EMOTIONS`), level. Licence: ODbL.
* :func:`load_iemocap` -- IEMOCAP's ``SessionN/sentences/wav/<dialog>/<utt>.wav``, labels
  from ``SessionN/dialog/EmoEvaluation/<dialog>.txt`` and transcripts from
  ``SessionN/dialog/transcriptions/<dialog>.txt``; the usual 4 classes (neutral, happy with
  excited merged in, angry, sad) or every label (``labels="all"``). Its own split: sessions
  1-4 train, session 5 eval (each session's two speakers held out whole); any other session
  held out for leave-one-session-out folds (``eval_session``). Licence: the
  USC release agreement (research only; not redistributable).
* :func:`load_msp_podcast` -- MSP-Podcast's ``Labels/labels_consensus.json`` (``EmoClass``,
  ``SpkrID``, ``Split_Set``) beside ``Audios/<file>.wav``; its own partitions as splits
  (``train``, ``development``, ``test1``, ...). Licence: the MSP academic licence.
* :func:`load_meld` -- MELD's ``{train,dev,test}_sent_emo.csv`` beside its mp4 clips
  (``dia<D>_utt<U>.mp4``, decoded with the shipped ffmpeg), the dialogue's earlier lines as
  context; its own splits ``train``, ``dev``, ``test``. Licence: GPL-3.0.
* :func:`load_emobox` -- any of EmoBox's 32 corpora through its metadata
  (``data/<corpus>/label_map.json`` and ``fold_N/*.jsonl``), fold by fold; its splits
  ``train``, ``test`` (and ``valid`` where shipped). Licence: each corpus's own.

RAVDESS and CREMA-D give each clip its actor as speaker and as split group, so a split
holds every actor out whole (speaker-independent, as EmoBox's folds are), and its statement
as transcript.
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


#: IEMOCAP's label codes; the 4-class set merges excited into happy and leaves the rest out.
IEMOCAP_LABELS: Mapping[str, str] = {
    "neu": "neutral", "hap": "happy", "exc": "excited", "ang": "angry", "sad": "sad", "fru": "frustrated",
    "sur": "surprised", "fea": "fearful", "dis": "disgust", "oth": "other",
}
IEMOCAP_FOUR_CLASS: Mapping[str, str] = {"neu": "neutral", "hap": "happy", "exc": "happy", "ang": "angry", "sad": "sad"}
_IEMOCAP_LABEL_LINE = re.compile(r"^\[[\d.]+ - [\d.]+\]\t(\S+)\t(\w+)\t")
_IEMOCAP_TRANSCRIPT_LINE = re.compile(r"^(\S+) \[[\d.]+-[\d.]+\]: (.*)$")
#: The session IEMOCAP's common split holds out.
IEMOCAP_EVAL_SESSION = 5


def load_iemocap(data_dir: str | Path, labels: str = "four", eval_session: int = IEMOCAP_EVAL_SESSION) -> list[SpeechClip]:
    """IEMOCAP's utterances under ``data_dir`` (the folder of ``Session1`` ... ``Session5``).

    Args:
        data_dir: The corpus folder.
        labels: ``"four"`` (neutral, happy + excited, angry, sad; the rest left out) or
            ``"all"`` (every evaluated label but ``xxx``, no agreement).
        eval_session: The session in split ``"eval"``, the other four in ``"train"``: the
            fold of leave-one-session-out cross-validation (1-5; the common split holds out 5).

    Raises:
        DatasetError: ``data_dir`` is not a folder, ``labels`` or ``eval_session`` is
            unknown, or no labelled utterance with its audio was found.
    """
    if labels not in ("four", "all"):
        raise DatasetError(f"IEMOCAP labels must be 'four' or 'all', got {labels!r}")
    if isinstance(eval_session, bool) or eval_session not in range(1, 6):
        raise DatasetError(f"IEMOCAP eval_session must be a session number 1-5, got {eval_session!r}")
    root = Path(data_dir)
    if not root.is_dir():
        raise DatasetError(f"dataset='iemocap' needs data_dir=<the folder of Session1..Session5>; {str(root)!r} is not a folder")
    mapping = IEMOCAP_FOUR_CLASS if labels == "four" else IEMOCAP_LABELS
    clips, copies = [], {}
    for session in sorted(root.glob("Session[1-5]")):
        number = int(session.name[-1])
        transcripts: dict[str, str] = {}
        for path in sorted((session / "dialog" / "transcriptions").glob("*.txt")):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                found = _IEMOCAP_TRANSCRIPT_LINE.match(line.strip())
                if found:
                    transcripts[found.group(1)] = found.group(2).strip()
        for path in sorted((session / "dialog" / "EmoEvaluation").glob("*.txt")):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                found = _IEMOCAP_LABEL_LINE.match(line)
                if not found or found.group(2) not in mapping:
                    continue
                utterance = found.group(1)
                audio = session / "sentences" / "wav" / utterance.rsplit("_", 1)[0] / f"{utterance}.wav"
                if not audio.is_file():
                    continue
                speaker = f"{utterance[:5]}{utterance.rsplit('_', 1)[1][0]}"  # e.g. Ses01F: session and gender
                clips.append(SpeechClip(id=hashed_clip_id(audio, root, copies), transcript=transcripts.get(utterance, ""),
                                        label=mapping[found.group(2)], audio_path=str(audio), speaker=speaker,
                                        group=speaker, split="eval" if number == eval_session else "train"))
    if not clips:
        raise DatasetError(f"no labelled IEMOCAP utterance with audio under {str(root)!r}; expected "
                           "Session1/dialog/EmoEvaluation/*.txt and Session1/sentences/wav/<dialog>/<utterance>.wav")
    return clips


#: MSP-Podcast's consensus classes; ``O`` (other) and ``X`` (no agreement) are left out.
MSP_PODCAST_CLASSES: Mapping[str, str] = {
    "A": "angry", "S": "sad", "H": "happy", "U": "surprised", "F": "fearful", "D": "disgust", "C": "contempt",
    "N": "neutral",
}


def load_msp_podcast(data_dir: str | Path) -> list[SpeechClip]:
    """MSP-Podcast's labelled clips under ``data_dir`` (with ``Labels/labels_consensus.json`` and ``Audios/``).

    Raises:
        DatasetError: The labels file is missing or not the consensus format, or no labelled
            clip has its audio.
    """
    import json

    root = Path(data_dir)
    labels_file = next((p for p in (root / "Labels" / "labels_consensus.json", root / "labels_consensus.json")
                        if p.is_file()), None)
    if labels_file is None:
        raise DatasetError(f"dataset='msp-podcast' needs data_dir holding Labels/labels_consensus.json; none under {str(root)!r}")
    try:
        records = json.loads(labels_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DatasetError(f"{labels_file}: not JSON ({error})") from None
    if not isinstance(records, dict):
        raise DatasetError(f"{labels_file}: expected an object of file name -> {{EmoClass, SpkrID, Split_Set}}")
    clips, copies = [], {}
    for name, record in sorted(records.items()):
        if not isinstance(record, dict) or record.get("EmoClass") not in MSP_PODCAST_CLASSES:
            continue
        audio = root / "Audios" / name
        if not audio.is_file():
            continue
        speaker = str(record.get("SpkrID", "")).strip()
        speaker = f"speaker{speaker}" if speaker and speaker.lower() != "unknown" else None
        split = str(record.get("Split_Set", "")).strip().lower().replace(" ", "") or None
        clips.append(SpeechClip(id=hashed_clip_id(audio, root, copies), transcript="",
                                label=MSP_PODCAST_CLASSES[record["EmoClass"]], audio_path=str(audio), speaker=speaker,
                                group=speaker, split=split))
    if not clips:
        raise DatasetError(f"no labelled MSP-Podcast clip with its audio in {str(root / 'Audios')!r}")
    return clips


#: MELD's CSV of each split, and the folder of its clips.
MELD_SPLITS: Mapping[str, tuple[str, str]] = {
    "train": ("train_sent_emo.csv", "train_splits"),
    "dev": ("dev_sent_emo.csv", "dev_splits_complete"),
    "test": ("test_sent_emo.csv", "output_repeated_splits_test"),
}


def load_meld(data_dir: str | Path) -> list[SpeechClip]:
    """MELD's utterances under ``data_dir``: each split's CSV and its folder of ``dia<D>_utt<U>.mp4`` clips.

    The label is the ``Emotion`` column; the speaker, the ``Speaker`` column; the context,
    the dialogue's earlier utterances (``SPEAKER: text``). Rows whose clip is missing are
    left out (MELD ships a few).

    Raises:
        DatasetError: No split CSV is found, or one lacks MELD's columns.
    """
    import csv

    root = Path(data_dir)
    clips, copies, found = [], {}, False
    for split, (table, folder) in MELD_SPLITS.items():
        path = root / table
        if not path.is_file():
            continue
        found = True
        rows = list(csv.DictReader(path.read_text(encoding="utf-8", errors="replace").splitlines()))
        needed = {"Utterance", "Speaker", "Emotion", "Dialogue_ID", "Utterance_ID"}
        if rows and not needed <= set(rows[0]):
            raise DatasetError(f"{path}: MELD's columns {sorted(needed)} expected, found {sorted(rows[0])}")
        said: dict[str, list[str]] = {}
        for row in sorted(rows, key=lambda r: (int(r["Dialogue_ID"]), int(r["Utterance_ID"]))):
            context = tuple(said.setdefault(row["Dialogue_ID"], []))
            line = f"{row['Speaker']}: {row['Utterance']}"
            said[row["Dialogue_ID"]].append(line)
            audio = root / folder / f"dia{row['Dialogue_ID']}_utt{row['Utterance_ID']}.mp4"
            if not audio.is_file():
                continue
            clips.append(SpeechClip(id=hashed_clip_id(audio, root, copies), transcript=row["Utterance"].strip(),
                                    label=row["Emotion"].strip().lower(), audio_path=str(audio), context=context,
                                    speaker=row["Speaker"].strip() or None, split=split,
                                    group=f"{split}-dialogue{row['Dialogue_ID']}"))
    if not found:
        raise DatasetError(f"dataset='meld' needs data_dir holding {', '.join(t for t, _ in MELD_SPLITS.values())}; "
                           f"none in {str(root)!r}")
    if not clips:
        raise DatasetError(f"no MELD clip found beside the CSVs in {str(root)!r} (expected e.g. train_splits/dia0_utt0.mp4)")
    return clips


def load_emobox(data_dir: str | Path, fold: int = 1, audio_root: str | Path | None = None) -> list[SpeechClip]:
    """One EmoBox corpus's clips of fold ``fold``, read from EmoBox's metadata (``data/<corpus>/``).

    ``data_dir`` is the corpus's metadata folder: ``label_map.json`` (code -> label) and
    ``fold_<N>/<corpus>_{train,valid,test}_fold_<N>.jsonl`` (rows ``{"key", "wav", "emo", ...}``;
    ``valid`` only where EmoBox ships one). Each clip's split is the file it is listed in
    (``train``, ``valid``, ``test``), so the folds are EmoBox's own speaker-independent ones.
    A relative ``wav`` is resolved against ``audio_root``, by default the EmoBox checkout
    that holds the metadata (``data_dir/../..``, where its preparation scripts write
    ``downloads/``). Labels are the label map's names in lower case. Rows whose audio is
    missing, or that cut a segment out of a longer file (``start_time``/``end_time``), are
    left out and counted in one warning.

    Raises:
        DatasetError: No label map or fold file, a fold file that is not EmoBox's JSON Lines,
            an ``emo`` code the label map lacks, or no row with its audio.
    """
    import json

    from affectgym.data.jsonl import json_lines

    root = Path(data_dir)
    label_file = root / "label_map.json"
    if not label_file.is_file():
        raise DatasetError(f"dataset='emobox' needs data_dir=<an EmoBox corpus folder, data/<corpus>/ holding "
                           f"label_map.json and fold_N/>; no label_map.json in {str(root)!r}")
    try:
        label_map = json.loads(label_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DatasetError(f"{label_file}: not JSON ({error})") from None
    if not isinstance(label_map, dict) or not all(isinstance(v, str) for v in label_map.values()):
        raise DatasetError(f"{label_file}: expected an object of emotion code -> label name")
    fold_dir = root / f"fold_{fold}"
    tables = {split: fold_dir / f"{root.name}_{split}_fold_{fold}.jsonl" for split in ("train", "valid", "test")}
    tables = {split: path for split, path in tables.items() if path.is_file()}
    if not tables:
        folds = sorted(p.name for p in root.glob("fold_*") if p.is_dir())
        raise DatasetError(f"no {root.name}_{{train,test}}_fold_{fold}.jsonl in {str(fold_dir)!r}; "
                           f"folds found: {', '.join(folds) or 'none'}")
    base = Path(audio_root) if audio_root is not None else root.parent.parent
    clips, copies, missing, segments = [], {}, [], 0
    for split, table in tables.items():
        text = table.read_text(encoding="utf-8", errors="replace")
        for line, row in json_lines(text, table, DatasetError):
            if not isinstance(row, dict) or not {"wav", "emo"} <= set(row):
                raise DatasetError(f"{table}:{line}: expected an object with 'wav' and 'emo', got {row!r:.80}")
            if str(row["emo"]) not in label_map:
                raise DatasetError(f"{table}:{line}: emo {row['emo']!r} is not in {label_file.name} "
                                   f"(codes: {', '.join(sorted(label_map))})")
            if "start_time" in row or "end_time" in row:
                segments += 1
                continue
            audio = Path(str(row["wav"]))
            audio = audio if audio.is_absolute() else base / audio
            if not audio.is_file():
                missing.append(str(audio))
                continue
            speaker = row.get("speaker") or row.get("spk")
            clips.append(SpeechClip(id=hashed_clip_id(audio, base, copies), transcript=str(row.get("text") or ""),
                                    label=label_map[str(row["emo"])].strip().lower(), audio_path=str(audio),
                                    speaker=str(speaker) if speaker else None, split=split))
    if missing or segments:
        log.warning("emobox %s fold %d: %d row(s) left out (%d with no audio file, e.g. %s; %d segments of a longer "
                    "file)", root.name, fold, len(missing) + segments, len(missing), missing[0] if missing else "-",
                    segments)
    if not clips:
        raise DatasetError(f"no audio of {root.name} fold {fold} found under {str(base)!r} (e.g. {missing[0] if missing else '-'}); "
                           "pass the folder the rows' 'wav' paths are relative to as audio_root")
    return clips


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
    "IEMOCAP_EVAL_SESSION",
    "IEMOCAP_FOUR_CLASS",
    "IEMOCAP_LABELS",
    "MELD_SPLITS",
    "MSP_PODCAST_CLASSES",
    "RAVDESS_EMOTIONS",
    "RAVDESS_STATEMENTS",
    "load_crema_d",
    "load_emobox",
    "load_iemocap",
    "load_meld",
    "load_msp_podcast",
    "load_ravdess",
]
