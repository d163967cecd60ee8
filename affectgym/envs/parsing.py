r"""Reading tool calls out of an agent's message.

Accepted forms, all of which may appear several times in one message (executed in order):

* Hermes / Qwen tags: ``<tool_call>{"name": "get_transcript", "arguments": {}}</tool_call>``
* a bare JSON object (or list of them) with ``name`` and ``arguments``
* the OpenAI shape ``{"type": "function", "function": {"name": ..., "arguments": ...}}``

``arguments`` may be an object or a JSON string holding one (as OpenAI sends it).

>>> parse_tool_calls('<tool_call>{"name": "get_transcript", "arguments": {}}</tool_call>').calls
[ToolCall(name='get_transcript', arguments={}, call_id='call_0')]
>>> parse_tool_calls('{"type": "function", "function": {"name": "f", "arguments": "{\\"x\\": 1}"}}').calls
[ToolCall(name='f', arguments={'x': 1}, call_id='call_0')]
>>> parse_tool_calls('I think it is sincere.').calls
[]
>>> parse_tool_calls('<tool_call>{"name": oops}</tool_call>').errors[0][:40]
'tool call 1 is not valid JSON (Expecting'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TOOL_CALL_FORMAT = '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>'

#: What :func:`last_json_object` says when a message holds no ``{...}`` span at all.
NO_JSON_OBJECT = "no JSON object found"

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    """One parsed tool call.

    Attributes:
        name: Name of the tool.
        arguments: Decoded arguments (normally a dict; validated later against the tool).
        call_id: Identifier that links the call to its ``tool`` message.
    """

    name: str
    arguments: Any
    call_id: str


@dataclass(frozen=True)
class ParsedToolCalls:
    """Tool calls found in a message, and why any others could not be read.

    Attributes:
        calls: The calls that were read, in message order.
        errors: One message per tool call that could not be read.
    """

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """Whether the message tried to call a tool at all."""
        return bool(self.calls or self.errors)


def parse_tool_calls(text: str) -> ParsedToolCalls:
    """Extract every tool call from ``text``; never raises on any string."""
    if "<tool_call>" in text:
        bodies = [m.group(1) for m in _TAGGED.finditer(text)]
        closed = text.count("</tool_call>")
        result = _decode_bodies(bodies, tagged=True)
        if closed < len(bodies):
            result.errors.append(f"a <tool_call> tag is not closed; write {TOOL_CALL_FORMAT}")
        return result
    stripped = _strip_fence(text.strip())
    if not stripped.startswith(("{", "[")):
        return ParsedToolCalls()
    try:
        decoded = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        return ParsedToolCalls()
    items = decoded if isinstance(decoded, list) else [decoded]
    if not items or not all(_looks_like_call(item) for item in items):
        return ParsedToolCalls()
    return _decode_items(items)


def _strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text


def _looks_like_call(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        return True
    return isinstance(item.get("name"), str) and ("arguments" in item or "parameters" in item)


def _decode_bodies(bodies: list[str], tagged: bool) -> ParsedToolCalls:
    items: list[Any] = []
    errors: list[str] = []
    for index, body in enumerate(bodies, start=1):
        try:
            decoded = json.loads(_strip_fence(body.strip()))
        except (json.JSONDecodeError, RecursionError) as exc:
            errors.append(f"tool call {index} is not valid JSON ({exc}); write {TOOL_CALL_FORMAT}")
            continue
        items.extend(decoded if isinstance(decoded, list) else [decoded])
    result = _decode_items(items)
    result.errors[:0] = errors
    return result


def _decode_items(items: list[Any]) -> ParsedToolCalls:
    calls: list[ToolCall] = []
    errors: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            errors.append(f"a tool call must be a JSON object, got {type(item).__name__}; write {TOOL_CALL_FORMAT}")
            continue
        if item.get("type") == "function" and isinstance(item.get("function"), dict):
            item = item["function"]
        name = item.get("name")
        if not isinstance(name, str) or not name:
            errors.append(f"a tool call needs a string \"name\"; write {TOOL_CALL_FORMAT}")
            continue
        arguments = item.get("arguments", item.get("parameters", {}))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (json.JSONDecodeError, RecursionError) as exc:
                errors.append(f"arguments of {name!r} are a string that is not valid JSON ({exc})")
                continue
        if arguments is None:
            arguments = {}
        calls.append(ToolCall(name=name, arguments=arguments, call_id=f"call_{len(calls)}"))
    return ParsedToolCalls(calls=calls, errors=errors)


def last_json_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The answer object of a message: its last top-level JSON object.

    Every env that reads a JSON answer reads it with this function, by one rule: the
    *last* object counts. An agent reasons before it commits, and on the way it may quote
    the format, sketch a draft or restate a tool's output as JSON ("it could be
    ``{"label": "sincere"}``, but the pitch says..."); the object it ends on is its answer.
    Objects nested inside another are part of it, not candidates of their own. Code
    fences and prose around the object are ignored.

    Args:
        text: The agent's message.

    Returns:
        ``(object, None)``, or ``(None, why)``: ``"no JSON object found"``, or, when the
        text holds a ``{...}`` span that is not valid JSON, ``"the JSON object does not
        parse (<reason> at character <n>)"`` (``n`` counted from its opening brace).

    >>> last_json_object('Reasoning... {"a": 1} then {"label": "sincere", "confidence": 0.7}')
    ({'label': 'sincere', 'confidence': 0.7}, None)
    >>> last_json_object('```json\\n{"joy": 1, "mood": {"calm": 0.5}}\\n```')
    ({'joy': 1, 'mood': {'calm': 0.5}}, None)
    >>> last_json_object("no json here"), last_json_object('{"joy": 1')
    ((None, 'no JSON object found'), (None, 'no JSON object found'))
    >>> last_json_object('{"joy": 1,}')[1]
    'the JSON object does not parse (Expecting property name enclosed in double quotes at character 10)'
    """
    decoder = json.JSONDecoder()
    last_close = text.rfind("}")
    found = None
    broken: str | None = None
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            if position < last_close:
                broken = f"{exc.msg} at character {exc.pos - position}"
            position = text.find("{", position + 1)
            continue
        except RecursionError:
            position = text.find("{", position + 1)
            continue
        found = value
        position = text.find("{", end)
    if found is not None:
        return found, None
    if broken is not None:
        return None, f"the JSON object does not parse ({broken})"
    return None, NO_JSON_OBJECT


__all__ = ["NO_JSON_OBJECT", "TOOL_CALL_FORMAT", "ParsedToolCalls", "ToolCall", "last_json_object", "parse_tool_calls"]
