"""The task format of affectgym/EmotionStateText-v0: how the state is shown and the action read.

A :class:`StateTextFormat` writes the system prompt (the task, the dynamics in words, the
reward, the reply format) and each turn's user message (the scene, a situation line, the
current and previous state and the target, each emotion in numbers and words); the reply is
one JSON object with the seven intensities (:func:`parse_emotion_action`). Named formats:
:data:`STATE_TEXT_FORMATS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from affectgym.emotions import EMOTIONS
from affectgym.envs.parsing import NO_JSON_OBJECT, last_json_object

_INTENSITY_WORDS = (
    (0.1, "none"),
    (0.3, "mild"),
    (0.6, "moderate"),
    (0.85, "strong"),
    (1.01, "intense"),
)


def intensity_word(value: float) -> str:
    """Name an intensity in [0, 1].

    >>> [intensity_word(v) for v in (0.05, 0.2, 0.5, 0.7, 0.9)]
    ['none', 'mild', 'moderate', 'strong', 'intense']
    """
    return next(word for limit, word in _INTENSITY_WORDS if value < limit)


def render_emotions(values: Sequence[float]) -> str:
    """Render seven intensities in words and numbers, in the fixed emotion order.

    >>> render_emotions([0.9, 0, 0, 0.05, 0.3, 0, 0.5])[:48]
    'anger 0.90 (intense), disgust 0.00 (none), fear '
    """
    return ", ".join(
        f"{name} {float(v):.2f} ({intensity_word(float(v))})"
        for name, v in zip(EMOTIONS, values, strict=True)
    )


def parse_emotion_action(text: str) -> tuple[np.ndarray | None, str | None]:
    """Read a JSON action ``{"anger": 0.1, ...}`` with all seven emotions in [0, 1].

    The last JSON object of the text is read, by the rule every env shares
    (:func:`~affectgym.envs.parsing.last_json_object`); code fences and prose around it
    are ignored.

    Args:
        text: The agent's message.

    Returns:
        ``(intensities (7,), None)`` or ``(None, what was wrong and what is accepted)``.

    >>> action, error = parse_emotion_action('{"anger": 0, "disgust": 0, "fear": 0, "joy": 1, "neutral": 0, "sadness": 0, "surprise": 0.5}')
    >>> action.tolist(), error
    ([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.5], None)
    >>> parse_emotion_action('{"joy": 2}')[1][:40]
    'the JSON object is missing anger, disgus'
    """
    expected = "{" + ", ".join(f'"{name}": <number 0-1>' for name in EMOTIONS) + "}"
    data, problem = last_json_object(text)
    if data is None:
        accepted = f"one JSON object {expected}" if problem == NO_JSON_OBJECT else expected
        return None, f"{problem}; accepted: {accepted}"
    missing = [name for name in EMOTIONS if name not in data]
    extra = sorted(set(data) - set(EMOTIONS))
    problems = []
    if missing:
        problems.append("is missing " + ", ".join(missing))
    if extra:
        problems.append(
            "has unknown keys " + ", ".join(extra) + " (only the seven emotions are read)"
        )
    bad = [
        name
        for name in EMOTIONS
        if name in data
        and (
            isinstance(data[name], bool)
            or not isinstance(data[name], (int, float))
            or not 0.0 <= data[name] <= 1.0
        )
    ]
    if bad:
        problems.append("needs numbers in [0, 1] for " + ", ".join(bad))
    if problems:
        return None, f"the JSON object {'; '.join(problems)}; accepted: {expected}"
    return np.array([float(data[name]) for name in EMOTIONS]), None


@dataclass(frozen=True)
class StateTextFormat:
    """How EmotionStateText-v0 shows the state and asks for the next intensities.

    Args:
        situation: Whether each turn names a situation line of the target's narrative.
        previous_state: Whether each turn shows the state before the last step too.

    Raises:
        ValueError: A field that is not a bool.
    """

    situation: bool = True
    previous_state: bool = True

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, bool):
                raise ValueError(f"task_format {field.name} must be true or false, got {value!r}")

    def system_prompt(self, alpha: float, steps: int) -> str:
        """The task, the dynamics (``alpha``: the fraction moved per turn), the reward and the reply format."""
        keys = ", ".join(f'"{name}": 0.0' for name in EMOTIONS)
        return (
            "You steer an emotional state through a scene. The state has seven intensities in [0, 1]: "
            f"{', '.join(EMOTIONS)}. Each turn, reply with the intensities you want next as one JSON object "
            f"with all seven keys, e.g. {{{keys}}}.\n"
            f"The state does not jump to your reply: each emotion moves a fraction ({alpha:g}) of the "
            "way toward it per turn; some changes are slower (crossing from a negative to a positive emotion, "
            "calming down from anger or grief) or blocked (delight straight out of disgust). If anger + sadness "
            "exceed 1.2 both are cut by 30 %, and anger above 0.8 caps joy.\n"
            "Each turn you are scored on how close the state is to the target, whether the target's emotions "
            f"are expressed as strongly as asked, and how smoothly the state moves. The scene lasts {steps} turns."
        )

    def observation(
        self,
        *,
        turn: int,
        steps: int,
        scene: str,
        situation: str,
        state: Sequence[float],
        previous: Sequence[float],
        target_name: str,
        target: Sequence[float],
    ) -> str:
        """The user message of turn ``turn`` (0-based) of ``steps``."""
        lines = [f"Turn {turn + 1} of {steps}. Scene: {scene}."]
        if self.situation:
            lines.append(f"Situation: {situation}")
        lines.append(f"Current state: {render_emotions(state)}")
        if self.previous_state:
            lines.append(f"Previous state: {render_emotions(previous)}")
        lines.append(f"Target ({target_name}): {render_emotions(target)}")
        lines.append("Reply with one JSON object giving all seven intensities you want next.")
        return "\n".join(lines)

    def parse(self, text: str) -> tuple[np.ndarray | None, str | None]:
        """Read the JSON action (:func:`parse_emotion_action`)."""
        return parse_emotion_action(text)


STATE_TEXT_FORMATS: dict[str, StateTextFormat] = {
    "default": StateTextFormat(),
    "state-only": StateTextFormat(situation=False, previous_state=False),
}
"""Named formats: ``"default"`` (scene, situation, current and previous state, target) and
``"state-only"`` (scene, current state and target: no narrative line, no previous state)."""


__all__ = ["STATE_TEXT_FORMATS", "StateTextFormat", "intensity_word", "parse_emotion_action", "render_emotions"]
