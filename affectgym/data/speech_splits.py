"""Which clips of a speech dataset an env serves: splits as objects, not strings to parse.

``SpeechEmotion-v0`` and ``Sarcasm-v0`` take ``split=`` as a name (``"train"``, ``"eval"``,
``"all"``, or one of the dataset's own partitions) or as one of these objects:

* :class:`HashSplit`: the stable hash split by group (the default behind ``"train"`` and
  ``"eval"``): every clip of a group lands on one side (:mod:`affectgym.data.splits`);
* :class:`Partition`: the dataset's own partition (a manifest's ``split`` column, a corpus's
  official ``Train``/``Test1``);
* :class:`LeaveOneGroupOut`: every clip whose ``speaker``, ``show`` or ``group`` is the
  held-out one is evaluated, the rest trained on (MUStARD's speaker-independent setup is
  ``LeaveOneGroupOut("show", "FRIENDS")``; one speaker or session out likewise);
* :class:`IdFolds` / :func:`mustard_fold`: named folds of clip ids (MUStARD's five
  speaker-dependent folds from its ``split_indices.json``).

Each has a ``part`` (``"train"`` or ``"eval"``) and :meth:`~ClipSplit.with_part` gives the
other side, which is how ``check_env``'s leakage check remakes the train and eval parts of
whatever split an env was made with.

>>> from affectgym.data.speech_sources import SpeechClip
>>> clips = [SpeechClip(id=f"c{i}", transcript="", label="x", show="FRIENDS" if i < 2 else "BBT")
...          for i in range(5)]
>>> [c.id for c in LeaveOneGroupOut("show", "FRIENDS").select(clips, SplitContext())]
['c0', 'c1']
>>> [c.id for c in LeaveOneGroupOut("show", "FRIENDS", part="train").select(clips, SplitContext())]
['c2', 'c3', 'c4']
>>> LeaveOneGroupOut("show", "FRIENDS").name
'show=FRIENDS/eval'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from affectgym.data.speech_sources import DatasetError, SpeechClip, mustard_folds
from affectgym.data.splits import select_split

#: The sides a split object can be asked for.
PARTS = ("train", "eval")
#: Clip fields :class:`LeaveOneGroupOut` can hold a value of out.
GROUP_FIELDS = ("speaker", "show", "group")
#: Partition names taken as the evaluated side of a dataset whose own partitions include ``train``.
EVAL_PARTITIONS = ("eval", "test", "valid", "validation", "dev")


@dataclass(frozen=True)
class SplitContext:
    """What a split may read besides the clips: the env's ``data_dir``, its split groups and ``eval_fraction``."""

    data_dir: str | Path | None = None
    groups: Mapping[str, str] = dataclasses.field(default_factory=dict)
    eval_fraction: float = 0.2


@dataclass(frozen=True)
class ClipSplit:
    """A rule choosing the clips of one side (``part``: ``"train"`` or ``"eval"``) of a split; subclasses say how."""

    part: str = dataclasses.field(default="eval", kw_only=True)

    def __post_init__(self) -> None:
        if self.part not in PARTS:
            raise ValueError(f"{type(self).__name__}: part must be one of {', '.join(PARTS)}, got {self.part!r}")

    @property
    def name(self) -> str:
        """A short, stable name of this side of the split (``info["split"]``, result files)."""
        raise NotImplementedError

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        """The clips of this side, in the order of ``clips``."""
        raise NotImplementedError

    def with_part(self, part: str) -> ClipSplit:
        """The same split's other side (or this one)."""
        return dataclasses.replace(self, part=part)


@dataclass(frozen=True)
class HashSplit(ClipSplit):
    """The stable hash split by group: ``eval_fraction`` of each label stratum's groups held out.

    The groups are the env's (its ``group_by``: by default the source's own groups, else the
    spoken line; :func:`~affectgym.data.speech_sources.clip_groups`). ``part="all"`` is every clip.
    """

    def __post_init__(self) -> None:
        if self.part not in (*PARTS, "all"):
            raise ValueError(f"HashSplit: part must be one of train, eval, all, got {self.part!r}")

    @property
    def name(self) -> str:
        return self.part

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        items = [(c.id, c.label) for c in clips]
        chosen = set(select_split(items, self.part, context.eval_fraction, groups=context.groups))
        return [c for c in clips if c.id in chosen]


@dataclass(frozen=True)
class Partition(ClipSplit):
    """The dataset's own partitions (every clip's ``split`` field, e.g. a manifest's column).

    Args:
        eval_partition: The partition evaluated on (``part="eval"``), e.g. ``"Test1"``.
        train_partition: The partition trained on (``part="train"``).
    """

    eval_partition: str
    train_partition: str = "train"

    @property
    def name(self) -> str:
        return self.eval_partition if self.part == "eval" else self.train_partition

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        partitions = {c.split for c in clips}
        if None in partitions:
            missing = sum(c.split is None for c in clips)
            raise DatasetError(f"split {self.name!r} is a partition of the dataset, but {missing} of {len(clips)} "
                               "clips have none; use split='train'/'eval' (a hash split by group) instead")
        if self.name not in partitions:
            raise DatasetError(f"split {self.name!r} is not one of the dataset's own splits {sorted(partitions)}")
        return [c for c in clips if c.split == self.name]


