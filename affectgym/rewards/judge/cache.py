"""The on-disk verdict cache: SQLite, shared by a judge's threads and by processes."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class VerdictCache:
    """SQLite cache of raw ratings, shared by threads (one connection, one query at a time) and processes (WAL).

    A file that is not a SQLite database (or a corrupt one) is rebuilt empty, with a warning.
    """

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "verdicts.sqlite3"
        self._lock = threading.Lock()
        try:
            self._connection = self._open()
        except sqlite3.DatabaseError as error:
            # "Locked" or "unable to open" (OperationalError) is not damage: deleting would lose good verdicts.
            if isinstance(error, sqlite3.OperationalError):
                raise
            log.warning("judge cache %s is not a readable SQLite database (%s); rebuilding it empty", self.path, error)
            for suffix in ("", "-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            self._connection = self._open()

    def _open(self) -> sqlite3.Connection:
        """The cache's connection, its table created; a damaged file raises ``sqlite3.DatabaseError`` here."""
        # the judge's threads share the connection; self._lock serialises its use
        connection = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            with connection:
                connection.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, ratings TEXT NOT NULL)")
        except sqlite3.DatabaseError:
            connection.close()
            raise
        return connection

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """The stored ratings of each key found, as stored (JSON text, unless a row was damaged)."""
        found: dict[str, Any] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = self._connection.execute(
                    f"SELECT key, ratings FROM verdicts WHERE key IN ({marks})", chunk
                )
                found.update(rows)
        return found

    def put(self, key: str, ratings: Mapping[str, Any]) -> None:
        """Store (or replace) the ratings of ``key``."""
        with self._lock, self._connection as connection:
            connection.execute(
                "INSERT OR REPLACE INTO verdicts (key, ratings) VALUES (?, ?)",
                (key, json.dumps(dict(ratings))),
            )
