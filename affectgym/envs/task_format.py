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

import dataclasses
import warnings
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


def with_former_arguments(
    value: Any, kind: type[Format], named: Mapping[str, Format], former: Mapping[str, Any], env: str
) -> Format:
    """The format ``task_format=value`` names, with the fields an env took as arguments before.

    A former argument still works for one release, with a FutureWarning that gives the new
    form; given beside ``task_format`` it is refused (which would win is not obvious).

    Args:
        value: The env's ``task_format`` argument.
        kind: The env's format class.
        named: The env's named formats.
        former: The former arguments given (``None`` = not given), by field name.
        env: The env's class name, for the message.

    Raises:
        ValueError: A former argument beside ``task_format``, or a bad value.
    """
    given = {name: v for name, v in former.items() if v is not None}
    if given and value is not None:
        raise ValueError(f"pass {sorted(given)} inside task_format, not beside it")
    task_format = coerce_task_format(value, kind, named)
    if not given:
        return task_format
    task_format = dataclasses.replace(task_format, **given)  # type: ignore[type-var]
    arguments = ", ".join(f"{name}={v!r}" for name, v in given.items())
    warnings.warn(
        f"{env}({arguments}) is deprecated and will be removed in the next release; pass "
        f"task_format={given!r} (or a {kind.__name__}) instead", FutureWarning, stacklevel=3)
    return task_format


__all__ = ["coerce_task_format", "with_former_arguments"]
