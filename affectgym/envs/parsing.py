r"""Reading tool calls out of an agent's message.

Accepted forms, all of which may appear several times in one message (executed in order):

* Hermes / Qwen tags: ``<tool_call>{"name": "get_transcript", "arguments": {}}</tool_call>``
* a bare JSON object (or list of them) with ``name`` and ``arguments``
* the OpenAI shape ``{"type": "function", "function": {"name": ..., "arguments": ...}}``

``arguments`` may be an object or a JSON string holding one (as OpenAI sends it).

Every function here takes any string and runs in time linear in its length: the tags
are found with ``str.find``, JSON nested deeper than :data:`MAX_JSON_DEPTH` levels is
refused before it is decoded (Python's decoder recurses), and integers longer than
:data:`MAX_INTEGER_DIGITS` digits are refused rather than converted (``int(str)`` is
quadratic, and refuses more than 4,300 digits with a ``ValueError``).

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

import numpy as np

TOOL_CALL_FORMAT = '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>'

#: What :func:`last_json_object` says when a message holds no ``{...}`` span at all.
NO_JSON_OBJECT = "no JSON object found"

MAX_JSON_DEPTH = 100  # deepest nesting of objects and lists read from a message
MAX_INTEGER_DIGITS = 100  # longest JSON integer read from a message, in digits

_OPEN_TAG = "<tool_call>"
_CLOSE_TAG = "</tool_call>"
_FENCE = "```"
# What a scan of JSON stops at: a run of one bracket, or a quote.
_JSON_TOKENS = re.compile(r'\{+|\}+|\[+|\]+|"')
# A JSON string's rest after its opening quote; possessive, so a missing closing quote costs one pass.
_STRING_REST = re.compile(r'(?:[^"\\]|\\.)*+"', re.DOTALL)
# How a JSON object starts: a key or its end (a span that does not is not decoded).
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
# A {...} with no braces or brackets inside but in its strings: a whole span in one match.
_FLAT_OBJECT = re.compile(r'\{(?:[^{}\[\]"]++|"(?:[^"\\]|\\.)*+")*+\}', re.DOTALL)


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
        after: The text after the last closed ``</tool_call>`` tag (where an agent that
            goes on writing puts an answer it gave before reading the tool outputs).
    """

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    after: str = ""

    @property
    def found(self) -> bool:
        """Whether the message tried to call a tool at all."""
        return bool(self.calls or self.errors)


def parse_tool_calls(text: str) -> ParsedToolCalls:
    """Extract every tool call from ``text``; never raises on any string."""
    if _OPEN_TAG in text:
        bodies, after = _tagged_bodies(text)
        result = _decode_bodies(bodies)
        if text.count(_CLOSE_TAG) < len(bodies):
            result.errors.append(f"a <tool_call> tag is not closed; write {TOOL_CALL_FORMAT}")
        return ParsedToolCalls(result.calls, result.errors, after)
    stripped = _strip_fence(text.strip())
    if not stripped.startswith(("{", "[")):
        return ParsedToolCalls()
    decoded, _ = loads_json(stripped)
    if decoded is None:
        return ParsedToolCalls()
    items = decoded if isinstance(decoded, list) else [decoded]
    if not items or not all(_looks_like_call(item) for item in items):
        return ParsedToolCalls()
    return _decode_items(items)


def loads_json(text: str) -> tuple[Any, str | None]:
    """Decode a JSON text of a message: ``(value, None)``, or ``(None, why it was not read)``.

    Like :func:`json.loads`, but any string is answered in linear time and nothing is
    raised: nesting deeper than :data:`MAX_JSON_DEPTH` and integers longer than
    :data:`MAX_INTEGER_DIGITS` digits are refused, and say so.

    >>> loads_json('{"x": [1, 2.5]}')
    ({'x': [1, 2.5]}, None)
    >>> loads_json("[" * 5_000 + "]" * 5_000)[1]
    'it is nested deeper than 100 levels'
    >>> loads_json('{"x": ' + "9" * 5_000 + "}")[1]
    'it holds an integer of 5,000 digits (at most 100 are read)'
    >>> loads_json("{oops}")[1]
    'Expecting property name enclosed in double quotes at character 1'
    """
    if _nests_deeper(text, MAX_JSON_DEPTH):
        return None, f"it is nested deeper than {MAX_JSON_DEPTH} levels"
    return _decode(text)


def _nests_deeper(text: str, limit: int) -> bool:
    """Whether objects and lists nest more than ``limit`` deep in ``text`` read as JSON (brackets in strings do not count)."""
    if text.count("{") + text.count("[") <= limit or _bracket_depth_bound(text) <= limit:
        return False
    depth = 0
    position = 0
    while (match := _JSON_TOKENS.search(text, position)) is not None:
        run = match.group()
        position = match.end()
        if run == '"':
            rest = _STRING_REST.match(text, position)
            if rest is None:
                return False  # the rest is an unterminated string: the decoder stops there
            position = rest.end()
        elif run[0] in "{[":
            depth += len(run)
            if depth > limit:
                return True
        else:
            depth = max(0, depth - len(run))
    return False


