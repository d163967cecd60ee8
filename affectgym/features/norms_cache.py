"""Corpus norms computed once per corpus and kept on disk, so a first tool call costs what any call costs.

A speech env bands each clip against the norms of its corpus (or of the clip's speaker),
which need the prosody of every clip of that pool. :func:`cached_norms` keeps them in
``$AFFECTGYM_CACHE/norms``, a :class:`~affectgym.cache_root.DiskStore` (diskcache), under a
key that hashes the pool (each clip's path, size and modification time), the analysis
backend and parameters, and the package version: a changed file, a clip added or removed,
another backend, and the norms are computed again. ``affectgym features precompute`` fills
the prosody cache and these norms ahead of a run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from affectgym import _version
from affectgym.cache_root import DiskStore, cache_root
from affectgym.features.prosody import ProsodyParams
from affectgym.features.render import ProsodyNorms

NORMS_MAX_BYTES = 64 * 1024 * 1024  # a pool's norms are ~1 KB: room for tens of thousands of pools

log = logging.getLogger(__name__)

_STORES: dict[Path, DiskStore] = {}


def norms_key(audio_paths: Sequence[str], backend: str, params: ProsodyParams, name: str) -> str:
    """The key of a pool's norms: its files (path, size, modification time), the analysis and the name."""
    files = []
    for path in sorted(audio_paths):
        try:
            status = os.stat(path)
            files.append((path, status.st_size, status.st_mtime_ns))
        except OSError:
            files.append((path, None, None))
    parts = {"files": files, "backend": backend, "params": params.to_dict(), "name": name,
             "version": _version.__version__}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def norms_store(root: str | Path | None = None) -> DiskStore:
    """The store of corpus norms in ``root`` (default ``$AFFECTGYM_CACHE/norms``), one per folder and process."""
    folder = Path(root) if root is not None else cache_root() / "norms"
    if folder not in _STORES:
        _STORES[folder] = DiskStore(folder, max_bytes=NORMS_MAX_BYTES, what="corpus norms cache", log=log,
                                    consequence="the norms are computed and used but not stored")
    return _STORES[folder]


def cached_norms(key: str, compute: Callable[[], ProsodyNorms], root: str | Path | None = None) -> ProsodyNorms:
    """The norms stored under ``key``, else ``compute()``'s, stored for next time.

    An unreadable or corrupted entry is computed again and replaced; a cache that cannot
    be written is logged once and the norms are still returned.
    """
    store = norms_store(root)
    stored = store.get(key)
    if stored is not None:
        try:
            entry = json.loads(stored)
            return ProsodyNorms(name=entry["name"], stats={k: (float(m), float(s)) for k, (m, s) in entry["stats"].items()})
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning("corpus norms %s in %s unreadable (%s); computing them again", key[:12], store.folder, error)
    norms = compute()
    store.set(key, json.dumps({"name": norms.name, "stats": {k: list(v) for k, v in norms.stats.items()}}))
    return norms


__all__ = ["cached_norms", "norms_key", "norms_store"]