@dataclass(frozen=True)
class LeaveOneGroupOut(ClipSplit):
    """Hold out every clip whose ``field`` (speaker, show or group) equals ``held_out``; train on the rest.

    Args:
        field: ``"speaker"``, ``"show"`` or ``"group"``.
        held_out: The value held out (a speaker, a show, a session).
        part: ``"eval"`` (the held-out clips) or ``"train"`` (the others).
    """

    field: str
    held_out: str

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.field not in GROUP_FIELDS:
            raise ValueError(f"LeaveOneGroupOut: field must be one of {', '.join(GROUP_FIELDS)}, got {self.field!r}")

    @property
    def name(self) -> str:
        return f"{self.field}={self.held_out}/{self.part}"

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        values = [getattr(c, self.field) for c in clips]
        missing = sum(v is None for v in values)
        if missing:
            raise DatasetError(f"split {self.name!r} needs every clip's {self.field}, but {missing} of {len(clips)} "
                               "clips name none")
        if self.held_out not in values:
            known = sorted(set(values))
            raise DatasetError(f"split {self.name!r}: no clip has {self.field} {self.held_out!r}; the dataset's are "
                               f"{', '.join(known[:20])}{' ...' if len(known) > 20 else ''}")
        held_out = self.part == "eval"
        return [c for c, v in zip(clips, values, strict=True) if (v == self.held_out) == held_out]


#: Reads named folds of clip ids from an env's ``data_dir``: ``[{"train": [ids], "test": [ids]}, ...]``.
FoldReader = Callable[[Any], Sequence[Mapping[str, Sequence[str]]]]


@dataclass(frozen=True)
class IdFolds(ClipSplit):
    """Fold ``fold`` (from 1) of named folds of clip ids: its ``test`` ids are evaluated, its ``train`` ids trained on.

    Args:
        read_folds: Reads the folds from the env's ``data_dir``.
        fold: Which fold, from 1.
        label: Names the folds in :attr:`name` (``"fold"``: ``fold-3``, ``fold-3/train``).
    """

    read_folds: FoldReader
    fold: int
    label: str = "fold"

    @property
    def name(self) -> str:
        return f"{self.label}-{self.fold}" + ("/train" if self.part == "train" else "")

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        folds = self.read_folds(context.data_dir)
        if isinstance(self.fold, bool) or not isinstance(self.fold, int) or not 1 <= self.fold <= len(folds):
            raise ValueError(f"split {self.name!r}: fold must be 1..{len(folds)}, got {self.fold!r}")
        by_id = {clip.id: clip for clip in clips}  # clips skipped for bad audio are absent
        ids = folds[self.fold - 1]["test" if self.part == "eval" else "train"]
        return [by_id[i] for i in ids if i in by_id]


def _mustard_folds(data_dir: str | Path | None) -> list[dict[str, list[str]]]:
    if data_dir is None:
        raise ValueError("MUStARD's folds need dataset='mustard' and data_dir with split_indices.json")
    return mustard_folds(Path(data_dir))


def mustard_fold(fold: int, part: str = "eval") -> IdFolds:
    """MUStARD's speaker-dependent fold ``fold`` (1..5) from ``DIR/split_indices.json``.

    >>> mustard_fold(3).name, mustard_fold(3, part="train").name
    ('fold-3', 'fold-3/train')
    """
    return IdFolds(_mustard_folds, fold, part=part)


def coerce_split(split: str | ClipSplit, clips: Sequence[SpeechClip]) -> ClipSplit:
    """The split object ``split`` names: ``"all"``; a partition of the dataset when every clip has one; else ``"train"``/``"eval"`` as a :class:`HashSplit`.

    Raises:
        ValueError: ``split`` is neither an object nor a name this dataset knows (the
            message lists the accepted ones).
    """
    if isinstance(split, ClipSplit):
        return split
    if not isinstance(split, str):
        raise ValueError(f"split must be a name or a ClipSplit (affectgym.data.speech_splits), got {type(split).__name__}")
    if split == "all":
        return HashSplit(part="all")
    partitions = {c.split for c in clips}
    if clips and None not in partitions:
        if split not in partitions:
            raise DatasetError(f"split {split!r} is not one of the dataset's own splits {sorted(partitions)} "
                               "(its split column), nor 'all'")
        train = "train" if "train" in partitions else split
        if split == train:
            others = sorted(partitions - {train}, key=lambda p: (p not in EVAL_PARTITIONS, p))
            return Partition(others[0] if others else train, train, part="train")
        return Partition(split, train)
    if split not in PARTS:
        raise ValueError(f"unknown split {split!r}; accepted: 'train', 'eval', 'all', or a ClipSplit "
                         "(HashSplit, Partition, LeaveOneGroupOut, IdFolds, mustard_fold)")
    return HashSplit(part=split)


__all__ = [
    "EVAL_PARTITIONS",
    "GROUP_FIELDS",
    "FoldReader",
    "PARTS",
    "ClipSplit",
    "HashSplit",
    "IdFolds",
    "LeaveOneGroupOut",
    "Partition",
    "SplitContext",
    "coerce_split",
    "mustard_fold",
]

