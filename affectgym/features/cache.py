"""Content-addressed on-disk cache of prosody, and parallel extraction over a corpus.

An entry's key hashes the audio content (the file's bytes, or the samples and rate),
the backend, the analysis parameters, the target sample rate and
the package version; change any of them and the entry is simply not found.
Entries live under ``$AFFECTGYM_CACHE`` (default ``~/.cache/affectgym``) ``/prosody``, in a
:class:`~affectgym.cache_root.DiskStore` (diskcache).

Safe under concurrency: the store is one SQLite database that threads and processes
write at once, each entry in one transaction, so readers see either nothing or a whole
entry. Each entry starts with a hash of its payload and records its own key; a mismatch
(a corrupted entry, or one copied to another key) or an unparsable entry counts as a
miss, and the entry is recomputed and rewritten. A database file replaced by something
that is not a regular file (a folder, a FIFO), or a database SQLite cannot read, is
rebuilt empty; nothing but regular files is read. The cache is bounded in bytes: past
the bound the least recently used entries (a hit refreshes an entry) are evicted as new
ones are written.

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
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash
from cachetools import LRUCache

from affectgym import _version
from affectgym.cache_root import DiskStore, cache_root
from affectgym.features.audio import DEFAULT_SAMPLE_RATE_HZ, Audio, load_audio
from affectgym.features.prosody import Prosody, ProsodyParams, extract_prosody

CACHE_FORMAT = 4  # bump when the entry layout changes
DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # 512 MiB of entries, ~10 KB-100 KB each
_MEMO_ENTRIES = 1024  # in-process results kept in front of the disk
_FILE_DIGEST_ENTRIES = 4096  # files whose digest is remembered in process
_RACY_WINDOW_NS = 2_000_000_000  # files changed this recently are not memoised (ns)

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """Where prosody entries go: ``$AFFECTGYM_CACHE/prosody`` (default ``~/.cache/affectgym``).

    Returns:
        The directory (not created).
    """
    return cache_root() / "prosody"


class ProsodyCache:
    """A folder of prosody entries, addressed by content.

    Args:
        root: Cache directory; :func:`default_cache_dir` if ``None``.
        max_bytes: Size bound; the least recently used entries are evicted beyond it.
    """

    def __init__(self, root: str | Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root = Path(root) if root is not None else default_cache_dir()
        self.max_bytes = int(max_bytes)
        self._store = DiskStore(
            self.root, max_bytes=self.max_bytes, what="prosody cache", log=log,
            consequence="features are computed and used but not stored. Set AFFECTGYM_CACHE to a writable "
                        "folder to keep them between runs.",
        )
        self._memo: LRUCache[str, Prosody] = LRUCache(maxsize=_MEMO_ENTRIES)

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

    def get(self, key: str) -> Prosody | None:
        """The cached prosody for ``key``, or ``None`` (missing or corrupted entry).

        Args:
            key: From :meth:`key`.

        Returns:
            The entry, or ``None``; a corrupted entry is deleted.
        """
        if key in self._memo:
            return self._memo[key]
        raw = self._store.get(key)
        if raw is None:
            return None
        prosody = _decode_entry(raw, key) if isinstance(raw, bytes) else None
        if prosody is None:
            self._store.delete(key)
            return None
        self._memo[key] = prosody
        return prosody

    def put(self, key: str, prosody: Prosody) -> bool:
        """Store an entry (evicting the least recently used past the bound).

        An entry that cannot be written (read-only folder, full disk) is kept in the
        in-process memo only; the first such failure of this cache logs one warning
        naming the folder and the reason.

        Args:
            key: From :meth:`key`.
            prosody: The value.

        Returns:
            Whether the entry reached the disk.
        """
        self._memo[key] = prosody
        return self._store.set(key, _encode_entry(prosody, key))

    def clear_memo(self) -> None:
        """Forget the in-process memo (the disk entries stay)."""
        self._memo.clear()

    def keys(self) -> list[str]:
        """Keys of the entries on disk, in the store's key order."""
        return self._store.keys()

    def volume_bytes(self) -> int:
        """Bytes the entries take on disk, as the size bound counts them."""
        return self._store.volume_bytes()

    def evict(self) -> int:
        """Evict the least recently used entries until the cache is within ``max_bytes`` (writes do it as they go).

        Returns:
            Number of entries evicted.
        """
        return self._store.cull()


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


_FILE_DIGESTS: LRUCache[tuple[str, int, int, int, int, int], str] = LRUCache(maxsize=_FILE_DIGEST_ENTRIES)
_FILE_DIGESTS_LOCK = threading.Lock()  # an LRUCache reorders itself on every read


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
    with _FILE_DIGESTS_LOCK:
        digest = _FILE_DIGESTS.get(memo_key)
    if digest is None:
        hasher = xxhash.xxh3_128()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
        digest = "file-xxh3:" + hasher.hexdigest()
        if stat.S_ISREG(status.st_mode) and time.time_ns() - status.st_ctime_ns > _RACY_WINDOW_NS:
            with _FILE_DIGESTS_LOCK:
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
