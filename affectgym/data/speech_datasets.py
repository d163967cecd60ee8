"""The seam every speech dataset comes through: named loaders of :class:`SpeechClip` records.

``SpeechEmotion-v0(dataset=NAME, data_dir=...)`` and ``Sarcasm-v0`` read their clips from the
:class:`SpeechDataset` registered under ``NAME``; no env method is overridden to add one.
Built in: ``"folder"`` (``DIR/<label>/<clip>.wav``), ``"manifest"`` (a CSV/JSONL of
``path,label[,transcript,speaker,group,split]``), ``"ravdess"``, ``"crema-d"``,
``"iemocap"``, ``"iemocap-all"`` (:func:`iemocap` for the other leave-one-session-out folds), ``"msp-podcast"``, ``"meld"``, ``"emobox"`` (:func:`emobox` for
another fold), ``"mustard"`` (its JSON format), ``"mustard-hub"`` and the two embedded corpora. They
are kind ``"speech"`` of :mod:`affectgym.data.registry`. A package adds its own through the
entry-point group ``affectgym.datasets``: each entry point is a :class:`SpeechDataset` (or a
function returning one), registered when first looked up::

    [options.entry_points]
    affectgym.datasets =
        my-corpus = my_package.corpus:MY_CORPUS

``affectgym list --datasets`` lists them.

:func:`load_speech_dataset` reads a dataset once into a :class:`LoadedSpeechDataset`: its
checked clips, which any number of envs share when given it as ``dataset=``, with the norms
their tools band the delivery against (``affectgym serve`` gives every session its one).

>>> speech_dataset("ravdess").needs_data_dir, "manifest" in speech_datasets()
(True, True)
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from affectgym.data.registry import KINDS, dataset_loader, datasets, register_dataset
from affectgym.data.speech_corpus import DEFAULT_VERSION
from affectgym.data.speech_sources import (
    BAD_CLIP_POLICIES,
    DatasetError,
    SpeechClip,
    load_embedded,
    screen_clips,
)

log = logging.getLogger(__name__)

#: Entry-point group of third-party datasets.
PLUGIN_GROUP = KINDS["speech"].group


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
        checked: Whether the loader checks every file itself (the shipped corpora, by their
            manifests); the others' clips are screened after loading.
    """

    name: str
    load: Callable[[str | Path | None, str], list[SpeechClip]]
    summary: str
    needs_data_dir: bool = True
    checked: bool = False


