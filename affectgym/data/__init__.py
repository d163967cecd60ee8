"""Scenario sources (embedded, local path, hub) and the embedded assets.

Every problem with a dataset's files is a :class:`DatasetError` (a ``ValueError``) whose
message names the file and what is expected of it.
"""

from __future__ import annotations

from affectgym.data.speech_sources import DatasetError

__all__ = ["DatasetError"]
