"""Tools an agent can call: declaration by decorator, JSON schema, argument validation.

A tool is an environment method marked with :func:`tool`. Its OpenAI function schema comes
from the method's type hints and its Google-style docstring (the summary line and the
``Args:`` section), so the schema an agent sees and the code that runs cannot drift apart.
Arguments are validated against the signature before the call, and a tool never receives
anything it did not declare.

>>> class Demo:
...     @tool
...     def get_window(self, start_s: float, end_s: float = 1.0) -> str:
...         '''Describe a time window of the clip.
...
...         Args:
...             start_s: Window start, in seconds.
...             end_s: Window end, in seconds.
...         '''
...         return f"{start_s}-{end_s}"
>>> spec = tool_specs(Demo)["get_window"]
>>> spec.schema["function"]["parameters"]["required"]
['start_s']
>>> spec.validate({"start_s": 1})
{'start_s': 1.0}
>>> spec.validate({"start_s": "soon"})
Traceback (most recent call last):
...
affectgym.envs.tools.ToolArgumentError: get_window: argument 'start_s' must be a number, got str 'soon'
"""

from __future__ import annotations

import inspect
import math
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

_TOOL_MARK = "__affectgym_tool__"


class ToolArgumentError(ValueError):
    """Arguments sent to a tool do not match its declaration."""


def tool(method: Callable[..., str]) -> Callable[..., str]:
    """Mark an environment method as a tool an agent may call.

    The method takes keyword arguments with type hints (``str``, ``int``, ``float``,
    ``bool``, ``Literal[...]``, ``list[...]`` or ``X | None``) and returns the text the agent
    sees. Its docstring's first line becomes the tool description; the ``Args:`` section
    describes the parameters.
    """
    setattr(method, _TOOL_MARK, True)
    return method


@dataclass(frozen=True)
class ToolSpec:
    """A declared tool: its name, OpenAI schema and signature.

    Attributes:
        name: Tool name, the method's name.
        schema: OpenAI function schema ``{"type": "function", "function": {...}}``.
        signature: The method's signature without ``self``.
        hints: Resolved type hint of each parameter.
    """

    name: str
    schema: dict[str, Any]
    signature: inspect.Signature
    hints: dict[str, Any]

    def validate(self, arguments: Any) -> dict[str, Any]:
        """Check ``arguments`` against the declaration; return them coerced (int -> float).

        Raises:
            ToolArgumentError: Not an object, an unknown or missing argument, or a wrong type.
        """
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(
                f"{self.name}: arguments must be a JSON object, got {type(arguments).__name__}"
            )
        params = self.signature.parameters
        unknown = sorted(set(arguments) - set(params))
        if unknown:
            accepted = ", ".join(params) or "none"
            raise ToolArgumentError(
                f"{self.name}: unknown argument(s) {', '.join(map(repr, unknown))}; accepted: {accepted}"
            )
        missing = [
            name for name, p in params.items() if p.default is inspect.Parameter.empty and name not in arguments
        ]
        if missing:
            raise ToolArgumentError(f"{self.name}: missing required argument(s) {', '.join(map(repr, missing))}")
        return {name: _check_value(self.name, name, value, self.hints[name]) for name, value in arguments.items()}


def tool_specs(cls_or_obj: Any) -> dict[str, ToolSpec]:
    """Every tool declared on a class (or an instance's class), in definition order."""
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    cached = cls.__dict__.get("_affectgym_tool_specs")
    if cached is not None:
        return cached
    specs: dict[str, ToolSpec] = {}
    seen: set[str] = set()
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            if callable(member) and getattr(member, _TOOL_MARK, False):
                seen.add(name)
    for name in sorted(seen, key=lambda n: _definition_order(cls, n)):
        specs[name] = _build_spec(name, getattr(cls, name))
    cls._affectgym_tool_specs = specs
    return specs


def _definition_order(cls: type, name: str) -> tuple[int, int]:
    method = getattr(cls, name)
    code = getattr(method, "__code__", None)
    return (0, code.co_firstlineno) if code else (1, 0)


