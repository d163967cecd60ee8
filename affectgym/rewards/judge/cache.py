"""The on-disk verdict cache: a :class:`~affectgym.cache_root.DiskStore` (diskcache) shared by a judge's threads and by processes."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from affectgym.cache_root import DiskStore

log = logging.getLogger(__name__)


class VerdictCache:
    """Raw ratings by cache key, as JSON text, in a bounded store that threads and processes share.

    The store is diskcache's SQLite database in ``directory``: a file there that is not a
    database (or a damaged one, or something other than a regular file) is rebuilt empty
    with a warning, and a store that cannot be read or written makes reads misses and
    writes no-ops, with one warning. Past ``max_bytes`` the least recently stored verdicts
    are evicted.

    Args:
        directory: The cache folder.
        max_bytes: Size bound of the store.
    """

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.path = Path(directory)
        self._store = DiskStore(self.path, max_bytes=max_bytes, what="judge cache", log=log,
                                eviction_policy="least-recently-stored",
                                consequence="verdicts are used but not kept for the next run")

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """The stored ratings of each key found, as stored (JSON text, unless an entry was damaged)."""
        found = {key: self._store.get(key) for key in keys}
        return {key: value for key, value in found.items() if value is not None}

    def put(self, key: str, ratings: Mapping[str, Any]) -> None:
        """Store (or replace) the ratings of ``key``."""
        self._store.set(key, json.dumps(dict(ratings)))
