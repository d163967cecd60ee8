"""A toy environment for testing the core contract before real environments exist.

The agent reads a short note with its one tool and answers whether its writer is happy or
sad, as ``<answer>happy</answer>``. Not registered in the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from affectgym.envs.core import AffectEnv, tool
from affectgym.rewards.rubric import Criterion, Rubric


@dataclass(frozen=True)
class Note:
    id: str
    text: str
    label: str


NOTES = [
    Note("n01", "The sun came out and my sister called.", "happy"),
    Note("n02", "The train left without me again.", "sad"),
    Note("n03", "I found the letter I thought was lost.", "happy"),
    Note("n04", "Nobody came to the reading.", "sad"),
    Note("n05", "The test results were fine.", "happy"),
    Note("n06", "The old dog could not climb the stairs today.", "sad"),
]

_ANSWER = re.compile(r"<answer>\s*(happy|sad)\s*</answer>", re.IGNORECASE)


def parse_answer(reply: str | None) -> str | None:
    """The label inside ``<answer>...</answer>``, or None.

    >>> parse_answer("I think <answer>Happy</answer>")
    'happy'
    """
    match = _ANSWER.search(reply or "")
    return match.group(1).lower() if match else None


def correct(note: Note, reply: str | None, trace) -> float:
    """1 when the answer names the gold label.

    >>> correct(NOTES[0], "<answer>happy</answer>", [])
    1.0
    """
    return float(parse_answer(reply) == note.label)


def read_first(note: Note, reply: str | None, trace) -> float:
    """1 when the note was read with the tool before answering.

    >>> read_first(NOTES[0], "<answer>happy</answer>", [{"type": "tool_call", "name": "read_note", "ok": True}])
    1.0
    """
    return float(any(e.get("type") == "tool_call" and e.get("ok") for e in trace))


class ToyMoodEnv(AffectEnv):
    """Say whether the writer of a short note is happy or sad."""

    label_set = ("happy", "sad")

    def __init__(self, split: str = "all", **kwargs):
        super().__init__(split=split, max_turns=kwargs.pop("max_turns", 4), **kwargs)

    def _load_scenarios(self):
        return NOTES

    def system_prompt(self, scenario: Note) -> str:
        return "Read the note with read_note, then answer <answer>happy</answer> or <answer>sad</answer>."

    def first_observation(self, scenario: Note) -> str:
        return "A note is waiting for you."

    def parse_final(self, text: str):
        label = parse_answer(text)
        if label is None:
            return None, "write your answer as <answer>happy</answer> or <answer>sad</answer>"
        return label, None

    def build_rubric(self) -> Rubric:
        return Rubric([Criterion("correct", correct, 0.8), Criterion("read_first", read_first, 0.2)])

    @tool
    def read_note(self) -> str:
        """Read the note."""
        return self.scenario.text

    def reference_answer(self, scenario: Note):
        return f"<answer>{scenario.label}</answer>", [
            {"type": "tool_call", "name": "read_note", "arguments": {}, "output": scenario.text, "ok": True}
        ]

    def canaries(self, scenario: Note):
        wrong = "sad" if scenario.label == "happy" else "happy"
        return {
            "wrong_label": (f"<answer>{wrong}</answer>", self.reference_answer(scenario)[1]),
            "no_tool": (f"<answer>{scenario.label}</answer>", []),
            "both_labels": ("<answer>happy</answer><answer>sad</answer>" if scenario.label == "sad" else "<answer>sad</answer> <answer>happy</answer>", []),
            "unanswered": (None, []),
        }