def _build_spec(name: str, method: Callable[..., Any]) -> ToolSpec:
    signature = inspect.signature(method)
    params = [p for p in signature.parameters.values() if p.name != "self"]
    for p in params:
        if p.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            raise TypeError(f"tool {name}: parameter {p.name!r} must be a plain keyword parameter")
    hints = typing.get_type_hints(method)
    summary, arg_docs = _parse_docstring(inspect.getdoc(method) or "")
    if not summary:
        raise TypeError(f"tool {name} needs a docstring: its first line is the tool description")
    properties = {}
    for p in params:
        if p.name not in hints:
            raise TypeError(f"tool {name}: parameter {p.name!r} needs a type hint")
        prop = _json_type(hints[p.name], f"{name}.{p.name}")
        if p.name in arg_docs:
            prop["description"] = arg_docs[p.name]
        properties[p.name] = prop
    schema = {
        "type": "function",
        "function": {
            "name": name,
            "description": summary,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": [p.name for p in params if p.default is inspect.Parameter.empty],
            },
        },
    }
    return ToolSpec(
        name=name,
        schema=schema,
        signature=signature.replace(parameters=params),
        hints={p.name: hints[p.name] for p in params},
    )


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    lines = doc.splitlines()
    summary = lines[0].strip() if lines else ""
    args: dict[str, str] = {}
    in_args = False
    current = None
    for line in lines[1:]:
        if re.match(r"^\s*(Args|Arguments|Parameters):\s*$", line):
            in_args = True
            continue
        if in_args and re.match(r"^\S", line):
            in_args = False
        if not in_args:
            continue
        match = re.match(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if match and (current is None or len(line) - len(line.lstrip()) <= 4):
            current = match.group(1)
            args[current] = match.group(2).strip()
        elif current and line.strip():
            args[current] += " " + line.strip()
    return summary, args


def _json_type(hint: Any, where: str) -> dict[str, Any]:
    origin = get_origin(hint)
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if origin is Literal:
        values = list(get_args(hint))
        return {"type": _literal_type(values), "enum": values}
    if origin in (list, tuple) and hint is not list:
        (item,) = get_args(hint)[:1] or (str,)
        return {"type": "array", "items": _json_type(item, where)}
    if _optional_inner(hint) is not None:
        return {**_json_type(_optional_inner(hint), where), "nullable": True}
    raise TypeError(f"tool parameter {where}: unsupported type hint {hint!r}")


def _literal_type(values: list[Any]) -> str:
    if all(isinstance(v, str) for v in values):
        return "string"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    raise TypeError(f"Literal values must be all str or all int, got {values!r}")


def _optional_inner(hint: Any) -> Any:
    args = get_args(hint)
    if type(None) in args and len(args) == 2:
        return next(a for a in args if a is not type(None))
    return None


def _check_value(tool_name: str, name: str, value: Any, hint: Any) -> Any:
    def fail(expected: str) -> ToolArgumentError:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return ToolArgumentError(
            f"{tool_name}: argument {name!r} must be {expected}, got {type(value).__name__} {shown}"
        )

    inner = _optional_inner(hint)
    if inner is not None:
        return None if value is None else _check_value(tool_name, name, value, inner)
    origin = get_origin(hint)
    if hint is str:
        if not isinstance(value, str):
            raise fail("a string")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise fail("true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail("an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise fail("a number")
        return float(value)
    if origin is Literal:
        allowed = get_args(hint)
        if value not in allowed or isinstance(value, bool):
            raise fail("one of " + ", ".join(map(repr, allowed)))
        return value
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise fail("a list")
        (item,) = get_args(hint)[:1] or (str,)
        return [_check_value(tool_name, f"{name}[{i}]", v, item) for i, v in enumerate(value)]
    raise fail(f"a value of type {hint!r}")


__all__ = ["ToolArgumentError", "ToolSpec", "tool", "tool_specs"]
