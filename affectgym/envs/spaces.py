"""A Gymnasium space of Unicode text.

Gymnasium's :class:`gymnasium.spaces.Text` admits only a fixed character set (letters and
digits by default). Language-model observations and actions are arbitrary Unicode, so
affectgym uses :class:`TextSpace`.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

# Code-point ranges sample() draws from: ASCII, Latin-1, Greek, Cyrillic, CJK, emoji,
# general punctuation (quotes, dashes, zero-width characters) and a few controls.
_SAMPLE_RANGES = (
    (0x20, 0x7E),
    (0xA0, 0xFF),
    (0x370, 0x3FF),
    (0x400, 0x4FF),
    (0x2000, 0x206F),
    (0x4E00, 0x4FFF),
    (0x1F300, 0x1F64F),
    (0x00, 0x1F),
)


class TextSpace(spaces.Space[str]):
    """Any Unicode string of at most ``max_length`` characters.

    Args:
        max_length: Longest string the space contains, in characters.
        min_length: Shortest string the space contains, in characters.
        seed: Seed of the space's own random generator (used by :meth:`sample`).

    >>> space = TextSpace(max_length=10, seed=0)
    >>> space.contains("ça va? 🙂"), space.contains("x" * 11), space.contains(b"bytes")
    (True, False, False)
    >>> all(space.contains(space.sample()) for _ in range(100))
    True
    """

    def __init__(self, max_length: int = 65_536, *, min_length: int = 0, seed: int | None = None):
        if not 0 <= min_length <= max_length:
            raise ValueError(
                f"TextSpace needs 0 <= min_length <= max_length, got {min_length}, {max_length}"
            )
        self.max_length = int(max_length)
        self.min_length = int(min_length)
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Text cannot be flattened to a fixed-size array."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Draw a string of varied Unicode (mixed scripts, emoji, punctuation, controls).

        Lengths are biased towards short strings; ``mask`` and ``probability`` are not
        supported for text and must be ``None``.
        """
        if mask is not None or probability is not None:
            raise ValueError("TextSpace.sample does not support mask or probability")
        upper = min(self.max_length, 64)
        length = int(self.np_random.integers(self.min_length, max(upper, self.min_length) + 1))
        chosen = self.np_random.integers(0, len(_SAMPLE_RANGES), size=length)
        codes = [int(self.np_random.integers(lo, hi + 1)) for lo, hi in (_SAMPLE_RANGES[i] for i in chosen)]
        return "".join(map(chr, codes))

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a ``str`` of allowed length."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length}, min_length={self.min_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, TextSpace)
            and other.max_length == self.max_length
            and other.min_length == self.min_length
        )

    def to_jsonable(self, sample_n: list[str]) -> list[str]:
        """Strings are already JSON-serialisable."""
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        """Inverse of :meth:`to_jsonable`."""
        return list(sample_n)


def clip_text(text: str, max_length: int, marker: str = " …[truncated]") -> str:
    """Shorten ``text`` to at most ``max_length`` characters, marking the cut.

    >>> clip_text("abcdefghij", 8, marker="…")
    'abcdefg…'
    >>> clip_text("short", 8)
    'short'
    """
    if len(text) <= max_length:
        return text
    return text[: max(0, max_length - len(marker))] + marker[:max_length]


def env_kind(env: Any) -> str:
    """What an env exchanges with its agent: ``"text"``, ``"numeric"`` or ``"other"``.

    ``"text"``: string observations and actions (:class:`TextSpace` or Gymnasium's ``Text``),
    what language-model agents and GRPO play. ``"numeric"``: ``Box`` observations and actions,
    what policy agents and Stable-Baselines3's PPO/SAC play.

    >>> import gymnasium as gym
    >>> env_kind(gym.make("Pendulum-v1")), env_kind(gym.make("CartPole-v1"))
    ('numeric', 'other')
    """
    observation_space, action_space = env.observation_space, env.action_space
    if all(isinstance(space, (TextSpace, spaces.Text)) for space in (observation_space, action_space)):
        return "text"
    if all(isinstance(space, spaces.Box) for space in (observation_space, action_space)):
        return "numeric"
    return "other"


__all__ = ["TextSpace", "clip_text", "env_kind"]
