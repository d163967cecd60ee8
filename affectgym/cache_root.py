"""Where affectgym keeps what it caches on disk: one folder, set by ``$AFFECTGYM_CACHE``.

Everything that caches lives below it: prosody entries (``prosody/``), judge verdicts
(``judge/``), converted models (``models/``).
"""

from __future__ import annotations

import os
from pathlib import Path

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
