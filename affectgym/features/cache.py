"""Content-addressed on-disk cache of prosody, and parallel extraction over a corpus.

An entry's key hashes the audio content (the file's bytes, or the samples and rate),
the backend, the analysis parameters, the target sample rate and
the package version; change any of them and the entry is simply not found.
Entries live under ``$AFFECTGYM_CACHE`` (default ``~/.cache/affectgym``) ``/prosody``.

Safe under concurrency: every write goes to a unique temporary file in the same
directory and is moved into place with ``os.replace`` (atomic on POSIX), so readers see
either nothing or a whole entry. Each entry starts with a hash of its payload and
records its own key; a mismatch (a corrupted entry, or one copied or renamed to
another key), unparsable JSON or something other than a file at the entry's path
counts as a miss, and the entry is recomputed and rewritten. The cache is bounded in
bytes: past the bound the least recently used entries (oldest modification time; a hit
refreshes it) are deleted first, and eviction also removes the temporary files of
writers that died before moving them into place.

The cache is an accelerator, never a requirement: when an entry cannot be written
(a read-only cache folder, a full disk) the computed prosody is returned all the same
and one warning per cache folder says why.

A small in-process memo sits in front of the disk: a repeated request for the same
unchanged file costs a ``stat`` and a dict lookup. "Unchanged" means the same path,
device, inode, size, mtime and ctime; the kernel sets ctime on every change and no
user tool can set it back (``cp -p``, ``rsync -t`` and tar restore the mtime only), and
a file changed within the last :data:`_RACY_WINDOW_NS` is hashed again on every request,
since a second change inside one clock tick would leave even the ctime unchanged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash
from cachetools import LRUCache

from affectgym import _version
from affectgym.cache_root import cache_root
from affectgym.features.audio import DEFAULT_SAMPLE_RATE_HZ, Audio, load_audio
from affectgym.features.prosody import Prosody, ProsodyParams, extract_prosody

CACHE_FORMAT = 3  # bump when the entry layout changes
DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # 512 MiB of entries, ~10 KB-100 KB each
#: Fewest writes between two scans of the cache folder (the size bound and orphaned files).
SCAN_EVERY_WRITES = 32
_MEMO_ENTRIES = 1024  # in-process results kept in front of the disk
# A writer moves its temporary file into place within milliseconds; one this old (in
# seconds) belongs to a writer that was killed, and eviction removes it.
ORPHAN_TMP_AGE_S = 600.0
_RACY_WINDOW_NS = 2_000_000_000  # files changed this recently are not memoised (ns)

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """Where prosody entries go: ``$AFFECTGYM_CACHE/prosody`` (default ``~/.cache/affectgym``).

    Returns:
        The directory (not created).
    """
    return cache_root() / "prosody"


class ProsodyCache:
    """A directory of prosody entries, addressed by content.

    Args:
        root: Cache directory; :func:`default_cache_dir` if ``None``.
        max_bytes: Size bound; the oldest entries are evicted beyond it.
    """

    def __init__(self, root: str | Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root = Path(root) if root is not None else default_cache_dir()
        self.max_bytes = int(max_bytes)
        # Scanning the folder costs a stat per entry, so it runs when this process's estimate of
        # the size passes the bound, or after a number of writes that grows with the entries.
        self._writes_since_scan = 0
        self._writes_between_scans = 0  # 0: scan at the next write (the first one measures)
        self._estimated_bytes = 0
        self._memo: LRUCache[str, Prosody] = LRUCache(maxsize=_MEMO_ENTRIES)
        self._write_failure_logged = False

    def key(self, audio_digest: str, backend: str, params: ProsodyParams, sr: int | None) -> str:
        """The entry key for one analysis of one piece of audio.

        Args:
            audio_digest: Hex digest of the audio content.
            backend: Backend name.
            params: Analysis parameters.
            sr: Analysis sample rate.

        Returns:
            A hex SHA-256 key.
        """
        parts = {
            "audio": audio_digest,
            "backend": backend,
            "params": params.to_dict(),
            "sr": sr,
            "version": _version.__version__,
            "format": CACHE_FORMAT,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Prosody | None:
        """The cached prosody for ``key``, or ``None`` (missing or corrupted entry).

        Args:
            key: From :meth:`key`.

        Returns:
            The entry, or ``None``; a corrupted entry is deleted.
        """
        if key in self._memo:
            return self._memo[key]
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:  # a folder or another non-file at the entry's path: recompute
            return None
        prosody = _decode_entry(raw, key)
        if prosody is None:
            _remove_quietly(path)
            return None
        try:
            os.utime(path)  # mark as recently used for eviction
        except OSError:  # gone meanwhile, or a read-only cache: the hit stands
            pass
        self._remember(key, prosody)
        return prosody

    def put(self, key: str, prosody: Prosody) -> bool:
        """Store an entry atomically, then evict if the cache is over its bound.

        An entry that cannot be written (read-only folder, full disk, a folder in its
        place) is kept in the in-process memo only; the first such failure of this cache
        logs one warning naming the folder and the reason.

        Args:
            key: From :meth:`key`.
            prosody: The value.

        Returns:
            Whether the entry reached the disk.
        """
        self._remember(key, prosody)
        path = self._path(key)
        temporary = path.parent / f".{key}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            encoded = _encode_entry(prosody, key)
            temporary.write_bytes(encoded)
            os.replace(temporary, path)
        except OSError as err:
            self._log_write_failure(err)
            return False
        finally:
            _remove_quietly(temporary)
        self._writes_since_scan += 1
        self._estimated_bytes += len(encoded)
        if self._writes_since_scan > self._writes_between_scans or self._estimated_bytes > self.max_bytes:
            self.evict()
        return True

    def _log_write_failure(self, err: OSError) -> None:
        if self._write_failure_logged:
            return
        self._write_failure_logged = True
        log.warning(
            "prosody cache %s cannot be written (%s: %s); features are computed and used but not "
            "stored. Set AFFECTGYM_CACHE to a writable folder to keep them between runs.",
            self.root,
            type(err).__name__,
            err.strerror or err,
        )

    def _remember(self, key: str, prosody: Prosody) -> None:
        self._memo[key] = prosody

    def clear_memo(self) -> None:
        """Forget the in-process memo (the disk entries stay)."""
        self._memo.clear()

    def _shards(self) -> list[Path]:
        try:
            return [shard for shard in self.root.iterdir() if shard.is_dir()]
        except OSError:  # no cache folder yet (or an unreadable one): nothing stored
            return []

    def entries(self) -> list[Path]:
        """Paths of all stored entries (files only)."""
        return [p for shard in self._shards() for p in shard.glob("*.json") if p.is_file()]

    def evict(self) -> int:
        """Delete orphaned temporary files, then the least recently used entries until the
        cache is within its bound.

        A temporary file older than :data:`ORPHAN_TMP_AGE_S` belongs to a writer that died
        before moving it into place; it is removed whatever the cache's size.

        Returns:
            Number of entries deleted (orphaned temporary files not counted).
        """
        self._writes_since_scan = 0
        oldest_live_ns = time.time_ns() - int(ORPHAN_TMP_AGE_S * 1e9)
        for shard in self._shards():
            for temporary in shard.glob(".*.tmp"):
                try:
                    if temporary.stat().st_mtime_ns < oldest_live_ns:
                        temporary.unlink()
                except OSError:  # taken by its writer meanwhile, or not ours to remove
                    continue
        sized = []
        for path in self.entries():
            try:
                stat_result = path.stat()
            except OSError:
                continue
            sized.append((stat_result.st_mtime_ns, stat_result.st_size, path))
        total = sum(size for _, size, _ in sized)
        # the next scan after a quarter as many writes again as there are entries (at least 32):
        # filling a cache of n entries then costs O(n) stats in all, not O(n^2 / 32)
        self._writes_between_scans = max(SCAN_EVERY_WRITES, len(sized) // 4)
        self._estimated_bytes = total
        if total <= self.max_bytes:
            return 0
        deleted = 0
        target = int(self.max_bytes * 0.9)  # leave headroom so eviction is not every write
        for _, size, path in sorted(sized, key=lambda item: (item[0], str(item[2]))):
            if total <= target:
                break
            if _remove_quietly(path):
                deleted += 1
            total -= size
        self._estimated_bytes = total
        return deleted


def _remove_quietly(path: Path) -> bool:
    """Unlink ``path`` if it is there and ours to remove; whether it was removed."""
    try:
        path.unlink()
    except OSError:
        return False
    return True


_CONTOUR_FIELDS = ("contour_times_s", "contour_f0_hz")
_KEY_FIELD = "cache_key"  # the entry's own key, so a copied or renamed entry is refused


def _encode_entry(prosody: Prosody, key: str) -> bytes:
    """``<xxh3 of body>\\n<body>``; body = 8-byte header length, JSON of the key and the
    scalar fields, then the contour as raw little-endian float64 (times, then F0): exact
    and fast to read."""
    payload = {_KEY_FIELD: key, **prosody.to_dict()}
    contour = np.concatenate([np.asarray(payload.pop(name), dtype="<f8") for name in _CONTOUR_FIELDS])
    header = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    body = len(header).to_bytes(8, "little") + header + contour.tobytes()
    return xxhash.xxh3_128_hexdigest(body).encode("ascii") + b"\n" + body


def _decode_entry(raw: bytes, key: str) -> Prosody | None:
    digest, _, body = raw.partition(b"\n")
    if len(body) < 8 or xxhash.xxh3_128_hexdigest(body).encode("ascii") != digest:
        return None
    header_end = 8 + int.from_bytes(body[:8], "little")
    try:
        payload: dict[str, Any] = json.loads(body[8:header_end])
        if not isinstance(payload, dict) or payload.pop(_KEY_FIELD, None) != key:
            return None
        contour = np.frombuffer(body[header_end:], dtype="<f8")
        if contour.size % 2:
            return None
        half = contour.size // 2
        payload[_CONTOUR_FIELDS[0]], payload[_CONTOUR_FIELDS[1]] = contour[:half], contour[half:]
        return Prosody.from_dict(payload)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


_FILE_DIGESTS: dict[tuple[str, int, int, int, int, int], str] = {}


def _file_digest(path: Path) -> str:
    """XXH3-128 of a file's bytes (a content address, not a security hash).

    Memoised on (path, device, inode, size, mtime, ctime), and only for files whose last
    change is older than :data:`_RACY_WINDOW_NS` (see the module docstring).
    """
    status = path.stat()
    memo_key = (
        str(path.resolve()),
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )
    digest = _FILE_DIGESTS.get(memo_key)
    if digest is None:
        hasher = xxhash.xxh3_128()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
        digest = "file-xxh3:" + hasher.hexdigest()
        if len(_FILE_DIGESTS) > 4096:
            _FILE_DIGESTS.clear()
        if stat.S_ISREG(status.st_mode) and time.time_ns() - status.st_ctime_ns > _RACY_WINDOW_NS:
            _FILE_DIGESTS[memo_key] = digest
    return digest


def _audio_digest(audio: Audio) -> str:
    hasher = hashlib.sha256(f"samples:{audio.sample_rate_hz}:".encode())
    hasher.update(np.ascontiguousarray(audio.samples, dtype="<f4").tobytes())
    return hasher.hexdigest()


_DEFAULT_CACHES: dict[Path, ProsodyCache] = {}


def _cache_for(cache: ProsodyCache | str | Path | None) -> ProsodyCache:
    if isinstance(cache, ProsodyCache):
        return cache
    root = Path(cache) if cache is not None else default_cache_dir()
    if root not in _DEFAULT_CACHES:
        _DEFAULT_CACHES[root] = ProsodyCache(root)
    return _DEFAULT_CACHES[root]


def cached_prosody(
    source: str | os.PathLike | bytes | Audio,
    backend: str = "praat",
    params: ProsodyParams | None = None,
    cache: ProsodyCache | str | Path | None = None,
    sr: int = DEFAULT_SAMPLE_RATE_HZ,
) -> Prosody:
    """:func:`~affectgym.features.prosody.extract_prosody` through the on-disk cache.

    Args:
        source: A path, encoded bytes, or an :class:`Audio` (hashed by its samples).
        backend: ``"praat"`` or ``"librosa"``.
        params: Analysis parameters (part of the key).
        cache: A :class:`ProsodyCache`, a cache directory, or ``None`` for the default.
        sr: Sample rate the audio is analysed at.

    Returns:
        The prosody, from the cache when an intact entry exists.
    """
    params = params or ProsodyParams()
    store = _cache_for(cache)
    if isinstance(source, Audio):
        digest = _audio_digest(source)
    elif isinstance(source, (bytes, bytearray)):
        digest = "bytes:" + hashlib.sha256(source).hexdigest()
    else:
        path = Path(source)
        if not path.is_file():
            load_audio(path)  # raises AudioLoadError naming the file
        digest = _file_digest(path)
    key = store.key(digest, backend, params, sr)
    hit = store.get(key)
    if hit is not None:
        return hit
    audio = source if isinstance(source, Audio) else load_audio(source, sr=sr)
    prosody = extract_prosody(audio, backend=backend, params=params)
    store.put(key, prosody)
    return prosody


def _worker(
    source: Any, backend: str, params: ProsodyParams, cache_root: str | None, sr: int, skip_errors: bool = False
) -> Prosody | str:
    if skip_errors:
        try:
            return _worker(source, backend, params, cache_root, sr)
        except Exception as exc:  # on_error="skip": any file that fails is recorded, not fatal
            return f"{type(exc).__name__}: {str(exc).strip()}"
    if cache_root is None:
        audio = source if isinstance(source, Audio) else load_audio(source, sr=sr)
        return extract_prosody(audio, backend=backend, params=params)
    return cached_prosody(source, backend=backend, params=params, cache=cache_root, sr=sr)


def iter_extract(
    sources: Iterable[str | os.PathLike | Audio],
    n_jobs: int | None = None,
    backend: str = "praat",
    params: ProsodyParams | None = None,
    cache: bool | str | Path = True,
    sr: int = DEFAULT_SAMPLE_RATE_HZ,
    skip_errors: bool = False,
) -> Iterator[Prosody | str]:
    """Yield prosody for each source, in input order, computed in worker processes.

    Sources are consumed lazily and at most ``2 * n_jobs`` are in flight, so a corpus
    is never held in memory: each worker loads its own file.

    Args:
        sources: Paths (preferred: workers read them) or :class:`Audio` objects.
        n_jobs: Worker processes; ``None`` uses every CPU, ``1`` runs in this process.
        backend: ``"praat"`` or ``"librosa"``.
        params: Analysis parameters.
        cache: ``True`` for the default cache, a directory, or ``False`` for none.
        sr: Analysis sample rate.
        skip_errors: Yield ``"<type>: <message>"`` for a source that fails instead of raising.

    Yields:
        One :class:`Prosody` (or, with ``skip_errors``, error text) per source.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    params = params or ProsodyParams()
    if cache is True:
        cache_root: str | None = str(default_cache_dir())
    elif cache is False:
        cache_root = None
    else:
        cache_root = str(cache)
    n_jobs = n_jobs or os.cpu_count() or 1
    if n_jobs == 1:
        for source in sources:
            yield _worker(source, backend, params, cache_root, sr, skip_errors)
        return
    # spawn: workers start clean (no inherited threads or big parent heap)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=context) as pool:
        pending: list = []
        for source in sources:
            pending.append(pool.submit(_worker, source, backend, params, cache_root, sr, skip_errors))
            if len(pending) >= 2 * n_jobs:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


