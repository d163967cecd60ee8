"""Reading JSON Lines files that an outsider writes: each value with its line number, errors named by line.

>>> json_lines('{"a": 1}\\n\\n[2]\\n', "rows.jsonl", ValueError)
[(1, {'a': 1}), (3, [2])]
>>> json_lines('{"a": 1}\\n{oops\\n', "rows.jsonl", ValueError)
Traceback (most recent call last):
ValueError: rows.jsonl:2: not JSON (Expecting property name enclosed in double quotes)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def json_lines(text: str, source: str | Path, error: type[Exception]) -> list[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of ``text``.

    Raises:
        error: The first line that is not JSON, as ``"<source>:<line>: not JSON (<reason>)"``.
    """
    return list(iter_json_lines(text.splitlines(), source, error))


def iter_json_lines(lines: Iterable[str], source: str | Path, error: type[Exception]) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line, read as they come (an open file streams).

    Raises:
        error: The first line that is not JSON, as ``"<source>:<line>: not JSON (<reason>)"``.
    """
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{source}:{number}: not JSON ({exc.msg})") from None
        yield number, value


__all__ = ["iter_json_lines", "json_lines"]
