"""Reading an env's ``task_format=`` argument: a format object, a name, a mapping of its fields.

A task format is how an env writes its prompts and reads its answers (verifiers calls the
reading half a parser). Each env has its own kind, a frozen dataclass whose fields are the
choices a recipe may make: :class:`~affectgym.envs.label_format.LabelFormat` (the speech
envs), :class:`~affectgym.envs.style_format.StyleFormat` (EmotionStyle-v0),
:class:`~affectgym.envs.dialogue_format.DialogueFormat` (EmpatheticDialogue-v0) and
:class:`~affectgym.envs.state_text_format.StateTextFormat` (EmotionStateText-v0). The env
keeps its scenarios, tools and rubric; the format decides the words.

Formats travel as names or mappings where a Python object cannot (YAML configs,
``--env-kwargs``, a served env's JSON); :func:`coerce_task_format` reads all three forms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

Format = TypeVar("Format")


def coerce_task_format(value: Any, kind: type[Format], named: Mapping[str, Format]) -> Format:
    """A ``kind`` from itself, a name of ``named``, a mapping of its fields, or ``None`` (the default).

    Args:
        value: What the env was given as ``task_format``.
        kind: The env's format class (a dataclass whose fields all have defaults).
        named: The env's named formats.

    Returns:
        The format.

    Raises:
        ValueError: An unknown name, unknown fields, a field's bad value, or another type.

    >>> from affectgym.envs.style_format import STYLE_FORMATS, StyleFormat
    >>> coerce_task_format({"preface_fraction": 1}, StyleFormat, STYLE_FORMATS) == STYLE_FORMATS["preface"]
    True
    >>> coerce_task_format("loud", StyleFormat, STYLE_FORMATS)
    Traceback (most recent call last):
    ...
    ValueError: unknown task_format 'loud'; named formats: default, preface, tag-only
    """
    if value is None:
        return kind()
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        if value not in named:
            raise ValueError(f"unknown task_format {value!r}; named formats: {', '.join(named)}")
        return named[value]
    known = [f.name for f in fields(kind)]  # type: ignore[arg-type]
    if isinstance(value, Mapping):
        unknown = sorted(map(str, set(value) - set(known)))
        if unknown:
            raise ValueError(f"unknown task_format fields {unknown}; accepted: {known}")
        return kind(**value)
    raise ValueError(
        f"task_format must be a {kind.__name__}, one of {', '.join(named)} or a mapping of its fields "
        f"{known}, got {type(value).__name__}"
    )


__all__ = ["coerce_task_format"]
