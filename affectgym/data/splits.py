"""Stable train/eval splits computed from item ids and group keys.

A split is a pure function of the items: the same item lands in the same split on every
machine, whatever order the data comes in. Splits are drawn by **group**, not by item:
every item of a group (all renderings of one spoken line, every turn of one dialogue, all
clips of one speaker) lands on the same side, so no held-out item has a twin in train.
Without groups each item is its own group.

Groups are held out stratum by stratum, the stratum of a group being the set of labels its
items carry. A corpus of *pivot pairs* (the same line said sincerely and sarcastically)
has a stratum ``{sarcastic, sincere}``; its pairs are held out whole, so pivot pairs stay
pivot pairs inside eval, and every stratum (every class, for ungrouped data) is held out
in the same proportion.

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
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence

SPLIT_SALT = "affectgym-split-v1"
SPLIT_NAMES = ("train", "eval", "all")


def stable_hash(item_id: str, salt: str = SPLIT_SALT) -> int:
    """A 64-bit hash of ``item_id`` that is the same on every machine and run.

    >>> stable_hash("1_60") == stable_hash("1_60")
    True
    """
    digest = hashlib.sha256(f"{salt}:{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


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
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {eval_fraction!r}")
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
    chosen: set[str] = set()
    for stratum_groups in by_stratum.values():
        ranked = sorted(stratum_groups, key=lambda g: (stable_hash(g[1], salt), g))
        for group in ranked[: round(len(ranked) * eval_fraction)]:
            chosen.update(members[group])
    return chosen


def select_split(
    items: Sequence[tuple[str, Hashable]],
    split: str,
    eval_fraction: float = 0.2,
    *,
    groups: Mapping[str, Hashable] | None = None,
) -> list[str]:
    """Ids of ``split`` (``"train"``, ``"eval"`` or ``"all"``), in the order of ``items``.

    Args:
        items: ``(id, label)`` pairs.
        split: ``"train"``, ``"eval"`` or ``"all"``.
        eval_fraction: Share of each stratum's groups held out (see :func:`balanced_eval_ids`).
        groups: Item id -> group key; whole groups go to one side.

    Raises:
        ValueError: ``split`` is none of the accepted names.
    """
    if split == "all":
        return [item_id for item_id, _ in items]
    if split not in ("train", "eval"):
        raise ValueError(f"unknown split {split!r}; accepted: 'train', 'eval', 'all'")
    held_out = balanced_eval_ids(items, eval_fraction, groups=groups)
    return [item_id for item_id, _ in items if (item_id in held_out) == (split == "eval")]


__all__ = ["SPLIT_NAMES", "balanced_eval_ids", "select_split", "stable_hash"]
