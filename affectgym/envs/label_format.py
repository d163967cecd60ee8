"""The task format of a labelling env: how the answer is asked for and read, and what a flat prompt holds.

A :class:`LabelFormat` is a plain value an env is composed with
(``affectgym.make("affectgym/Sarcasm-v0", task_format=SHORT_YESNO)``): the env keeps its
scenarios, tools and rubric, the format decides

* ``answer``: ``"json"``, ``<final>{"label": ..., "confidence": 0.0-1.0}</final>`` (the last
  JSON object of the message is read too); ``"word"``, the label word alone; ``"yesno"``,
  yes or no to "is the line <first label>?" (two labels only);
* ``flat_prompt``: what a flattened single-shot prompt holds, ``"full"`` (every tool's
  output) or ``"compact"`` (the transcript and the one-line delivery summary, ~130 tokens).

A format given by name or as a mapping (``{"answer": "yesno", "flat_prompt": "compact"}``,
the form a YAML config or a served env's JSON carries) is read by :meth:`LabelFormat.coerce`.

>>> SHORT_YESNO.parse("No.", ["sarcastic", "sincere"])
({'label': 'sincere', 'confidence': 1.0}, None)
>>> LabelFormat.coerce({"answer": "word"}).answer_text("sincere", 1.0, ["sarcastic", "sincere"])
'sincere'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from affectgym.envs.parsing import last_json_object, tagged_blocks
from affectgym.envs.task_format import coerce_task_format

ANSWER_FORMATS = ("json", "word", "yesno")
FLAT_PROMPTS = ("full", "compact")


@dataclass(frozen=True)
class LabelFormat:
    """How a labelling task asks for its answer and reads it, and the form of its flat prompt.

    Args:
        answer: ``"json"``, ``"word"`` or ``"yesno"`` (see the module docstring).
        flat_prompt: ``"full"`` or ``"compact"``.

    Raises:
        ValueError: An unknown answer format or flat prompt form.
    """

    answer: str = "json"
    flat_prompt: str = "full"

    def __post_init__(self) -> None:
        if self.answer not in ANSWER_FORMATS:
            raise ValueError(f"task_format answer must be one of {', '.join(ANSWER_FORMATS)}, got {self.answer!r}")
        if self.flat_prompt not in FLAT_PROMPTS:
            raise ValueError(
                f"task_format flat_prompt must be one of {', '.join(FLAT_PROMPTS)}, got {self.flat_prompt!r}"
            )

    @property
    def states_confidence(self) -> bool:
        """Whether an answer states its confidence (the JSON answer); a one-word answer's 1.0 is no statement.

        >>> LabelFormat().states_confidence, SHORT_YESNO.states_confidence
        (True, False)
        """
        return self.answer == "json"

    @classmethod
    def coerce(cls, value: LabelFormat | str | Mapping[str, Any] | None) -> LabelFormat:
        """A format from itself, a name of :data:`LABEL_FORMATS`, a mapping of its fields, or ``None`` (the default).

        Raises:
            ValueError: An unknown name, unknown fields, or a value of another type.

        >>> LabelFormat.coerce("short-yesno") == SHORT_YESNO
        True
        >>> LabelFormat.coerce({"answer": "maybe"})
        Traceback (most recent call last):
        ...
        ValueError: task_format answer must be one of json, word, yesno, got 'maybe'
        """
        return coerce_task_format(value, cls, LABEL_FORMATS)

    def as_dict(self) -> dict[str, str]:
        """The format as the mapping :meth:`coerce` reads (for configs and JSON)."""
        return {"answer": self.answer, "flat_prompt": self.flat_prompt}

    def check_labels(self, labels: Sequence[str]) -> None:
        """Raise ``ValueError`` when the format cannot ask for these labels: two that read as one
        (:func:`label_key`), or yes/no without exactly two."""
        keys: dict[str, list[str]] = {}
        for label in labels:
            keys.setdefault(label_key(label), []).append(label)
        same = [names for names in keys.values() if len(names) > 1]
        if same:
            raise ValueError(f"labels {same} differ only in case or spacing, and answers are read without either; "
                             "rename or merge them (e.g. one DIR/<label>/ folder each)")
        if self.answer == "yesno" and len(labels) != 2:
            raise ValueError(f"task_format answer='yesno' needs exactly two labels, this dataset has {list(labels)}")

    def parse(self, text: str | None, labels: Sequence[str]) -> tuple[dict[str, Any] | None, str | None]:
        """``(answer, None)`` with ``label`` and ``confidence``, or ``(None, what was wrong and what is accepted)``."""
        if self.answer == "json":
            return parse_label_answer(text, labels)
        return parse_label_word(text, answer_words(labels, self.answer))

    def answer_text(self, label: str, confidence: float, labels: Sequence[str]) -> str:
        """The final answer that names ``label`` in this format."""
        if self.answer == "yesno":
            return "Yes" if label == labels[0] else "No"
        if self.answer == "word":
            return label
        return final_answer(label, confidence)

    def closing_question(self, labels: Sequence[str]) -> str | None:
        """The question a one-word answer replies to, ``None`` for the JSON answer.

        >>> SHORT_YESNO.closing_question(["sarcastic", "sincere"])
        'Is the line sarcastic? Answer yes or no.'
        """
        if self.answer == "yesno":
            return f"Is the line {labels[0]}? Answer yes or no."
        if self.answer == "word":
            return f"Is the line {' or '.join(labels)}? Answer with one word."
        return None

    def final_instruction(self, labels: Sequence[str]) -> str:
        """How the interactive system prompt asks for the final answer."""
        question = self.closing_question(labels)
        if question is not None:
            return "When you are sure, answer in a message of its own, with no tool call: " + question
        return (
            f'When you are sure, answer with <final>{{"label": "{labels[0]}", '
            '"confidence": 0.0-1.0}</final>, your confidence being the probability that your label is right.'
        )

    def flat_system_prompt(self, task: str, labels: Sequence[str]) -> str:
        """The single-shot system prompt of ``task`` (a one-word answer's question comes after the measurements)."""
        measured = (
            "a summary of the delivery compared with typical speech"
            if self.flat_prompt == "compact"
            else "measurements of the delivery (prosody features and pitch contour)"
        )
        if self.answer != "json":
            return f"{task} You get the line and {measured}."
        quoted = ", ".join(f'"{label}"' for label in labels)
        return (
            f"{task} Labels: {quoted}.\nYou get the transcript and {measured}. "
            "The delivery often matters more than the words.\n"
            "Reason in 50-150 words over the words and the prosody, then end with exactly one JSON object: "
            f'{{"label": "{labels[0]}", "confidence": 0.0-1.0}}.'
        )


#: The formats a config may name: the JSON answer (the default), the one-word ones, and the
#: short CPU-training form (yes/no after the compact prompt).
LABEL_FORMATS: dict[str, LabelFormat] = {
    "json": LabelFormat(),
    "word": LabelFormat(answer="word"),
    "yesno": LabelFormat(answer="yesno"),
    "short-yesno": LabelFormat(answer="yesno", flat_prompt="compact"),
}
#: Yes or no to "is the line <first label>?", after the compact flat prompt (the CPU recipes' form).
SHORT_YESNO = LABEL_FORMATS["short-yesno"]


# ----------------------------------------------------------------------------- answers
def label_key(label: str) -> str:
    """How answers are matched to labels: case-folded, runs of white space as one space.

    >>> label_key("  Very  Angry "), label_key("Sad") == label_key("sad")
    ('very angry', True)
    """
    return " ".join(label.split()).casefold()


def parse_label_answer(text: str | None, labels: Sequence[str]) -> tuple[dict[str, Any] | None, str | None]:
    """Read ``{"label": ..., "confidence": ...}`` from ``<final>...</final>``, else from the message.

    The answer is the last JSON object of the block (or of the message), by the rule of
    :func:`~affectgym.envs.parsing.last_json_object`.

    Returns:
        ``(answer, None)`` with the label as the dataset names it (matched by :func:`label_key`)
        and confidence a float in ``[0, 1]``, or ``(None, what was wrong and what is accepted)``.

    >>> parse_label_answer('Rising pitch. <final>{"label": "Sarcastic", "confidence": 0.8}</final>', ["sarcastic", "sincere"])
    ({'label': 'sarcastic', 'confidence': 0.8}, None)
    >>> parse_label_answer('{"label": "sincere", "confidence": 1.7}', ["sarcastic", "sincere"])[1]
    'confidence must be a number between 0 and 1, got 1.7'
    """
    accepted = f'accepted: <final>{{"label": one of {list(labels)}, "confidence": 0.0-1.0}}</final>'
    if not text:
        return None, f"no final answer; {accepted}"
    blocks = tagged_blocks(text, "final")
    payload, _ = last_json_object(blocks[0][2] if blocks else text)
    if payload is None:
        return None, f"no JSON answer found; {accepted}"
    by_key = {label_key(name): name for name in labels}
    label = payload.get("label")
    if not isinstance(label, str) or label_key(label) not in by_key:
        return None, f"label must be one of {list(labels)}, got {label!r}"
    confidence = payload.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        return None, f"confidence must be a number between 0 and 1, got {confidence!r}"
    return {"label": by_key[label_key(label)], "confidence": float(confidence)}, None


def answer_words(labels: Sequence[str], answer: str = "word") -> dict[str, str]:
    """The words a one-word answer may be (as :func:`label_key` writes them), each with the label it means.

    >>> answer_words(["sarcastic", "sincere"], "yesno")
    {'sarcastic': 'sarcastic', 'sincere': 'sincere', 'yes': 'sarcastic', 'no': 'sincere'}
    >>> answer_words(["Angry", "Sad"])
    {'angry': 'Angry', 'sad': 'Sad'}
    """
    words = {label_key(label): label for label in labels}
    if answer == "yesno":
        first, second = labels
        words.update({"yes": first, "no": second})
    return words


def parse_label_word(text: str | None, words: Mapping[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    """Read a one-word answer: the first of ``words`` (see :func:`answer_words`) the reply says, as a whole word.

    A one-word answer commits fully, so its confidence is 1.0.

    Returns:
        ``(answer, None)`` with the label the word means, or ``(None, what is accepted)``.

    >>> parse_label_word("Sarcastic.", answer_words(["sarcastic", "sincere"]))
    ({'label': 'sarcastic', 'confidence': 1.0}, None)
    >>> parse_label_word("No.", answer_words(["sarcastic", "sincere"], "yesno"))
    ({'label': 'sincere', 'confidence': 1.0}, None)
    >>> parse_label_word("insincere", answer_words(["sarcastic", "sincere"]))[1]
    "no answer word found; accepted: one of ['sarcastic', 'sincere']"
    """
    if text:
        pattern = r"\b(" + "|".join(r"\s+".join(map(re.escape, word.split())) for word in words) + r")\b"
        found = re.search(pattern, text, re.IGNORECASE)
        if found:
            return {"label": words[label_key(found.group(1))], "confidence": 1.0}, None
    return None, f"no answer word found; accepted: one of {list(words)}"


def final_answer(label: str, confidence: float) -> str:
    """The final-answer text of the ``"json"`` answer format.

    >>> final_answer("sincere", 0.75)
    '<final>{"label": "sincere", "confidence": 0.75}</final>'
    """
    return f'<final>{{"label": "{label}", "confidence": {round(float(confidence), 4)}}}</final>'


__all__ = [
    "ANSWER_FORMATS",
    "FLAT_PROMPTS",
    "LABEL_FORMATS",
    "SHORT_YESNO",
    "LabelFormat",
    "answer_words",
    "final_answer",
    "label_key",
    "parse_label_answer",
    "parse_label_word",
]
