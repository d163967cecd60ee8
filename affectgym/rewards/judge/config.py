"""The settings of a judge, and the ratings of the emotion judge its weights name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from affectgym.cache_root import cache_root

LEVELS: Mapping[str, float] = {"low": 0.0, "medium": 0.5, "high": 1.0}
"""Numeric value of the graded ratings."""

DEFAULT_JUDGE_WEIGHTS: Mapping[str, float] = {
    "emotion_match": 0.30,
    "implicitness": 0.20,
    "response_only": 0.20,
    "authenticity": 0.10,
    "intensity": 0.10,
    "quality": 0.10,
}
"""The reference weights (they sum to 1)."""

GRADED_FIELDS = ("emotion_match", "quality")
BOOLEAN_FIELDS = ("implicitness", "intensity", "authenticity", "response_only")
RATING_FIELDS = GRADED_FIELDS + BOOLEAN_FIELDS


@dataclass(frozen=True)


class JudgeConfig:
    """Settings of a :class:`Judge`.

    Attributes:
        weights: Weight of each rating in the :class:`EmotionJudge`'s score (the six of
            :data:`RATING_FIELDS`; other judges ignore it).
        cap: Highest :class:`EmotionJudge` score while a rating of ``cap_when_false`` is false.
        cap_when_false: Boolean ratings that are core rules (:class:`EmotionJudge`).
        max_concurrency: Judge calls in flight at once.
        timeout_s: Time limit of one call (given to the LM client by :meth:`Judge.from_url`)
            and, times the attempts, of a sample within a batch.
        max_retries: Retries of a call after a rate limit (429), a server error (5xx), a
            timeout or a transport error; other errors fail at once.
        backoff_s: First retry delay; doubles each retry, with up to 25% jitter. A provider's
            ``Retry-After`` is honoured when longer.
        max_backoff_s: Longest retry delay.
        max_reply_words: Replies are cut to this many words before judging: 768 words is
            about 1024 tokens of English for BPE tokenizers (about 0.75 words per token).
        max_reply_chars: And to this many characters (for text without spaces).
        cache: Whether verdicts are cached on disk.
        cache_dir: Cache folder; default ``$AFFECTGYM_CACHE/judge`` (``AFFECTGYM_CACHE``
            defaults to ``~/.cache/affectgym``).
        cache_max_bytes: Size bound of the verdict cache; past it the least recently stored
            verdicts are evicted (a verdict takes about 200 bytes).
    """

    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_JUDGE_WEIGHTS))
    cap: float = 0.60
    cap_when_false: tuple[str, ...] = ("implicitness", "response_only")
    max_concurrency: int = 16
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    max_reply_words: int = 768
    max_reply_chars: int = 6000
    cache: bool = True
    cache_dir: str | None = None
    cache_max_bytes: int = 256 * 1024 * 1024

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(RATING_FIELDS))
        if unknown:
            raise ValueError(
                f"JudgeConfig.weights names unknown ratings {unknown}; ratings are {list(RATING_FIELDS)}"
            )
        not_boolean = sorted(set(self.cap_when_false) - set(BOOLEAN_FIELDS))
        if not_boolean:
            raise ValueError(
                f"JudgeConfig.cap_when_false must name boolean ratings {list(BOOLEAN_FIELDS)}, got {not_boolean}"
            )
        if self.max_concurrency < 1 or self.max_retries < 0 or self.timeout_s <= 0:
            raise ValueError(
                f"JudgeConfig needs max_concurrency >= 1, max_retries >= 0 and timeout_s > 0; got "
                f"{self.max_concurrency}, {self.max_retries} and {self.timeout_s}"
            )
        if self.cache_max_bytes < 1:
            raise ValueError(f"JudgeConfig.cache_max_bytes must be a positive number of bytes, got {self.cache_max_bytes}")

    def cache_path(self) -> Path:
        """Folder of the on-disk verdict cache."""
        if self.cache_dir is not None:
            return Path(self.cache_dir)
        return cache_root() / "judge"
