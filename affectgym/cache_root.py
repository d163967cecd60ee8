"""Where affectgym keeps what it caches on disk: one folder, set by ``$AFFECTGYM_CACHE``.

Everything that caches lives below it: prosody entries (``prosody/``), corpus norms
(``norms/``), judge verdicts (``judge/``), converted models (``models/``). The entry caches
are each a :class:`DiskStore`: a bounded diskcache store that repairs its folder.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_CACHE_ROOT = "~/.cache/affectgym"


def cache_root() -> Path:
    """affectgym's cache folder: ``$AFFECTGYM_CACHE``, or ``~/.cache/affectgym`` when unset or empty.

    Read on every call, so a changed variable takes effect at once; ``~`` is expanded.
    The folder is not created.

    Returns:
        The folder.

    >>> (cache_root() / "judge").relative_to(cache_root())
    PosixPath('judge')
    """
    return Path(os.environ.get("AFFECTGYM_CACHE") or DEFAULT_CACHE_ROOT).expanduser()


#: The files of a :class:`DiskStore`'s folder: diskcache's SQLite database and its write-ahead log.
DATABASE_FILES = ("cache.db", "cache.db-wal", "cache.db-shm")
# Values up to this size stay inside the database (diskcache writes larger ones as files of
# their own); every value of affectgym is far smaller, so the database is all that is read.
_INLINE_VALUE_BYTES = 2**30


class DiskStore:
    """A bounded key-value store in a cache folder (a ``diskcache.Cache``) that never stops a run.

    Values (``bytes`` or ``str``) live inside diskcache's SQLite database, never in files of
    their own: threads and processes read and write it at once (SQLite's write-ahead log),
    and past ``max_bytes`` diskcache evicts by ``eviction_policy`` as it writes. What can go
    wrong with the folder is repaired or reported, never raised:

    * a database file replaced by something that is not a regular file (a folder, a FIFO, a
      link) is removed with the database, and the store starts empty: nothing but regular
      files is ever opened;
    * a database that SQLite cannot read (another file, damaged pages), when it is opened or
      in use, is rebuilt empty;
    * a folder that cannot be created or written (read-only, a full disk, a lock held too
      long) makes reads misses and writes no-ops, and the first such failure of the store
      logs one warning naming the folder, the reason and ``consequence``.

    The folder is opened on first use, so a store that is never used touches nothing.

    Args:
        folder: The store's folder (created when missing).
        max_bytes: Size bound of the database.
        what: What the store is, for messages (``"prosody cache"``).
        consequence: What a failure means for the user, ending the warning.
        log: The logger of the module that keeps the store.
        eviction_policy: diskcache's ``"least-recently-used"`` (a read refreshes an entry)
            or ``"least-recently-stored"`` (reads write nothing).
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        max_bytes: int,
        what: str,
        consequence: str,
        log: logging.Logger,
        eviction_policy: str = "least-recently-used",
    ) -> None:
        self.folder = Path(folder)
        self.max_bytes = int(max_bytes)
        self.what = what
        self.consequence = consequence
        self.eviction_policy = eviction_policy
        self._log = log
        self._cache: Any = None  # the diskcache.Cache, once opened
        self._lock = threading.Lock()
        self._failure_logged = False

    def get(self, key: str) -> Any:
        """The value stored under ``key``, or ``None`` (not stored, or the store cannot be read)."""
        return self._use(lambda cache: cache.get(key), "read", None)

    def set(self, key: str, value: bytes | str) -> bool:
        """Store ``value`` under ``key`` (evicting past the bound); whether it was stored."""
        return self._use(lambda cache: cache.set(key, value), "written", False)

    def delete(self, key: str) -> None:
        """Forget ``key`` (a damaged value), if it is stored."""
        self._use(lambda cache: cache.delete(key), "written", None)

    def keys(self) -> list[str]:
        """The keys stored, in the database's key order."""
        return self._use(lambda cache: list(cache.iterkeys()), "read", [])

    def volume_bytes(self) -> int:
        """Size of the database as diskcache bounds it (its pages), in bytes; 0 when it cannot be read."""
        return self._use(lambda cache: int(cache.volume()), "read", 0)

    def cull(self) -> int:
        """Evict entries until the store is within ``max_bytes``; how many were evicted."""
        return self._use(lambda cache: int(cache.cull()), "written", 0)

    def close(self) -> None:
        """Close this process's connections (the next use opens them again)."""
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None

    def _use(self, operation: Callable[[Any], Any], doing: str, failed: Any) -> Any:
        """``operation(cache)``; ``failed`` when the store cannot be opened or the operation fails.

        A database found damaged here (SQLite's ``DatabaseError``, not a lock or I/O
        ``OperationalError``) is rebuilt empty, with a warning.
        """
        cache = self._opened()
        if cache is None:
            return failed
        try:
            return operation(cache)
        except Exception as error:  # noqa: BLE001 - diskcache raises sqlite3, OS and its Timeout errors
            if isinstance(error, sqlite3.DatabaseError) and not isinstance(error, sqlite3.OperationalError):
                self._rebuild(error)
            else:
                self._failed(error, doing)
            return failed

    def _opened(self) -> Any:
        """The open ``diskcache.Cache``, opened (and repaired) on first use; ``None`` when it cannot be.

        Opening writes (the folder, the database's tables and settings), so a failure is
        reported as "cannot be written"; a later call tries again.
        """
        if self._cache is None:
            with self._lock:
                if self._cache is None:
                    try:
                        self._cache = self._open()
                    except Exception as error:  # noqa: BLE001 - diskcache raises sqlite3, OS and its Timeout errors
                        self._failed(error, "written")
        return self._cache

    def _open(self) -> Any:
        import diskcache

        self.folder.mkdir(parents=True, exist_ok=True)
        not_files = [name for name in DATABASE_FILES if _exists_but_not_a_file(self.folder / name)]
        if not_files:
            self._log.warning("%s %s: %s not a regular file; the database is removed and starts empty",
                              self.what, self.folder, ", ".join(not_files) + (" is" if len(not_files) == 1 else " are"))
            self._remove_database()
        settings = {"size_limit": self.max_bytes, "eviction_policy": self.eviction_policy,
                    "disk_min_file_size": _INLINE_VALUE_BYTES}
        try:
            return diskcache.Cache(str(self.folder), **settings)
        except sqlite3.DatabaseError as error:
            # "locked" or "unable to open" (OperationalError) is no damage: deleting would lose good entries
            if isinstance(error, sqlite3.OperationalError):
                raise
            self._warn_damaged(error)
            self._remove_database()
            return diskcache.Cache(str(self.folder), **settings)

    def _rebuild(self, error: sqlite3.DatabaseError) -> None:
        """Replace a database found damaged in use by an empty one (the next use opens it)."""
        self._warn_damaged(error)
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None
            try:
                self._remove_database()
            except OSError as removal:
                self._failed(removal, "written")

    def _warn_damaged(self, error: sqlite3.DatabaseError) -> None:
        self._log.warning("%s %s is not a readable SQLite database (%s); rebuilding it empty",
                          self.what, self.folder / DATABASE_FILES[0], error)

    def _remove_database(self) -> None:
        for name in DATABASE_FILES:
            path = self.folder / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)

    def _failed(self, error: BaseException, doing: str) -> None:
        if self._failure_logged:
            return
        self._failure_logged = True
        reason = getattr(error, "strerror", None) or error
        self._log.warning("%s %s cannot be %s (%s: %s); %s", self.what, self.folder, doing,
                          type(error).__name__, reason, self.consequence)


def _exists_but_not_a_file(path: Path) -> bool:
    """Whether something other than a regular file (a folder, a FIFO, a link) is at ``path``."""
    try:
        return not stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