@dataclass(frozen=True, eq=False)
class LoadedSpeechDataset:
    """A speech dataset read and checked once, shared by every env given it as ``dataset=``.

    Made by :func:`load_speech_dataset`, or taken from an env that read its own
    (``env.unwrapped.loaded_dataset``). An env given one reads no file when it is made: it
    takes these clips as they are, so envs made later see the same clips even when a file
    changed since, and the norms its tools band the delivery against are fitted once here
    for all of them. ``affectgym serve`` gives every session the server's; a vector env
    gives it to each of its envs (``gymnasium.make_vec(..., dataset=loaded)``). It is never
    copied: a copy is the same object, and a pickled one (an async vector env's worker)
    carries the clips and the norms fitted so far.

    Attributes:
        name: What ``dataset=`` said (``"embedded"``, ``"folder"``, a registered name); the
            norms are named after it.
        data_dir: The folder or manifest the clips were read from, or ``None``.
        clips: Every usable clip, in the loader's order.

    >>> import affectgym
    >>> loaded = affectgym.make("affectgym/Sarcasm-v0").unwrapped.loaded_dataset
    >>> held_out = affectgym.make("affectgym/Sarcasm-v0", dataset=loaded, split="eval").unwrapped
    >>> held_out.loaded_dataset is loaded, len(loaded.clips) == len(held_out.all_clips)
    (True, True)
    """

    name: str
    data_dir: str | None
    clips: tuple[SpeechClip, ...]
    _norms: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False)
    _fitting: dict[Hashable, threading.Lock] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def fitted_norms(self, key: Hashable, fit: Callable[[], Any]) -> Any:
        """The norms stored under ``key``, else ``fit()``'s, fitted once whichever env or thread asks first."""
        with self._lock:
            fitting = self._fitting.setdefault(key, threading.Lock())
        with fitting:
            if key not in self._norms:
                self._norms[key] = fit()
            return self._norms[key]

    def __copy__(self) -> LoadedSpeechDataset:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> LoadedSpeechDataset:
        return self

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {"name": self.name, "data_dir": self.data_dir, "clips": self.clips, "norms": dict(self._norms)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name in ("name", "data_dir", "clips"):
            object.__setattr__(self, name, state[name])
        object.__setattr__(self, "_norms", dict(state["norms"]))
        object.__setattr__(self, "_fitting", {})
        object.__setattr__(self, "_lock", threading.Lock())


def load_speech_dataset(
    dataset: str | SpeechDataset, data_dir: str | Path | None = None, *, on_bad_clip: str = "skip", name: str | None = None
) -> LoadedSpeechDataset:
    """Read ``dataset``'s clips once and check every file, for envs to share (:class:`LoadedSpeechDataset`).

    Args:
        dataset: A registered name (``affectgym list --datasets``) or a :class:`SpeechDataset`.
        data_dir: Its folder or manifest file (``None`` for a dataset that needs none).
        on_bad_clip: ``"skip"`` (leave clips with a missing, unreadable or too short audio
            file out, with one warning naming each) or ``"error"`` (raise, naming them); see
            :func:`~affectgym.data.speech_sources.screen_clips`.
        name: What the envs call the dataset (their norms are named after it); the dataset's name by default.

    Raises:
        ValueError: An unknown name (the registered ones listed) or ``on_bad_clip``.
        DatasetError: The dataset needs a ``data_dir`` and none was given, or cannot be read.
    """
    if on_bad_clip not in BAD_CLIP_POLICIES:
        raise ValueError(f"on_bad_clip must be one of {', '.join(BAD_CLIP_POLICIES)}, got {on_bad_clip!r}")
    source = dataset if isinstance(dataset, SpeechDataset) else speech_dataset(dataset)
    if source.needs_data_dir and data_dir is None:
        raise DatasetError(f"dataset={name or source.name!r} needs data_dir=<{source.summary}>")
    clips = source.load(data_dir, on_bad_clip)
    if not source.checked:
        # a user's files are checked here, so one bad file is reported by name now
        # instead of breaking the corpus norms later
        from affectgym.features.prosody import ProsodyParams

        clips = screen_clips(clips, on_bad_clip, ProsodyParams().min_duration_s)
    return LoadedSpeechDataset(name or source.name, None if data_dir is None else str(data_dir), tuple(clips))


_unusable_plugins: set[str] = set()


def register_speech_dataset(dataset: SpeechDataset) -> None:
    """Make ``dataset`` available as ``dataset=<its name>`` (replacing one of the same name)."""
    if not isinstance(dataset, SpeechDataset):
        raise TypeError(f"register_speech_dataset needs a SpeechDataset, got {type(dataset).__name__}")
    register_dataset("speech", dataset.name, dataset)


def speech_datasets() -> dict[str, SpeechDataset]:
    """Every registered dataset by name, the plug-ins' included (one that fails to load is left out, with a warning)."""
    usable = {}
    for name in datasets("speech"):
        dataset = _speech_dataset_of(name)
        if dataset is not None:
            usable[name] = dataset
    return usable


def speech_dataset(name: str) -> SpeechDataset:
    """The dataset registered as ``name``.

    Raises:
        ValueError: No usable dataset has that name (the message lists those that do).
    """
    dataset_loader("speech", name)  # an unknown name is refused naming the known ones
    dataset = _speech_dataset_of(name)
    if dataset is None:
        raise ValueError(f"dataset {name!r} is a plug-in that failed to load (see the warning); "
                         f"datasets: {', '.join(sorted(speech_datasets()))} (affectgym list --datasets)")
    return dataset


def _speech_dataset_of(name: str) -> SpeechDataset | None:
    """The :class:`SpeechDataset` registered as ``name``: a plug-in's function is called once, its result kept."""
    if name in _unusable_plugins:
        return None
    entry = dataset_loader("speech", name)
    if isinstance(entry, SpeechDataset):
        return entry
    try:
        dataset = entry() if callable(entry) else entry
        if not isinstance(dataset, SpeechDataset):
            raise TypeError(f"it is a {type(dataset).__name__}, not a SpeechDataset or a function returning one")
    except Exception as exc:  # a broken third-party dataset is reported once, not fatal
        log.warning("affectgym dataset plug-in %r failed to load: %s", name, exc)
        _unusable_plugins.add(name)
        return None
    register_dataset("speech", name, dataset)
    return dataset


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


def speaker_groups(clips: list[SpeechClip]) -> list[SpeechClip]:
    """A manifest's clips grouped by speaker when every row names a speaker and none a group.

    Speech emotion work evaluates on speakers never trained on, so a manifest with a
    ``speaker`` column is split by speaker unless its ``group`` column says otherwise, or the
    env's ``group_by`` does (``group_by="transcript"`` groups by line again).

    >>> clips = [SpeechClip("a", "hi", "calm", speaker="s1"), SpeechClip("b", "hi", "angry", speaker="s2")]
    >>> [c.group for c in speaker_groups(clips)]
    ['s1', 's2']
    """
    if not clips or any(c.group for c in clips) or not all(c.speaker for c in clips):
        return clips
    return [dataclasses.replace(c, group=c.speaker) for c in clips]


def _embedded(kind: str, summary: str, version: str = DEFAULT_VERSION) -> SpeechDataset:
    """The shipped corpus of ``kind``: ``embedded-<kind>``, or ``embedded-<kind>-<version>`` for an older ``version``.

    It needs no ``data_dir``, and its manifest checks every file
    (:func:`~affectgym.data.speech_sources.load_embedded`).
    """

    def load(data_dir: str | Path | None, on_bad_clip: str) -> list[SpeechClip]:
        return load_embedded(kind, version)

    name = f"embedded-{kind}" if version == DEFAULT_VERSION else f"embedded-{kind}-{version}"
    return SpeechDataset(name, load, summary, needs_data_dir=False, checked=True)


def _register_builtins() -> None:
    from affectgym.data import corpora, speech_sources

    for dataset in (
        SpeechDataset("folder", lambda data_dir, on_bad: speech_sources.load_audio_folder(data_dir, on_bad),
                      "DIR/<label>/<clip>.<audio> with optional <clip>.txt transcripts"),
        SpeechDataset("manifest", lambda data_dir, on_bad: speaker_groups(speech_sources.load_manifest(data_dir)),
                      "a .csv or .jsonl of path,label[,transcript,speaker,group,split] rows; split by speaker "
                      "when every row names one and none a group"),
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
        _embedded("emotion", "the shipped emotion corpus v2 (120 clips, 5 labels, several deliveries each, 8 voices)"),
        _embedded("emotion", "the first shipped emotion corpus (80 clips, one delivery template per label)", "v1"),
        _embedded("sarcasm", "the shipped sarcasm corpus v2 (116 lines each said both ways, 3 deliveries a label, 8 voices)"),
        _embedded("sarcasm", "the first shipped sarcasm corpus (one delivery a label: one prosody threshold solves it)", "v1"),
    ):
        register_speech_dataset(dataset)


_register_builtins()


__all__ = [
    "PLUGIN_GROUP", "LoadedSpeechDataset", "SpeechDataset", "emobox", "iemocap", "load_speech_dataset", "register_speech_dataset",
    "speaker_groups", "speech_dataset", "speech_datasets",
]
