"""Which clips of a speech dataset an env serves: splits as objects, not strings to parse.

``SpeechEmotion-v0`` and ``Sarcasm-v0`` take ``split=`` as a name (``"train"``,
``"validation"``, ``"eval"``, ``"all"``, or one of the dataset's own partitions) or as one of
these objects:

* :class:`HashSplit`: the stable hash split by group (the default behind ``"train"``,
  ``"validation"`` and ``"eval"``): every clip of a group lands on one side
  (:mod:`affectgym.data.splits`; validation is carved from what was train, so eval is as it
  was and train is smaller by the validation groups);
* :class:`Partition`: the dataset's own partition (a manifest's ``split`` column, a corpus's
  official ``Train``/``Test1``); its validation side is the dataset's own valid/dev partition;
* :class:`LeaveOneGroupOut`: every clip whose ``speaker``, ``show`` or ``group`` is the
  held-out one is evaluated, the rest trained on (MUStARD's speaker-independent setup is
  ``LeaveOneGroupOut("show", "FRIENDS")``; one speaker or session out likewise); a second
  value held out for validation when one is given;
* :class:`IdFolds` / :func:`mustard_fold`: named folds of clip ids (MUStARD's five
  speaker-dependent folds from its ``split_indices.json``); a validation side where the folds
  name one.

Each has a ``part`` (``"train"``, ``"validation"`` or ``"eval"``) and
:meth:`~ClipSplit.with_part` gives another side, which is how ``check_env``'s leakage check
remakes the three sides of whatever split an env was made with. A split that has no
validation side (a leave-one-out without a second value, a dataset without a valid/dev
partition, folds without validation ids) says so when it is made or applied.

Examples:
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
from affectgym.data.splits import HELD_OUT_PARTS, VALIDATION_FRACTION, select_split

#: The sides a split object can be asked for.
PARTS = HELD_OUT_PARTS
#: Clip fields :class:`LeaveOneGroupOut` can hold a value of out.
GROUP_FIELDS = ("speaker", "show", "group")
#: Partition names taken as the evaluated side of a dataset whose own partitions include ``train``.
EVAL_PARTITIONS = ("eval", "test", "valid", "validation", "dev")
#: Partition names taken as the validation side, in this order of preference (never the eval or train one).
VALIDATION_PARTITIONS = ("validation", "valid", "dev", "development", "val")
#: Keys of a fold's validation ids (:class:`IdFolds`), in this order of preference.
VALIDATION_FOLD_KEYS = ("validation", "valid", "dev")


@dataclass(frozen=True)
class SplitContext:
    """What a split may read besides the clips: the env's ``data_dir``, its split groups, ``eval_fraction`` and ``validation_fraction``."""

    data_dir: str | Path | None = None
    groups: Mapping[str, str] = dataclasses.field(default_factory=dict)
    eval_fraction: float = 0.2
    validation_fraction: float = VALIDATION_FRACTION


@dataclass(frozen=True)
class ClipSplit:
    """A rule choosing the clips of one side (``part``: ``"train"``, ``"validation"`` or ``"eval"``) of a split; subclasses say how."""

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
        """Another side of the same split (or this one).

        Raises:
            ValueError: ``part`` is not a side, or this split has no such side.
        """
        return dataclasses.replace(self, part=part)


@dataclass(frozen=True)
class HashSplit(ClipSplit):
    """The stable hash split by group: ``eval_fraction`` of each label stratum's groups held out for eval, the next ``validation_fraction`` for validation.

    The groups are the env's (its ``group_by``: by default the source's own groups, else the
    spoken line; :func:`~affectgym.data.speech_sources.clip_groups`). Train is the rest (smaller,
    by the validation groups, than before validation existed; eval is unchanged;
    :func:`~affectgym.data.splits.assign_splits`). ``part="all"`` is every clip.
    """

    def __post_init__(self) -> None:
        if self.part not in (*PARTS, "all"):
            raise ValueError(f"HashSplit: part must be one of {', '.join((*PARTS, 'all'))}, got {self.part!r}")

    @property
    def name(self) -> str:
        return self.part

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        items = [(c.id, c.label) for c in clips]
        chosen = set(select_split(items, self.part, context.eval_fraction, groups=context.groups,
                                  validation_fraction=context.validation_fraction))
        return [c for c in clips if c.id in chosen]


