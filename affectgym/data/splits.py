"""Stable train/validation/eval splits computed from item ids and group keys.

A split is a pure function of the items: the same item lands in the same split on every
machine, whatever order the data comes in. Splits are drawn by **group**, not by item:
every item of a group (all renderings of one spoken line, every turn of one dialogue, all
clips of one speaker) lands on the same side, so no held-out item has a twin in train or
validation. Without groups each item is its own group.

Groups are held out stratum by stratum, the stratum of a group being the set of labels its
items carry. A corpus of *pivot pairs* (the same line said sincerely and sarcastically)
has a stratum ``{sarcastic, sincere}``; its pairs are held out whole, so pivot pairs stay
pivot pairs inside eval, and every stratum (every class, for ungrouped data) is held out
in the same proportion.

In each stratum the groups are ranked by a salted hash of their key: **eval** is the
``eval_fraction`` with the lowest hash, **validation** the next ``validation_fraction``
(:func:`held_out_counts` says how many), **train** the rest. Validation was carved out of
what used to be train, so eval is the same as before validation existed and train is
smaller by the validation groups.

>>> items = [(f"clip{i}", "sarcastic" if i % 2 else "sincere") for i in range(20)]
>>> eval_ids = balanced_eval_ids(items, eval_fraction=0.2)
>>> len(eval_ids), sorted({label for item_id, label in items if item_id in eval_ids})
(4, ['sarcastic', 'sincere'])
>>> eval_ids == balanced_eval_ids(list(reversed(items)), eval_fraction=0.2)
True
>>> lines = {f"clip{i}": f"line{i // 2}" for i in range(20)}  # clip 2k and 2k+1 say one line
>>> grouped = balanced_eval_ids(items, 0.2, groups=lines)
>>> sorted(grouped)
['clip16', 'clip17', 'clip2', 'clip3']
>>> sorted(select_split(items, "validation", groups=lines))
['clip4', 'clip5']
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

SPLIT_SALT = "affectgym-split-v1"
#: The sides of a split, each a disjoint set of whole groups.
HELD_OUT_PARTS = ("train", "validation", "eval")
#: Every split name an env with held-out scenarios takes: its three sides, and ``"all"``.
SPLIT_NAMES = ("train", "validation", "eval", "all")
#: Default share of each stratum's groups kept for validation (at least one group in a
#: stratum of three or more; see :func:`held_out_counts`).
VALIDATION_FRACTION = 0.1
#: The fewest groups a stratum needs to give one to validation: one each for eval, validation and train.
MIN_GROUPS_FOR_VALIDATION = 3


def stable_hash(item_id: str, salt: str = SPLIT_SALT) -> int:
    """A 64-bit hash of ``item_id`` that is the same on every machine and run.

    >>> stable_hash("1_60") == stable_hash("1_60")
    True
    """
    digest = hashlib.sha256(f"{salt}:{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def check_split_name(split: str, accepted: Sequence[str] = SPLIT_NAMES) -> None:
    """Raise a ``ValueError`` naming the accepted splits when ``split`` is none of them.

    >>> check_split_name("test")
    Traceback (most recent call last):
    ...
    ValueError: unknown split 'test'; accepted: 'train', 'validation', 'eval', 'all'
    """
    if split not in accepted:
        raise ValueError(f"unknown split {split!r}; accepted: {', '.join(repr(name) for name in accepted)}")


def held_out_counts(n_groups: int, eval_fraction: float, validation_fraction: float = VALIDATION_FRACTION,
                    *, n_eval: int | None = None) -> tuple[int, int]:
    """How many of a stratum's ``n_groups`` groups go to eval and to validation.

    Eval: ``round(n_groups * eval_fraction)`` (as before validation existed). Validation:
    ``round(n_groups * validation_fraction)``, but at least one group once the stratum has
    :data:`MIN_GROUPS_FOR_VALIDATION` (3) or more, so a small dataset still has something to
    choose settings on; and never so many that train is left without a group. A stratum of
    one or two groups, or ``validation_fraction=0``, gives validation none.

    Args:
        n_groups: Groups in the stratum.
        eval_fraction: Share of them held out for eval, in ``[0, 1)``.
        validation_fraction: Share of them kept for validation, in ``[0, 1)``.
        n_eval: The eval count when a fixed rule, not ``eval_fraction``, chose the eval groups.

    Returns:
        ``(eval groups, validation groups)``; train gets the rest.

    >>> [held_out_counts(n, 0.2, 0.1) for n in (1, 2, 3, 5, 10, 25, 100)]
    [(0, 0), (0, 0), (1, 1), (1, 1), (2, 1), (5, 2), (20, 10)]
    """
    for name, fraction in (("eval_fraction", eval_fraction), ("validation_fraction", validation_fraction)):
        if not 0.0 <= fraction < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {fraction!r}")
    if n_eval is None:
        n_eval = round(n_groups * eval_fraction)
    if validation_fraction == 0.0 or n_groups < MIN_GROUPS_FOR_VALIDATION:
        return n_eval, 0
    return n_eval, max(0, min(max(1, round(n_groups * validation_fraction)), n_groups - n_eval - 1))


def assign_splits(
    items: Iterable[tuple[str, Hashable]],
    eval_fraction: float = 0.2,
    validation_fraction: float = VALIDATION_FRACTION,
    salt: str = SPLIT_SALT,
    *,
    groups: Mapping[str, Hashable] | None = None,
    eval_groups: Callable[[str], bool] | None = None,
) -> dict[str, str]:
    """The side (``"train"``, ``"validation"`` or ``"eval"``) of every item, by its group's hash rank.

    In each stratum the groups are ranked by :func:`stable_hash` of their key: the first
    ``n_eval`` are eval, the next ``n_validation`` validation, the rest train (the counts of
    :func:`held_out_counts`).

    Args:
        items: ``(id, label)`` pairs.
        eval_fraction: Share of the groups of each stratum held out for eval, in ``[0, 1)``.
        validation_fraction: Share kept for validation, in ``[0, 1)``, carved from what would
            otherwise be train (eval does not depend on it).
        salt: Changes the split as a whole (e.g. to draw a second split).
        groups: Item id -> group key; items missing from it are groups of their own.
        eval_groups: A fixed rule naming the eval groups by key, in place of the lowest-hash
            ``eval_fraction`` (for data whose eval side was fixed by such a rule before
            validation existed); validation is then the lowest-hash of the other groups.

    Returns:
        ``{item id: side}``.

    >>> sides = assign_splits([(f"arc{i}", "arc") for i in range(10)], eval_groups=lambda key: key == "arc7")
    >>> sorted(item for item, side in sides.items() if side != "train")
    ['arc7', 'arc8']
    """
    held_out_counts(0, eval_fraction, validation_fraction)  # checks both fractions, whatever the items
    # an ungrouped item is a group named by its own id (so ungrouped splits hash ids, as always)
    members: dict[tuple[bool, str], list[str]] = defaultdict(list)
    labels: dict[tuple[bool, str], set[str]] = defaultdict(set)
    for item_id, label in items:
        grouped = groups is not None and item_id in groups
        group = (grouped, str(groups[item_id]) if grouped else item_id)
        members[group].append(item_id)
        labels[group].add(str(label))
    by_stratum: dict[tuple[str, ...], list[tuple[bool, str]]] = defaultdict(list)
    for group, group_labels in labels.items():
        by_stratum[tuple(sorted(group_labels))].append(group)
    def fixed_eval(group: tuple[bool, str]) -> bool:
        return eval_groups is not None and bool(eval_groups(group[1]))

    group_sides: dict[tuple[bool, str], str] = {}
    for stratum_groups in by_stratum.values():
        # a fixed rule's eval groups rank first; the hash orders the rest
        ranked = sorted(stratum_groups, key=lambda g: (not fixed_eval(g), stable_hash(g[1], salt), g))
        n_fixed = None if eval_groups is None else sum(map(fixed_eval, ranked))
        n_eval, n_validation = held_out_counts(len(ranked), eval_fraction, validation_fraction, n_eval=n_fixed)
        for rank, group in enumerate(ranked):
            group_sides[group] = "eval" if rank < n_eval else "validation" if rank < n_eval + n_validation else "train"
    fill_empty_sides(group_sides, salt, eval_fraction > 0 and eval_groups is None, validation_fraction > 0)
    return {item_id: side for group, side in group_sides.items() for item_id in members[group]}


def fill_empty_sides(group_sides: dict[Hashable, str], salt: str, fill_eval: bool, fill_validation: bool) -> None:
    """Give eval one group (from 2 groups on) and validation one (from 3 on) where every stratum left it none.

    Strata too small to hold a group out (a few speakers, each with labels of their own; two
    sentences said in every emotion) would otherwise leave a side empty for the whole
    dataset. The train group with the lowest hash moves, train keeping at least one; a
    dataset whose sides all have groups is not changed. Changes ``group_sides`` in place.

    >>> sides = {(True, speaker): "train" for speaker in ("a", "b", "c")}  # three one-group strata
    >>> fill_empty_sides(sides, SPLIT_SALT, fill_eval=True, fill_validation=True)
    >>> sorted(sides.values())
    ['eval', 'train', 'validation']
    """
    for side, fill, fewest_groups in (("eval", fill_eval, 2), ("validation", fill_validation, MIN_GROUPS_FOR_VALIDATION)):
        train = sorted((g for g, s in group_sides.items() if s == "train"), key=lambda g: (stable_hash(str(g), salt), str(g)))
        if fill and len(group_sides) >= fewest_groups and side not in group_sides.values() and len(train) >= 2:
            group_sides[train[0]] = side


def balanced_eval_ids(
    items: Iterable[tuple[str, Hashable]],
    eval_fraction: float = 0.2,
    salt: str = SPLIT_SALT,
    *,
    groups: Mapping[str, Hashable] | None = None,
) -> set[str]:
    """Ids of the eval split: in each stratum, the ``eval_fraction`` of groups with the lowest hash.

    Args:
        items: ``(id, label)`` pairs.
        eval_fraction: Share of the groups of each stratum held out, in ``[0, 1)``.
        salt: Changes the split as a whole (e.g. to draw a second split).
        groups: Item id -> group key; items missing from it are groups of their own.

    Returns:
        The set of eval ids (whole groups).
    """
    sides = assign_splits(items, eval_fraction, 0.0, salt, groups=groups)
    return {item_id for item_id, side in sides.items() if side == "eval"}


def select_split(
    items: Sequence[tuple[str, Hashable]],
    split: str,
    eval_fraction: float = 0.2,
    *,
    groups: Mapping[str, Hashable] | None = None,
    validation_fraction: float = VALIDATION_FRACTION,
    eval_groups: Callable[[str], bool] | None = None,
) -> list[str]:
    """Ids of ``split`` (``"train"``, ``"validation"``, ``"eval"`` or ``"all"``), in the order of ``items``.

    Train is what neither eval nor validation holds: smaller, by the validation groups, than
    before validation existed; eval is unchanged.

    Args:
        items: ``(id, label)`` pairs.
        split: ``"train"``, ``"validation"``, ``"eval"`` or ``"all"``.
        eval_fraction: Share of each stratum's groups held out for eval (see :func:`assign_splits`).
        groups: Item id -> group key; whole groups go to one side.
        validation_fraction: Share of each stratum's groups kept for validation (see :func:`held_out_counts`).
        eval_groups: A fixed rule naming the eval groups (see :func:`assign_splits`).

    Raises:
        ValueError: ``split`` is none of the accepted names.
    """
    check_split_name(split)
    if split == "all":
        return [item_id for item_id, _ in items]
    sides = assign_splits(items, eval_fraction, validation_fraction, groups=groups, eval_groups=eval_groups)
    return [item_id for item_id, _ in items if sides[item_id] == split]


def spread(items: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` of ``items``, evenly spaced from the first.

    >>> spread(list(range(10)), 3)
    [0, 3, 6]
    """
    if len(items) <= limit:
        return list(items)
    stride = len(items) / limit
    return [items[int(i * stride)] for i in range(limit)]


__all__ = [
    "HELD_OUT_PARTS",
    "MIN_GROUPS_FOR_VALIDATION",
    "SPLIT_NAMES",
    "VALIDATION_FRACTION",
    "assign_splits",
    "balanced_eval_ids",
    "check_split_name",
    "fill_empty_sides",
    "held_out_counts",
    "select_split",
    "spread",
    "stable_hash",
]
