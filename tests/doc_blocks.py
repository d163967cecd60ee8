"""The ```python blocks of the Markdown pages in docs/, for the tests that run them."""

from __future__ import annotations

import re
from pathlib import Path
from types import CodeType

DOCS = Path(__file__).resolve().parents[1] / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """Every ```python block of ``page``, in order: (line number of its first line of code, code)."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in _BLOCK.finditer(text)]


def compile_block(page: Path, line: int, code: str) -> CodeType:
    """``code`` compiled so that tracebacks point at its lines in ``page``."""
    return compile("\n" * (line - 1) + code, str(page), "exec", dont_inherit=True)