@dataclass(frozen=True)
class Partition(ClipSplit):
    """The dataset's own partitions (every clip's ``split`` field, e.g. a manifest's column).

    Args:
        eval_partition: The partition evaluated on (``part="eval"``), e.g. ``"Test1"``.
        train_partition: The partition trained on (``part="train"``).
        validation_partition: The partition validated on (``part="validation"``); ``None``:
            the dataset's own valid/dev partition (the first of :data:`VALIDATION_PARTITIONS`
            it has besides the train and eval ones), an error when it has none.
    """

    eval_partition: str
    train_partition: str = "train"
    validation_partition: str | None = None

    @property
    def name(self) -> str:
        if self.part == "validation":
            return self.validation_partition or "validation"
        return self.eval_partition if self.part == "eval" else self.train_partition

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        partitions = {c.split for c in clips}
        if None in partitions:
            missing = sum(c.split is None for c in clips)
            raise DatasetError(f"split {self.name!r} is a partition of the dataset, but {missing} of {len(clips)} "
                               "clips have none; use split='train'/'validation'/'eval' (a hash split by group) instead")
        name = self.name
        if self.part == "validation" and self.validation_partition is None:
            name = validation_partition(partitions, exclude=(self.train_partition, self.eval_partition))
        if name not in partitions:
            raise DatasetError(f"split {name!r} is not one of the dataset's own splits {sorted(partitions)}")
        return [c for c in clips if c.split == name]


def validation_partition(partitions: set[str | None], exclude: Sequence[str] = ()) -> str:
    """The dataset's own validation partition: the first of :data:`VALIDATION_PARTITIONS` it has, other than ``exclude``.

    Raises:
        DatasetError: It has none (the message lists its partitions).

    >>> validation_partition({"train", "dev", "test"})
    'dev'
    """
    found = next((p for p in VALIDATION_PARTITIONS if p in partitions and p not in exclude), None)
    if found is None:
        taken = f" besides {', '.join(repr(p) for p in exclude)}" if exclude else ""
        raise DatasetError(f"split 'validation': the dataset's own splits {sorted(p for p in partitions if p)} hold no "
                           f"validation partition ({', '.join(VALIDATION_PARTITIONS)}){taken}")
    return found


@dataclass(frozen=True)
class LeaveOneGroupOut(ClipSplit):
    """Hold out every clip whose ``field`` (speaker, show or group) equals ``held_out``; train on the rest.

    Args:
        field: ``"speaker"``, ``"show"`` or ``"group"``.
        held_out: The value held out (a speaker, a show, a session).
        validation_held_out: A second value, whose clips are the validation side (and not
            trained on); ``None``: the split has no validation side.
        part: ``"eval"`` (the held-out clips), ``"validation"`` (the second value's) or
            ``"train"`` (the others).
    """

    field: str
    held_out: str
    validation_held_out: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.field not in GROUP_FIELDS:
            raise ValueError(f"LeaveOneGroupOut: field must be one of {', '.join(GROUP_FIELDS)}, got {self.field!r}")
        if self.part == "validation" and self.validation_held_out is None:
            raise ValueError(f"LeaveOneGroupOut({self.field!r}, {self.held_out!r}) has no validation side: pass "
                             f"validation_held_out=<a second {self.field}> to validate on")
        if self.validation_held_out is not None and self.validation_held_out == self.held_out:
            raise ValueError(f"LeaveOneGroupOut: validation_held_out must differ from held_out {self.held_out!r}")

    @property
    def name(self) -> str:
        validation = f"+validation={self.validation_held_out}" if self.validation_held_out is not None else ""
        return f"{self.field}={self.held_out}{validation}/{self.part}"

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        values = [getattr(c, self.field) for c in clips]
        missing = sum(v is None for v in values)
        if missing:
            raise DatasetError(f"split {self.name!r} needs every clip's {self.field}, but {missing} of {len(clips)} "
                               "clips name none")
        for value in (self.held_out, self.validation_held_out):
            if value is not None and value not in values:
                known = sorted(set(values))
                raise DatasetError(f"split {self.name!r}: no clip has {self.field} {value!r}; the dataset's are "
                                   f"{', '.join(known[:20])}{' ...' if len(known) > 20 else ''}")
        side = {self.held_out: "eval", self.validation_held_out: "validation"}
        return [c for c, v in zip(clips, values, strict=True) if side.get(v, "train") == self.part]


