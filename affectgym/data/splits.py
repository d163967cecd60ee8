"""Stable train/eval splits computed from item ids.

A split is a pure function of the ids (and labels, for class balance): the same item lands
in the same split on every machine, whatever order the data comes in, and adding items
never moves existing ones across the boundary of their class.

>>> items = [(f"clip{i}", "sarcastic" if i % 2 else "sincere") for i in range(20)]
>>> eval_ids = balanced_eval_ids(items, eval_fraction=0.2)
>>> len(eval_ids), sorted({label for item_id, label in items if item_id in eval_ids})
(4, ['sarcastic', 'sincere'])
>>> eval_ids == balanced_eval_ids(list(reversed(items)), eval_fraction=0.2)
True
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence

SPLIT_SALT = "affectgym-split-v1"


def stable_hash(item_id: str, salt: str = SPLIT_SALT) -> int:
    """A 64-bit hash of ``item_id`` that is the same on every machine and run.

    >>> stable_hash("1_60") == stable_hash("1_60")
    True
    """
    digest = hashlib.sha256(f"{salt}:{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def balanced_eval_ids(
    items: Iterable[tuple[str, Hashable]], eval_fraction: float = 0.2, salt: str = SPLIT_SALT
) -> set[str]:
    """Ids of the eval split: in each class, the ``eval_fraction`` of ids with the lowest hash.

    Args:
        items: ``(id, label)`` pairs.
        eval_fraction: Share of each class held out, in ``[0, 1)``.
        salt: Changes the split as a whole (e.g. to draw a second split).

    Returns:
        The set of eval ids.
    """
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {eval_fraction!r}")
    by_label: dict[Hashable, list[str]] = defaultdict(list)
    for item_id, label in items:
        by_label[label].append(item_id)
    chosen: set[str] = set()
    for ids in by_label.values():
        ranked = sorted(ids, key=lambda i: (stable_hash(i, salt), i))
        chosen.update(ranked[: round(len(ranked) * eval_fraction)])
    return chosen


def select_split(
    items: Sequence[tuple[str, Hashable]], split: str, eval_fraction: float = 0.2
) -> list[str]:
    """Ids of ``split`` (``"train"``, ``"eval"`` or ``"all"``), in the order of ``items``.

    Raises:
        ValueError: ``split`` is none of the accepted names.
    """
    if split == "all":
        return [item_id for item_id, _ in items]
    if split not in ("train", "eval"):
        raise ValueError(f"unknown split {split!r}; accepted: 'train', 'eval', 'all'")
    held_out = balanced_eval_ids(items, eval_fraction)
    return [item_id for item_id, _ in items if (item_id in held_out) == (split == "eval")]


__all__ = ["balanced_eval_ids", "select_split", "stable_hash"]
