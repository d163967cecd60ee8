"""The task format of affectgym/EmotionStyle-v0: how the requested emotion is shown and the reply read.

A :class:`StyleFormat` decides the system message and which prompts carry the longer preface
(the rest show only ``EMOTION: <label>`` above the instruction, EMOTRON's form). Every
non-empty message is the reply. Named formats: :data:`STYLE_FORMATS`.

>>> STYLE_FORMATS["tag-only"].has_preface("es001:joy")
False
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from affectgym.data.splits import stable_hash

if TYPE_CHECKING:
    from affectgym.envs.style_criteria import StyleScenario

DEFAULT_SYSTEM_MESSAGE = "You are a helpful assistant."
DEFAULT_PREFACE_FRACTION = 1 / 3  # share of scenarios whose prompt carries the longer preface
PREFACE_SALT = "emotion-style-preface-v1"


def style_prompt(scenario: StyleScenario) -> str:
    """The user message: ``EMOTION: <label>``, the optional preface, the instruction.

    >>> from affectgym.envs.style_criteria import StyleScenario
    >>> s = StyleScenario("es001:joy", "es001", "Explain tides.", "joy", "tides")
    >>> style_prompt(s)
    'EMOTION: joy\\n\\nExplain tides.'
    >>> style_prompt(StyleScenario("x:fear", "x", "Explain tides.", "fear", "tides", preface=True)).splitlines()[2][:40]
    'Answer the request below so that every s'
    """
    head = f"EMOTION: {scenario.emotion}"
    if not scenario.preface:
        return f"{head}\n\n{scenario.instruction}"
    preface = (
        f"Answer the request below so that every sentence carries the emotion {scenario.emotion}. "
        "Show it through tone, word choice and rhythm; never name the emotion or state how you feel. "
        "Write only the reply itself: no narration, no stage directions, no commentary about the reply."
    )
    return f"{head}\n\n{preface}\n\n{scenario.instruction}"


@dataclass(frozen=True)
class StyleFormat:
    """How EmotionStyle-v0 asks for a reply in an emotion.

    Args:
        system_message: The system prompt.
        preface_fraction: Share of the scenarios whose prompt carries the longer preface
            (which asks to show the emotion without naming it), chosen by a stable hash of
            the scenario id; in [0, 1].

    Raises:
        ValueError: A system message that is not text, or a fraction outside [0, 1].
    """

    system_message: str = DEFAULT_SYSTEM_MESSAGE
    preface_fraction: float = DEFAULT_PREFACE_FRACTION

    def __post_init__(self) -> None:
        if not isinstance(self.system_message, str):
            raise ValueError(f"task_format system_message must be text, got {type(self.system_message).__name__}")
        fraction = self.preface_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 <= fraction <= 1.0 \
                or math.isnan(fraction):
            raise ValueError(f"task_format preface_fraction must be a number in [0, 1], got {fraction!r}")

    def has_preface(self, scenario_id: str) -> bool:
        """Whether the prompt of ``scenario_id`` carries the longer preface (stable across runs)."""
        return stable_hash(scenario_id, salt=PREFACE_SALT) / 2**64 < self.preface_fraction

    def prompt(self, scenario: StyleScenario) -> str:
        """The user message (:func:`style_prompt`)."""
        return style_prompt(scenario)

    def parse(self, text: str) -> tuple[str, None]:
        """Every non-empty message is the reply (the env rejects empty ones before)."""
        return text, None


STYLE_FORMATS: dict[str, StyleFormat] = {
    "default": StyleFormat(),
    "preface": StyleFormat(preface_fraction=1.0),
    "tag-only": StyleFormat(preface_fraction=0.0),
}
"""Named formats: ``"default"`` (a third of the prompts carry the preface), ``"preface"``
(every prompt does), ``"tag-only"`` (none: the emotion tag alone, EMOTRON's prompt)."""


__all__ = ["DEFAULT_PREFACE_FRACTION", "DEFAULT_SYSTEM_MESSAGE", "STYLE_FORMATS", "StyleFormat", "style_prompt"]