#: Reads named folds of clip ids from an env's ``data_dir``: ``[{"train": [ids], "test": [ids]}, ...]``
#: (and the validation ids under one of :data:`VALIDATION_FOLD_KEYS`, where the folds have them).
FoldReader = Callable[[Any], Sequence[Mapping[str, Sequence[str]]]]


@dataclass(frozen=True)
class IdFolds(ClipSplit):
    """Fold ``fold`` (from 1) of named folds of clip ids: its ``test`` ids are evaluated, its ``train`` ids trained on.

    Its validation side is the fold's ``validation`` (or ``valid``, ``dev``) ids; folds without
    them (MUStARD's) have none, and asking for it is an error naming the fold's keys.

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
        return f"{self.label}-{self.fold}" + ("" if self.part == "eval" else f"/{self.part}")

    def select(self, clips: Sequence[SpeechClip], context: SplitContext) -> list[SpeechClip]:
        folds = self.read_folds(context.data_dir)
        if isinstance(self.fold, bool) or not isinstance(self.fold, int) or not 1 <= self.fold <= len(folds):
            raise ValueError(f"split {self.name!r}: fold must be 1..{len(folds)}, got {self.fold!r}")
        by_id = {clip.id: clip for clip in clips}  # clips skipped for bad audio are absent
        fold = folds[self.fold - 1]
        if self.part == "validation":
            key = next((k for k in VALIDATION_FOLD_KEYS if k in fold), None)
            if key is None:
                raise ValueError(f"split {self.name!r}: the folds have no validation ids (keys {sorted(fold)}; "
                                 f"accepted: {', '.join(VALIDATION_FOLD_KEYS)})")
        else:
            key = "test" if self.part == "eval" else "train"
        ids = fold[key]
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
    """The split object ``split`` names: ``"all"``; a partition of the dataset when every clip has one; else ``"train"``/``"validation"``/``"eval"`` as a :class:`HashSplit`.

    On a dataset with its own partitions, ``"validation"`` is its valid/dev partition
    (:func:`validation_partition`), beside the eval partition ``"train"``'s other side is.

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
        if split not in partitions and split != "validation":
            raise DatasetError(f"split {split!r} is not one of the dataset's own splits {sorted(partitions)} "
                               "(its split column), nor 'validation' (its valid/dev one) or 'all'")
        if split == "validation" and "train" not in partitions:
            raise DatasetError(f"split 'validation' on the dataset's own splits {sorted(partitions)} needs its 'train' one")
        train = "train" if "train" in partitions else split
        # train's other side: an eval-like partition, a valid/dev one only when there is no other
        others = sorted(partitions - {train}, key=lambda p: (p in VALIDATION_PARTITIONS, p not in EVAL_PARTITIONS, p))
        if split == "validation":
            evaluated = others[0] if others else train
            return Partition(evaluated, train, validation_partition(partitions, exclude=(train, evaluated)),
                             part="validation")
        if split == train:
            return Partition(others[0] if others else train, train, part="train")
        return Partition(split, train)
    if split not in PARTS:
        raise ValueError(f"unknown split {split!r}; accepted: {', '.join(repr(p) for p in (*PARTS, 'all'))}, or a "
                         "ClipSplit (HashSplit, Partition, LeaveOneGroupOut, IdFolds, mustard_fold)")
    return HashSplit(part=split)


__all__ = [
    "EVAL_PARTITIONS",
    "GROUP_FIELDS",
    "VALIDATION_FOLD_KEYS",
    "VALIDATION_PARTITIONS",
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
    "validation_partition",
]

