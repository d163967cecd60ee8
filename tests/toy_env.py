"""A toy environment for testing the core contract: is the writer of a short note happy or sad?"""

from __future__ import annotations

import re
from dataclasses import dataclass

from affectgym.envs.core import AffectEnv, tool
from affectgym.rewards.rubric import Criterion, Reply, Rubric


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



def parse_answer(text: str | None) -> str | None:
    """The label inside the first ``<answer>...</answer>``, or None."""
    match = re.search(r"<answer>\s*(happy|sad)\s*</answer>", text or "", re.IGNORECASE)
    return match.group(1).lower() if match else None


def correct(note: Note, reply: Reply, trace) -> float:
    """1 when the parsed answer is the gold label."""
    return float(reply.answer == note.label)


def read_first(note: Note, reply: Reply, trace) -> float:
    """1 when the note was read with the tool before answering."""
    return float(any(e["type"] == "tool_call" and e["ok"] for e in trace))


class ToyMoodEnv(AffectEnv):
    """Say whether the writer of a short note is happy or sad."""

    label_set = ("happy", "sad")

    def __init__(self, split: str = "all", max_turns: int = 4, **kwargs):
        super().__init__(split=split, max_turns=max_turns, **kwargs)

    def load_scenarios(self):
        return NOTES

    def system_prompt(self, scenario):
        return "Read the note with read_note, then answer <answer>happy</answer> or <answer>sad</answer>."

    def first_observation(self, scenario):
        return "A note is waiting for you."

    def parse_final(self, text):
        label = parse_answer(text)
        return (label, None) if label else (None, "write your answer as <answer>happy</answer> or <answer>sad</answer>")

    def build_rubric(self):
        return Rubric([Criterion("correct", correct, 0.8), Criterion("read_first", read_first, 0.2)])

    @tool
    def read_note(self) -> str:
        """Read the note."""
        return self.scenario.text

    def reference_answer(self, scenario):
        return f"<answer>{scenario.label}</answer>", self.flat_trace(scenario)

    def canaries(self, scenario):
        wrong = "sad" if scenario.label == "happy" else "happy"
        return {
            "wrong_label": (f"<answer>{wrong}</answer>", self.flat_trace(scenario)),
            "no_tool": (f"<answer>{scenario.label}</answer>", []),
            "both_labels": (f"<answer>{wrong}</answer> <answer>{scenario.label}</answer>", []),
            "unanswered": (None, []),
        }
