"""The seam every speech dataset comes through: named loaders of :class:`SpeechClip` records.

``SpeechEmotion-v0(dataset=NAME, data_dir=...)`` and ``Sarcasm-v0`` read their clips from the
:class:`SpeechDataset` registered under ``NAME``; no env method is overridden to add one.
Built in: ``"folder"`` (``DIR/<label>/<clip>.wav``), ``"manifest"`` (a CSV/JSONL of
``path,label[,transcript,speaker,group,split]``), ``"ravdess"``, ``"crema-d"``,
``"iemocap"``, ``"iemocap-all"`` (:func:`iemocap` for the other leave-one-session-out folds), ``"msp-podcast"``, ``"meld"``, ``"emobox"`` (:func:`emobox` for
another fold), ``"mustard"`` (its JSON format), ``"mustard-hub"`` and the two embedded corpora. A package
adds its own through the entry-point group ``affectgym.datasets``: each entry point is a
:class:`SpeechDataset` (or a function returning one), registered when first looked up::

    [options.entry_points]
    affectgym.datasets =
        my-corpus = my_package.corpus:MY_CORPUS

``affectgym list --datasets`` lists them.

>>> speech_dataset("ravdess").needs_data_dir, "manifest" in speech_datasets()
(True, True)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from affectgym.data.speech_sources import SpeechClip

log = logging.getLogger(__name__)

#: Entry-point group of third-party datasets.
PLUGIN_GROUP = "affectgym.datasets"


@dataclass(frozen=True)
class SpeechDataset:
    """A named source of labelled speech clips.

    Args:
        name: What ``dataset=`` says.
        load: ``load(data_dir, on_bad_clip) -> list[SpeechClip]``; ``data_dir`` is ``None``
            for a dataset that needs none. Bad audio files may be left in: the env screens
            every clip (:func:`~affectgym.data.speech_sources.screen_clips`) after loading.
        summary: One line for ``affectgym list --datasets``.
        needs_data_dir: Whether ``data_dir`` is required.
    """

    name: str
    load: Callable[[str | Path | None, str], list[SpeechClip]]
    summary: str
    needs_data_dir: bool = True


_DATASETS: dict[str, SpeechDataset] = {}
_plugins_loaded = False


def register_speech_dataset(dataset: SpeechDataset) -> None:
    """Make ``dataset`` available as ``dataset=<its name>`` (replacing one of the same name)."""
    if not isinstance(dataset, SpeechDataset):
        raise TypeError(f"register_speech_dataset needs a SpeechDataset, got {type(dataset).__name__}")
    _DATASETS[dataset.name] = dataset


def speech_datasets() -> dict[str, SpeechDataset]:
    """Every registered dataset by name, the plug-ins' included."""
    _load_plugins()
    return dict(_DATASETS)


def speech_dataset(name: str) -> SpeechDataset:
    """The dataset registered as ``name``.

    Raises:
        ValueError: No dataset has that name (the message lists those that do).
    """
    known = speech_datasets()
    if name not in known:
        raise ValueError(f"unknown dataset {name!r}; datasets: {', '.join(sorted(known))} (affectgym list --datasets)")
    return known[name]


def emobox(fold: int = 1, audio_root: str | Path | None = None) -> SpeechDataset:
    """EmoBox's fold ``fold`` of the corpus whose metadata folder ``data_dir`` is (:func:`~affectgym.data.corpora.load_emobox`).

    ``dataset="emobox"`` is fold 1 with the audio beside the EmoBox checkout; pass
    ``dataset=emobox(fold=3, audio_root="/data/emobox")`` for another fold or audio folder.

    >>> emobox(fold=2).name
    'emobox-fold2'
    """
    if isinstance(fold, bool) or not isinstance(fold, int) or fold < 1:
        raise ValueError(f"fold must be an EmoBox fold number >= 1, got {fold!r}")
    from affectgym.data import corpora

    def load(data_dir: str | Path | None, on_bad_clip: str) -> list[SpeechClip]:
        return corpora.load_emobox(data_dir, fold=fold, audio_root=audio_root)

    return SpeechDataset("emobox" if fold == 1 and audio_root is None else f"emobox-fold{fold}", load,
                         f"EmoBox metadata data/<corpus>/ (label_map.json, fold_{fold}/); splits train/test[/valid]")


