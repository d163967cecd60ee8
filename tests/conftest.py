"""Shared test setup: the toy env is importable and caches live in a temp folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AFFECTGYM_CACHE", str(tmp_path_factory.getbasetemp() / "affectgym-cache"))


@pytest.fixture
def drawn(monkeypatch):
    """Every matplotlib figure saved during the test, by file name."""
    from matplotlib.figure import Figure

    figures = {}
    save = Figure.savefig

    def record(self, path, *args, **kwargs):
        figures[getattr(path, "name", str(path))] = self
        return save(self, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return figures
