"""The grammar of cheap edits: six operations that put material into a reply.

A reply is read as a *head* (markup blocks it opens with, e.g. ``<think>...</think>``), a
*body* of prose sentences, and a *tail* (the markup blocks it ends with, e.g. an answer
``<final>...</final>``). An :class:`Edit` changes the body only, so a reply's answer survives
every edit:

* ``append`` / ``prepend``: the pieces after the last sentence / before the first, or inside
  one sentence: before its closing punctuation / after its leading tag;
* ``interleave``: the pieces after every sentence;
* ``replace``: a sentence (its leading tag such as ``(JOY)`` kept), a word of one, or the whole body;
* ``wrap``: a markup template (``**{}**``, ``- {}``) around the whole body or around each sentence;
  a piece with no ``{}`` goes on both sides;
* ``repeat``: the body, or one of its sentences, said again; with a piece, the piece said again.

>>> edit = Edit("interleave", "interjections", ("Wow!", "Wow!"))
>>> apply_edit(edit, 'It rained. We stayed in.\\n<final>{"label": "x"}</final>')
'It rained. Wow! Wow! We stayed in. Wow! Wow!\\n<final>{"label": "x"}</final>'
>>> apply_edit(Edit("wrap", "markup", ("- {}",), where="each"), "It rained. We stayed in.")
'- It rained.\\n- We stayed in.'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The operations, in the order the search tries them.
OPERATIONS: tuple[str, ...] = ("append", "prepend", "interleave", "replace", "wrap", "repeat")
#: Where an operation acts: ``append`` and ``prepend`` around the body or inside one sentence;
#: ``replace`` on a sentence, a word or everything; ``wrap`` and ``repeat`` on the whole body or
#: each sentence (``repeat``: one sentence).
PLACES: dict[str, tuple[str, ...]] = {
    "append": ("body", "sentence"),
    "prepend": ("body", "sentence"),
    "replace": ("sentence", "word", "all"),
    "wrap": ("whole", "each"),
    "repeat": ("whole", "sentence"),
}

_BLOCK = re.compile(r"\s*<(\w+)[^>]*>.*?</\1>\s*", re.DOTALL)
_BLOCKS_ONLY = re.compile(r"(?:\s*<(\w+)[^>]*>.*?</\1>)+\s*", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LEADING_TAG = re.compile(r"^\s*(?:\([A-Za-z_ ]{1,20}\)|\[[A-Za-z_ ]{1,20}\])\s*")
_WORD = re.compile(r"[A-Za-z]{4,}")
_CLOSING = re.compile(r"[.!?]*$")


@dataclass(frozen=True)
class Edit:
    """One cheap edit.

    Attributes:
        operation: One of :data:`OPERATIONS`.
        kind: The kind of material the pieces are (the family the edit belongs to).
        pieces: What is put in: inserted in order at each place, or the template of ``wrap``.
        where: The place, for the operations of :data:`PLACES` (their first place by default).
        index: Which sentence or word (taken modulo their number).
        times: How often ``repeat`` says it again.
    """

    operation: str
    kind: str
    pieces: tuple[str, ...]
    where: str = ""
    index: int = 0
    times: int = 2

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise ValueError(f"operation must be one of {', '.join(OPERATIONS)}, got {self.operation!r}")

    def describe(self) -> str:
        """One line: the operation, its place and the pieces, e.g. ``interleave interjections: 'Wow!' 'Wow!'``."""
        place = f" ({self.where})" if self.where else ""
        shown = " ".join(repr(piece[:60]) for piece in self.pieces[:3]) + (" ..." if len(self.pieces) > 3 else "")
        times = f" x{self.times}" if self.operation == "repeat" else ""
        return f"{self.operation}{place}{times} {self.kind}: {shown}".rstrip(": ")


@dataclass(frozen=True)
class Parts:
    """A reply cut into head, body sentences and tail (see the module docstring)."""

    head: str
    sentences: tuple[str, ...]
    tail: str

    def join(self, sentences: list[str] | tuple[str, ...], separator: str = " ") -> str:
        """The reply with ``sentences`` as its body."""
        body = separator.join(s for s in sentences if s)
        if not body:
            return (self.head + self.tail).strip()
        tail = self.tail if self.tail[:1].isspace() or not self.tail else "\n" + self.tail
        return (self.head + body + tail).strip()


def parts_of(text: str) -> Parts:
    """``text`` as head, sentences and tail.

    >>> parts_of('<think>hm</think> Oh, great. Sure.\\n<final>{}</final>')
    Parts(head='<think>hm</think> ', sentences=('Oh, great.', 'Sure.'), tail='\\n<final>{}</final>')
    >>> parts_of('<final>{}</final>')
    Parts(head='', sentences=(), tail='<final>{}</final>')
    """
    head_end = 0
    while (match := _BLOCK.match(text, head_end)) and match.end() > head_end:
        head_end = match.end()
    if head_end >= len(text.rstrip()):  # nothing but blocks: they are the answer, the tail
        head_end = 0
    tail_start = len(text)
    for match in _BLOCK.finditer(text, head_end):
        if _BLOCKS_ONLY.fullmatch(text, match.start()):
            tail_start = match.start()
            break
    body = text[head_end:tail_start].strip()
    sentences = tuple(s.strip() for s in _SENTENCE_END.split(body) if s.strip()) if body else ()
    return Parts(text[:head_end], sentences, text[tail_start:])


def apply_edit(edit: Edit, text: str | None) -> str:
    """``text`` with ``edit`` applied; never raises (an edit with nowhere to act adds its pieces at the end).

    >>> apply_edit(Edit("replace", "echo", ("novel",), where="word", index=1), "(JOY) What happened then?")
    '(JOY) What novel then?'
    >>> apply_edit(Edit("append", "echo", ("the novel",), where="sentence", index=1), "(JOY) Oh. (NEUTRAL) What then?")
    '(JOY) Oh. (NEUTRAL) What then the novel?'
    >>> apply_edit(Edit("repeat", "repetition", ("",), times=3), "Stop.")
    'Stop. Stop. Stop.'
    """
    parts = parts_of(text or "")
    sentences = list(parts.sentences)
    pieces = [piece for piece in edit.pieces]
    inserted = " ".join(p for p in pieces if "{}" not in p) or " ".join(p.replace("{}", sentences[0] if sentences else "") for p in pieces)
    operation, where = edit.operation, edit.where or PLACES.get(edit.operation, ("",))[0]
    if operation in ("append", "prepend") and where == "sentence" and sentences:
        return parts.join(_inside(sentences, inserted, at_end=operation == "append", index=edit.index))
    if operation == "append" or (not sentences and operation != "wrap"):
        return parts.join([*sentences, inserted])
    if operation == "prepend":
        return parts.join([inserted, *sentences])
    if operation == "interleave":
        return parts.join([item for sentence in sentences for item in (sentence, inserted)])
    if operation == "replace":
        return parts.join(_replaced(sentences, inserted, where, edit.index))
    if operation == "wrap":
        template = pieces[0] if pieces and "{}" in pieces[0] else f"{inserted} {{}} {inserted}"
        if where == "each" and sentences:
            return parts.join([template.replace("{}", s) for s in sentences], separator="\n")
        return parts.join([template.replace("{}", " ".join(sentences))])
    # repeat
    said = inserted if edit.kind != "repetition" else (" ".join(sentences) if where == "whole" else sentences[edit.index % len(sentences)])
    return parts.join([*sentences, *[said] * max(1, edit.times - (edit.kind == "repetition"))])


def _inside(sentences: list[str], inserted: str, *, at_end: bool, index: int) -> list[str]:
    """``sentences`` with ``inserted`` inside one: before its closing punctuation, or after its leading tag."""
    position = index % len(sentences)
    sentence = sentences[position]
    if at_end:
        closing = _CLOSING.search(sentence).start()
        sentence = f"{sentence[:closing].rstrip()} {inserted}{sentence[closing:]}"
    else:
        tag = _LEADING_TAG.match(sentence)
        start = tag.end() if tag else 0
        sentence = f"{sentence[:start]}{inserted} {sentence[start:]}"
    return [*sentences[:position], sentence, *sentences[position + 1:]]


def _replaced(sentences: list[str], inserted: str, where: str, index: int) -> list[str]:
    if where == "all":
        return [inserted]
    position = index % len(sentences)
    sentence = sentences[position]
    if where == "word":
        words = list(_WORD.finditer(sentence))
        if words:
            word = words[index % len(words)]
            sentence = sentence[:word.start()] + inserted + sentence[word.end():]
        else:
            sentence = f"{sentence} {inserted}"
    else:
        tag = _LEADING_TAG.match(sentence)
        sentence = (tag.group(0) if tag else "") + inserted
    return [*sentences[:position], sentence, *sentences[position + 1:]]


def apply_edits(edits: tuple[Edit, ...], text: str | None) -> str:
    """``text`` with each edit applied in turn."""
    for edit in edits:
        text = apply_edit(edit, text)
    return text or ""


__all__ = ["OPERATIONS", "PLACES", "Edit", "Parts", "apply_edit", "apply_edits", "parts_of"]