def iemocap(fold: int = 5, labels: str = "four") -> SpeechDataset:
    """IEMOCAP with session ``fold`` as split ``"eval"``: one fold of leave-one-session-out cross-validation.

    ``dataset="iemocap"`` is fold 5 (the common split); ``dataset=iemocap(fold=k)`` for
    k = 1..4 gives the other folds, ``labels="all"`` every evaluated label.

    >>> [iemocap(fold=k).name for k in (5, 2)], iemocap(labels="all").name
    (['iemocap', 'iemocap-fold2'], 'iemocap-all')
    """
    if isinstance(fold, bool) or fold not in range(1, 6):
        raise ValueError(f"fold must be an IEMOCAP session number 1-5, got {fold!r}")
    if labels not in ("four", "all"):
        raise ValueError(f"labels must be 'four' or 'all', got {labels!r}")
    from affectgym.data import corpora

    def load(data_dir: str | Path | None, on_bad_clip: str) -> list[SpeechClip]:
        return corpora.load_iemocap(data_dir, labels=labels, eval_session=fold)

    name = "iemocap" + ("-all" if labels == "all" else "") + (f"-fold{fold}" if fold != 5 else "")
    what = "4 classes (excited merged into happy)" if labels == "four" else "every evaluated label"
    return SpeechDataset(name, load, f"IEMOCAP, {what}; session {fold} eval, the others train")


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry_point in metadata.entry_points(group=PLUGIN_GROUP):
        try:
            found = entry_point.load()
            register_speech_dataset(found() if callable(found) and not isinstance(found, SpeechDataset) else found)
        except Exception as exc:  # a broken third-party dataset is reported, not fatal
            log.warning("affectgym dataset plug-in %r (%s) failed to load: %s", entry_point.name, entry_point.value, exc)


def _register_builtins() -> None:
    from affectgym.data import corpora, speech_sources

    for dataset in (
        SpeechDataset("folder", lambda data_dir, on_bad: speech_sources.load_audio_folder(data_dir, on_bad),
                      "DIR/<label>/<clip>.<audio> with optional <clip>.txt transcripts"),
        SpeechDataset("manifest", lambda data_dir, on_bad: speech_sources.load_manifest(data_dir),
                      "a .csv or .jsonl of path,label[,transcript,speaker,group,split] rows"),
        SpeechDataset("ravdess", lambda data_dir, on_bad: corpora.load_ravdess(data_dir),
                      "RAVDESS speech, Actor_NN/03-01-EE-II-SS-RR-NN.wav; split by actor"),
        SpeechDataset("crema-d", lambda data_dir, on_bad: corpora.load_crema_d(data_dir),
                      "CREMA-D, AudioWAV/AAAA_SSS_EEE_LL.wav; split by actor"),
        iemocap(),
        iemocap(labels="all"),
        SpeechDataset("msp-podcast", lambda data_dir, on_bad: corpora.load_msp_podcast(data_dir),
                      "MSP-Podcast, Labels/labels_consensus.json + Audios/; its Split_Set partitions as splits"),
        SpeechDataset("meld", lambda data_dir, on_bad: corpora.load_meld(data_dir),
                      "MELD, {train,dev,test}_sent_emo.csv + mp4 clips; dialogue context; splits train/dev/test"),
        emobox(),
        SpeechDataset("mustard", lambda data_dir, on_bad: speech_sources.load_mustard(data_dir),
                      "MUStARD's sarcasm_data.json with DIR/audio/<id>.<ext> or DIR/utterances_final/<id>.mp4"),
        SpeechDataset("mustard-hub", lambda data_dir, on_bad: speech_sources.load_mustard_hub(),
                      "MUStARD from the Hugging Face hub (online)", needs_data_dir=False),
        SpeechDataset("embedded-emotion", lambda data_dir, on_bad: speech_sources.load_embedded("emotion"),
                      "the shipped emotion corpus v2 (120 clips, 5 labels, several deliveries each, 8 voices)",
                      needs_data_dir=False),
        SpeechDataset("embedded-emotion-v1", lambda data_dir, on_bad: speech_sources.load_embedded("emotion", "v1"),
                      "the first shipped emotion corpus (80 clips, one delivery template per label)",
                      needs_data_dir=False),
        SpeechDataset("embedded-sarcasm", lambda data_dir, on_bad: speech_sources.load_embedded("sarcasm"),
                      "the shipped sarcasm corpus v2 (116 lines each said both ways, 3 deliveries a label, 8 voices)",
                      needs_data_dir=False),
        SpeechDataset("embedded-sarcasm-v1", lambda data_dir, on_bad: speech_sources.load_embedded("sarcasm", "v1"),
                      "the first shipped sarcasm corpus (one delivery a label: one prosody threshold solves it)",
                      needs_data_dir=False),
    ):
        register_speech_dataset(dataset)


_register_builtins()


__all__ = ["PLUGIN_GROUP", "SpeechDataset", "emobox", "iemocap", "register_speech_dataset", "speech_dataset", "speech_datasets"]
