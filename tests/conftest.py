"""Shared test setup: the toy env is importable, caches live in a temp folder, and property tests have no time limit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# Property tests pin behaviour, not speed: hypothesis' 200 ms per-example deadline trips on a loaded machine.
settings.register_profile("affectgym", deadline=None)
settings.load_profile("affectgym")


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
