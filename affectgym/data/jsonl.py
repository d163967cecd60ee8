"""Reading JSON Lines files that an outsider writes: each value with its line number, errors named by line.

>>> json_lines('{"a": 1}\\n\\n[2]\\n', "rows.jsonl", ValueError)
[(1, {'a': 1}), (3, [2])]
>>> json_lines('{"a": 1}\\n{oops\\n', "rows.jsonl", ValueError)
Traceback (most recent call last):
ValueError: rows.jsonl:2: not JSON (Expecting property name enclosed in double quotes)
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
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


def string_rows(
    text: str,
    source: str | Path,
    keys: Sequence[str],
    error: type[Exception],
    allowed: Mapping[str, Collection[str]] | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("<source>:<line>", row)`` of every line of ``text``, each an object with a non-empty string under every key.

    Args:
        text: The file's text.
        source: The file, as the messages name it.
        keys: The keys every row must have.
        error: The exception raised.
        allowed: For some keys, the values they may take.

    Raises:
        error: A line that is not JSON, not such an object, or has a value ``allowed`` does not list.

    >>> list(string_rows('{"id": "a", "emotion": "joy"}', "r.jsonl", ("id", "emotion"), ValueError))
    [('r.jsonl:1', {'id': 'a', 'emotion': 'joy'})]
    >>> list(string_rows('{"id": "a"}', "r.jsonl", ("id", "emotion"), ValueError))
    Traceback (most recent call last):
    ValueError: r.jsonl:1: expected an object with non-empty strings id and emotion
    """
    named = ", ".join(keys[:-1]) + f" and {keys[-1]}" if len(keys) > 1 else keys[0]
    for number, row in json_lines(text, source, error):
        where = f"{source}:{number}"
        if not isinstance(row, dict) or not all(isinstance(row.get(key), str) and row[key].strip() for key in keys):
            raise error(f"{where}: expected an object with non-empty strings {named}")
        for key, values in (allowed or {}).items():
            if row[key] not in values:
                raise error(f"{where}: {key} {row[key]!r} is not one of {list(values)}")
        yield where, row


__all__ = ["iter_json_lines", "json_lines", "string_rows"]
