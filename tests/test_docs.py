"""The code in docs/ runs: every ```python block of every page, in order, in one module per page."""

from __future__ import annotations

import sys
import types

import pytest
from doc_blocks import DOCS, compile_block, python_blocks

PAGES = sorted(DOCS.glob("*.md"))


def test_the_plugin_guide_is_among_the_pages_and_has_code():
    assert DOCS / "plugins.md" in PAGES and len(python_blocks(DOCS / "plugins.md")) >= 5


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_python_block_of_the_page_runs(page, monkeypatch):
    # A real module (dataclasses and get_type_hints look a class's module up in sys.modules).
    module = types.ModuleType(f"docs_{page.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for line, code in python_blocks(page):
        exec(compile_block(page, line, code), module.__dict__)


def test_the_plugin_guide_has_two_example_envs_of_about_sixty_lines():
    examples = [code for _, code in python_blocks(DOCS / "plugins.md") if "(AffectEnv):" in code]
    assert len(examples) == 2
    assert all(len(code.splitlines()) <= 65 for code in examples), [len(c.splitlines()) for c in examples]