@dataclass(frozen=True)
class SkippedFile:
    """A source :func:`extract_many` skipped with ``on_error="skip"``.

    Attributes:
        index: Its position in the sources.
        source: The path (or ``repr`` of an :class:`Audio`).
        error: ``"<exception type>: <message>"``.
    """

    index: int
    source: str
    error: str


class ProsodyList(list):
    """What :func:`extract_many` returns: the :class:`Prosody` list, with ``skipped`` files beside it."""

    skipped: list[SkippedFile]


def extract_many(
    sources: Iterable[str | os.PathLike | Audio],
    n_jobs: int | None = None,
    backend: str = "praat",
    params: ProsodyParams | None = None,
    cache: bool | str | Path = True,
    progress: bool = True,
    sr: int = DEFAULT_SAMPLE_RATE_HZ,
    on_error: str = "raise",
) -> ProsodyList:
    """Extract prosody for a corpus in parallel processes, with a progress bar.

    Args:
        sources: Paths (or :class:`Audio` objects) of the clips.
        n_jobs: Worker processes; ``None`` uses every CPU, ``1`` runs in this process.
        backend: ``"praat"`` or ``"librosa"``.
        params: Analysis parameters.
        cache: ``True`` for the default cache, a directory, or ``False`` for none.
        progress: Show a tqdm progress bar on stderr.
        sr: Analysis sample rate.
        on_error: ``"raise"`` (the first file that cannot be read or measured stops the
            run) or ``"skip"`` (it is left out and recorded in ``.skipped``).

    Returns:
        One :class:`Prosody` per source, in input order, but for the skipped ones; the
        list's ``skipped`` holds a :class:`SkippedFile` for each (empty with ``"raise"``).

    Raises:
        ValueError: ``on_error`` is neither ``"raise"`` nor ``"skip"``.
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    sources = list(sources) if not isinstance(sources, list) else sources
    results = iter_extract(
        sources, n_jobs=n_jobs, backend=backend, params=params, cache=cache, sr=sr,
        skip_errors=on_error == "skip",
    )
    if progress:
        from tqdm.auto import tqdm

        results = tqdm(results, total=len(sources), desc=f"prosody ({backend})", unit="clip")
    out = ProsodyList()
    out.skipped = []
    for index, (source, result) in enumerate(zip(sources, results, strict=True)):
        if isinstance(result, str):
            out.skipped.append(SkippedFile(index, str(source) if not isinstance(source, Audio) else repr(source), result))
        else:
            out.append(result)
    return out
