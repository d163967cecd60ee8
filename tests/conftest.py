"""Shared test setup: the toy env is importable and caches live in a temp folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AFFECTGYM_CACHE", str(tmp_path_factory.getbasetemp() / "affectgym-cache"))