def _bracket_depth_bound(text: str) -> int:
    """How deep brackets nest in ``text`` counting those in strings too: at least the JSON depth, in C time."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    steps = np.isin(codes, _OPENING_CODES).astype(np.int32) - np.isin(codes, _CLOSING_CODES)
    depth = np.cumsum(steps)
    # A closing bracket with nothing open closes nothing, as in the exact scan.
    return int((depth - np.minimum(np.minimum.accumulate(depth), 0)).max(initial=0))


_OPENING_CODES = np.array([ord("{"), ord("[")], dtype=np.uint32)
_CLOSING_CODES = np.array([ord("}"), ord("]")], dtype=np.uint32)


class _IntegerTooLong(ValueError):
    """A JSON integer longer than :data:`MAX_INTEGER_DIGITS` digits."""


def _parse_int(digits: str) -> int:
    length = len(digits) - digits.startswith("-")
    if length > MAX_INTEGER_DIGITS:
        raise _IntegerTooLong(f"it holds an integer of {length:,} digits (at most {MAX_INTEGER_DIGITS} are read)")
    return int(digits)


_DECODER = json.JSONDecoder(parse_int=_parse_int)


def _decode(text: str) -> tuple[Any, str | None]:
    """``json.loads`` that raises nothing, for a text already checked for depth."""
    try:
        return _DECODER.decode(text), None
    except _IntegerTooLong as exc:
        return None, str(exc)
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at character {exc.pos}"
    except (ValueError, RecursionError) as exc:  # e.g. a stack already near the recursion limit
        return None, f"{type(exc).__name__}: {exc}"


def _tagged_bodies(text: str) -> tuple[list[str], str]:
    """The body of each ``<tool_call>`` tag (to its closing tag, or to the end) and the text after the last closed one."""
    bodies: list[str] = []
    after = ""
    position = text.find(_OPEN_TAG)
    while position != -1:
        start = position + len(_OPEN_TAG)
        end = text.find(_CLOSE_TAG, start)
        if end == -1:
            bodies.append(text[start:])
            break
        bodies.append(text[start:end])
        after = text[end + len(_CLOSE_TAG) :]
        position = text.find(_OPEN_TAG, end + len(_CLOSE_TAG))
    return bodies, after if position == -1 else ""


def _strip_fence(text: str) -> str:
    """The inside of a code fence (an optional ``json`` after the opening backticks), else ``text``."""
    if len(text) < 2 * len(_FENCE) or not (text.startswith(_FENCE) and text.endswith(_FENCE)):
        return text
    return text[len(_FENCE) : -len(_FENCE)].removeprefix("json").strip()


def _looks_like_call(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        return True
    return isinstance(item.get("name"), str) and ("arguments" in item or "parameters" in item)


def _decode_bodies(bodies: list[str]) -> ParsedToolCalls:
    items: list[Any] = []
    errors: list[str] = []
    for index, body in enumerate(bodies, start=1):
        decoded, problem = loads_json(_strip_fence(body.strip()))
        if problem is not None:
            errors.append(f"tool call {index} is not valid JSON ({problem}); write {TOOL_CALL_FORMAT}")
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
            arguments, problem = loads_json(arguments) if arguments.strip() else ({}, None)
            if problem is not None:
                errors.append(f"arguments of {name!r} are a string that is not valid JSON ({problem})")
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
    Objects nested inside another are part of it, not candidates of their own, unless
    the outer ``{...}`` does not parse: then the objects inside it are candidates. Inside
    braces, braces in JSON strings do not count (a string that never ends hides the rest
    of the message); a ``{`` that is never closed is prose. Code fences and prose around
    the object are ignored. The message is scanned once, from the end the spans are tried
    until one parses, and a span nested deeper than :data:`MAX_JSON_DEPTH` levels is
    refused: linear time on any text.

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
    >>> last_json_object('a stray { then {"joy": "}", "calm": 1}')
    ({'joy': '}', 'calm': 1}, None)
    >>> last_json_object('{"anger": ' + "[" * 3_000 + "]" * 3_000 + "}")[1]
    'the JSON object does not parse (it is nested deeper than 100 levels)'
    """
    spans = _object_spans(text)
    # The last candidate wins, so the spans are tried from the end: the first that parses
    # is the answer. A span that does not parse is not one object: its inner spans are tried.
    pending = list(spans)
    while pending:
        span = pending.pop()
        value = _span_object(text, span)
        if value is not None:
            return value, None
        pending.extend(span.children)
    if not spans:
        return None, NO_JSON_OBJECT
    last = spans[-1]
    while last.children:
        last = last.children[-1]
    return None, f"the JSON object does not parse ({_span_problem(text, last)})"


