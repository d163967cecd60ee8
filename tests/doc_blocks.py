"""The ```python blocks of README.md and the pages of the docs site (docs/**/*.md), for the tests that run them.

A block preceded, on the line just above its fence, by ``<!-- not run: REASON -->`` is
left out of :func:`python_blocks` and listed by :func:`not_run_blocks` with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import CodeType

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: README.md and every page of the docs site, its sub-folders included.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
_BLOCK = re.compile(r"^(?:<!-- not run:(?P<reason>[^\n]*?)-->\n)?```python\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(page: Path) -> list[tuple[int, str, str | None]]:
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start("code")) + 1, match.group("code"),
         None if match.group("reason") is None else match.group("reason").strip())
        for match in _BLOCK.finditer(text)
    ]


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """Every ```python block of ``page`` that runs, in order: (line number of its first line of code, code)."""
    return [(line, code) for line, code, reason in _blocks(page) if reason is None]


def not_run_blocks(page: Path) -> list[tuple[int, str, str]]:
    """The blocks of ``page`` marked ``<!-- not run: REASON -->``: (line, code, reason)."""
    return [(line, code, reason) for line, code, reason in _blocks(page) if reason is not None]


def compile_block(page: Path, line: int, code: str) -> CodeType:
    """``code`` compiled so that tracebacks point at its lines in ``page``."""
    return compile("\n" * (line - 1) + code, str(page), "exec", dont_inherit=True)


def page_name(page: Path) -> str:
    """The page's path from the repository root (``README.md``, ``docs/envs/sarcasm.md``): a test id."""
    return page.relative_to(ROOT).as_posix()


def marked_text(start: str, end: str) -> tuple[Path, str]:
    """The one page holding the marker line ``start``, and its text between ``start`` and ``end``."""
    holders = [page for page in PAGES if start in page.read_text(encoding="utf-8")]
    assert len(holders) == 1, f"{start.strip()!r} should be in exactly one page, found in {[page_name(p) for p in holders]}"
    text = holders[0].read_text(encoding="utf-8")
    assert end in text.split(start, 1)[1], f"{page_name(holders[0])} lost the end marker {end.strip()!r}"
    return holders[0], text.split(start, 1)[1].split(end, 1)[0]
