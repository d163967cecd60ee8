"""Corpus norms computed once per corpus and kept on disk, so a first tool call costs what any call costs.

A speech env bands each clip against the norms of its corpus (or of the clip's speaker),
which need the prosody of every clip of that pool. :func:`cached_norms` keeps them in
``$AFFECTGYM_CACHE/norms/<key>.json``, the key a hash of the pool (each clip's path, size
and modification time), the analysis backend and parameters, and the package version: a
changed file, a clip added or removed, another backend, and the norms are computed again.
``affectgym features precompute`` fills the prosody cache and these norms ahead of a run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from affectgym import _version
from affectgym.cache_root import cache_root
from affectgym.features.prosody import ProsodyParams
from affectgym.features.render import ProsodyNorms

log = logging.getLogger(__name__)


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


def cached_norms(key: str, compute: Callable[[], ProsodyNorms], root: str | Path | None = None) -> ProsodyNorms:
    """The norms stored under ``key``, else ``compute()``'s, stored for next time (atomically).

    An unreadable or corrupted entry is computed again; a cache that cannot be written is
    logged once and the norms are still returned.
    """
    path = (Path(root) if root is not None else cache_root() / "norms") / f"{key}.json"
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        return ProsodyNorms(name=stored["name"], stats={k: (float(m), float(s)) for k, (m, s) in stored["stats"].items()})
    except (FileNotFoundError, NotADirectoryError):
        pass
    except (OSError, ValueError, KeyError, TypeError) as error:
        log.warning("corpus norms %s unreadable (%s); computing them again", path, error)
    norms = compute()
    temporary = path.parent / f".{key}.{uuid.uuid4().hex}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps({"name": norms.name, "stats": {k: list(v) for k, v in norms.stats.items()}}),
                             encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        log.warning("corpus norms not cached in %s (%s)", path.parent, error)
        with contextlib.suppress(OSError):
            temporary.unlink()
    return norms


__all__ = ["cached_norms", "norms_key"]