def _span_object(text: str, span: _Span) -> dict[str, Any] | None:
    """The object ``span`` holds, or ``None`` when it does not parse (cheap checks first)."""
    if span.peak - span.level >= MAX_JSON_DEPTH or _OBJECT_START.match(text, span.start) is None:
        return None
    return _decode(text[span.start : span.end])[0]


def _span_problem(text: str, span: _Span) -> str:
    """Why ``span`` does not parse (positions counted from its opening brace)."""
    if span.peak - span.level >= MAX_JSON_DEPTH:
        return f"it is nested deeper than {MAX_JSON_DEPTH} levels"
    return _decode(text[span.start : span.end])[1] or ""


def tagged_blocks(text: str, tag: str) -> list[tuple[int, int, str]]:
    """Every closed ``<tag>...</tag>`` block of ``text`` (tag in any case), in order, in linear time.

    A block ends at the first closing tag after its opening tag (so blocks never nest);
    an opening tag with no closing tag after it starts no block.

    Args:
        text: The agent's message.
        tag: The tag name, e.g. ``"final"``.

    Returns:
        ``(start, end, inside)`` per block: ``text[start:end]`` is the block with its tags.

    >>> tagged_blocks("a <final>x</final> b <FINAL>y</final> <final>z", "final")
    [(2, 18, 'x'), (21, 37, 'y')]
    """
    opening = re.compile(re.escape(f"<{tag}>"), re.IGNORECASE)
    closing = re.compile(re.escape(f"</{tag}>"), re.IGNORECASE)
    blocks = []
    position = 0
    while (start := opening.search(text, position)) is not None:
        end = closing.search(text, start.end())
        if end is None:
            break
        blocks.append((start.start(), end.end(), text[start.end() : end.start()]))
        position = end.end()
    return blocks


class _Span:
    """A balanced ``{...}`` of a message: where it starts and ends, how deep it nests, the spans inside it."""

    __slots__ = ("start", "end", "level", "peak", "children")

    def __init__(self, start: int, level: int):
        self.start = start
        self.end = -1
        self.level = level  # objects and lists open at its brace, itself included
        self.peak = level  # the most open inside it
        self.children: list[_Span] = []


def _object_spans(text: str) -> list[_Span]:
    """The top-level balanced ``{...}`` spans of ``text``, in one pass.

    Inside a span, braces and brackets in JSON strings do not count; outside every span
    the text is prose (its quotes open no string). A ``{`` that is never closed is prose
    too: the spans closed inside it stand on their own.
    """
    top: list[_Span] = []
    # Open braces as runs: [first brace, braces still open, level of the first, children
    # and peak of the innermost]. A run of n braces is one entry, so "{" * n costs one step.
    stack: list[list[Any]] = []
    level = 0
    position = 0
    search = _JSON_TOKENS.search
    while True:
        if not stack:
            position = text.find("{", position)
            if position == -1:
                break
            flat = _FLAT_OBJECT.match(text, position)
            if flat is not None:
                span = _Span(position, 1)
                span.end = position = flat.end()
                top.append(span)
                continue
        match = search(text, position)
        if match is None:
            break
        run = match.group()
        position = match.end()
        if run == '"':
            rest = _STRING_REST.match(text, position)
            if rest is None:
                break
            position = rest.end()
        elif run[0] == "{":
            stack.append([match.start(), len(run), level + 1, [], level + len(run)])
            level += len(run)
        elif run[0] == "[":
            level += len(run)
            stack[-1][4] = max(stack[-1][4], level)
        elif run[0] == "]":
            entry = stack[-1]
            level = max(entry[2] + entry[1] - 1, level - len(run))
        else:
            for end in range(match.start() + 1, position + 1):
                entry = stack[-1]
                inner = entry[1] - 1
                span = _Span(entry[0] + inner, entry[2] + inner)
                span.end, span.peak, span.children = end, entry[4], entry[3]
                level = span.level - 1
                if inner:
                    entry[1], entry[3] = inner, [span]
                    continue
                stack.pop()
                if stack:
                    stack[-1][3].append(span)
                    stack[-1][4] = max(stack[-1][4], span.peak)
                else:
                    top.append(span)
                    position = end
                    break
    while stack:
        unclosed = stack.pop()
        (stack[-1][3] if stack else top).extend(unclosed[3])
    return top


__all__ = [
    "MAX_INTEGER_DIGITS",
    "MAX_JSON_DEPTH",
    "NO_JSON_OBJECT",
    "TOOL_CALL_FORMAT",
    "ParsedToolCalls",
    "ToolCall",
    "last_json_object",
    "loads_json",
    "parse_tool_calls",
    "tagged_blocks",
]
