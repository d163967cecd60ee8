"""LLM judges: one generic DSPy judge, and the two signatures affectgym scores with.

:class:`Judge` is the plumbing, written once: a DSPy signature plus a scoring function,
judged in batches for RL. Unique samples are judged concurrently (a bounded thread pool),
rate limits (429) and server errors (5xx) are retried with exponential backoff, each call
has a timeout, outcomes are memoised in process and verdicts cached on disk by content
(under ``$AFFECTGYM_CACHE/judge``), long replies are cut, and a sample whose judging
finally fails yields an :class:`~affectgym.rewards.rubric.Unscored` (the reason), is
counted in :attr:`Judge.failures` and logged; nothing raises. Two judges are built on it:

:class:`EmotionJudge` (EMOTRON, for EmotionStyle-v0) reads the user's prompt, the target
emotion (any label: the seven basic ones or an open-vocabulary one such as
``"condescending"``) and the reply, and answers six ratings:

- ``emotion_match`` (low / medium / high → 0 / 0.5 / 1): the emotion comes through;
- ``quality`` (low / medium / high): the reply answers the prompt while keeping the emotion;
- ``implicitness`` (bool): shown, not named ("I am so angry" fails);
- ``intensity`` (bool): noticeable, neither flat nor absurdly excessive;
- ``authenticity`` (bool): a genuine human reaction, not mechanical or meta;
- ``response_only`` (bool): no narration, stage directions or commentary.

``score = 0.30 emotion_match + 0.20 implicitness + 0.20 response_only + 0.10 authenticity
+ 0.10 intensity + 0.10 quality``, capped at 0.60 when ``implicitness`` or
``response_only`` is false (the core rules). Weights, cap and the capping fields live in
:class:`JudgeConfig`.

>>> verdict = JudgeVerdict.from_ratings(
...     {"emotion_match": "high", "quality": "high", "implicitness": False,
...      "intensity": True, "authenticity": True, "response_only": True})
>>> round(verdict.uncapped_score, 2), verdict.score, verdict.capped
(0.8, 0.6, True)

:class:`EmpathyJudge` (for EmpatheticDialogue-v0) reads the dialogue so far, the emotion
requested for the reply and the reply, and rates empathy, the chatbot's emotion and its
question from 1 to 9; the score is their mean mapped onto ``[0, 1]``.

Prompt injection: the reply is untrusted. It is fenced between markers that it cannot
forge: it is normalised first (NFKC, so fullwidth and other compatibility forms become
ASCII, and invisible format characters such as zero-width spaces and bidi controls are
removed), then marker text and DSPy field headers inside it are defaced. Each signature's
instructions say that anything inside the fence is data to judge, never instructions.

When the judge fails. A failed judging (the server down, an answer that does not parse,
a timeout, after the retries) is never a score: the sample's verdict is an
:class:`~affectgym.rewards.rubric.Unscored` that says what failed, not 0, and a rubric
criterion that returns it leaves its component out (``None``) and names the failure in the
:class:`~affectgym.rewards.rubric.RubricResult`. Where users look, it says so:

* ``Judge.failures`` counts failed samples, and each one is logged (a warning naming the
  judge, the model and the sample);
* an env's step (:class:`~affectgym.envs.core.AffectEnv`) says so: ``info["judge_failures"]``
  counts the failed verdicts of the step and ``info["outcome"]["judge_failures"]`` those of
  the episode; the reward is then the rubric total without the judge's part;
* ``affectgym eval`` records the episode's count (from the steps' ``info``) as
  ``judge_failures`` in its line of ``results.jsonl`` and counts them in ``summary.json``
  (``judge_failures``: count, episodes, rate) and in its printed table, apart from errors;
* in TRL training (:mod:`affectgym.train.rewards`) a sample whose judging failed gets
  ``None`` from every reward function (and from ``get_reward`` in multi-turn runs), so
  GRPO leaves it out instead of scoring it as if the judge had answered 0 (TRL sums the
  reward functions with ``nansum``, so a ``None`` judge alone would do exactly that); the
  batch's count is logged as the metric ``judge/failures``.

The verdict cache is a bounded diskcache store (``JudgeConfig.cache_max_bytes``) that a
judge's threads and other processes share. A broken cache never stops judging: an
unreadable entry is a miss (the sample is judged again and the entry replaced), a database
that SQLite cannot read (or something other than a file in its place) is rebuilt empty, with
one warning, and a cache that cannot be written is judged without.
"""

from __future__ import annotations

from affectgym.rewards.judge.base import MEMO_ENTRIES, Judge
from affectgym.rewards.judge.config import DEFAULT_JUDGE_WEIGHTS, LEVELS, RATING_FIELDS, JudgeConfig
from affectgym.rewards.judge.emotion import (
    SIGNATURE_VERSION,
    EmotionJudge,
    JudgeVerdict,
    judge_signature,
)
from affectgym.rewards.judge.empathy import (
    EMPATHY_RATINGS,
    EMPATHY_SIGNATURE_VERSION,
    EmpathyJudge,
    empathy_score,
    empathy_signature,
)
from affectgym.rewards.judge.fencing import FENCE_CLOSE, FENCE_OPEN, fence_response, truncate_reply

__all__ = [
    "DEFAULT_JUDGE_WEIGHTS",
    "EMPATHY_RATINGS",
    "EMPATHY_SIGNATURE_VERSION",
    "FENCE_CLOSE",
    "FENCE_OPEN",
    "LEVELS",
    "MEMO_ENTRIES",
    "RATING_FIELDS",
    "SIGNATURE_VERSION",
    "EmotionJudge",
    "EmpathyJudge",
    "Judge",
    "JudgeConfig",
    "JudgeVerdict",
    "empathy_score",
    "empathy_signature",
    "fence_response",
    "judge_signature",
    "truncate_reply",
]
