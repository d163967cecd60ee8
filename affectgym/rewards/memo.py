"""A bounded in-process memo, the one every reward scorer keeps its results in.

Scorers that are expensive (the emotion classifier, an LLM judge) remember what they
computed, by content, in a :class:`BoundedMemo`: a mapping that forgets its least recently
used entries beyond ``max_entries`` (``cachetools.LRUCache`` under a lock). :meth:`BoundedMemo.get_many` is the batched form the
scorers use: the keys not yet known are computed in one call, each once.

>>> memo = BoundedMemo(max_entries=2)
>>> memo.get_many(["a", "b", "a"], lambda keys: [key.upper() for key in keys])
['A', 'B', 'A']
>>> memo.get_many(["c"], lambda keys: [key.upper() for key in keys])
['C']
>>> "a" in memo, "b" in memo, len(memo)
(False, True, 2)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Generic, TypeVar

from cachetools import LRUCache

__all__ = ["BoundedMemo"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedMemo(Generic[K, V]):
    """A mapping of at most ``max_entries`` entries that evicts the least recently used.

    Reading an entry (:meth:`get`, :meth:`get_many`) refreshes it. Safe to share between
    threads.

    Args:
        max_entries: Entries kept (at least 1).

    Raises:
        ValueError: ``max_entries`` is below 1.
    """

    def __init__(self, max_entries: int) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries must be an integer >= 1, got {max_entries!r}")
        self.max_entries = max_entries
        self._entries: LRUCache[K, V] = LRUCache(maxsize=max_entries)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __repr__(self) -> str:
        return f"BoundedMemo({len(self)}/{self.max_entries} entries)"

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value of ``key`` (refreshed), or ``default`` when it is not known."""
        with self._lock:
            return self._entries.get(key, default)

    def put(self, key: K, value: V) -> None:
        """Remember ``value`` for ``key``, evicting the least recently used entry when full."""
        with self._lock:
            self._entries[key] = value

    def update(self, items: Iterable[tuple[K, V]]) -> None:
        """:meth:`put` each ``(key, value)``."""
        for key, value in items:
            self.put(key, value)

    def get_many(self, keys: Sequence[K], compute: Callable[[list[K]], Iterable[V]]) -> list[V]:
        """The value of each key; the unknown ones (each once, in first-seen order) come from one ``compute`` call.

        Args:
            keys: The keys, repeats allowed.
            compute: ``keys -> values``, one value per key, in order.

        Returns:
            One value per key. Values computed here are returned even when the memo is too
            small to keep them all.

        Raises:
            ValueError: ``compute`` returned a different number of values.
        """
        found: dict[K, V] = {}
        with self._lock:
            for key in keys:
                if key in self._entries and key not in found:
                    found[key] = self._entries[key]
        missing = list(dict.fromkeys(key for key in keys if key not in found))
        if missing:
            values = list(compute(missing))
            if len(values) != len(missing):
                raise ValueError(f"compute returned {len(values)} values for {len(missing)} keys")
            found.update(zip(missing, values, strict=True))
            self.update(zip(missing, values, strict=True))
        return [found[key] for key in keys]
