"""Reward building blocks: rubrics, the emotion classifier, the LLM judges and lexical rules.

Importing this package is cheap: torch, transformers and dspy load on first use.
"""

from __future__ import annotations

from affectgym.emotions import EMOTIONS, canonical_emotion, is_basic_emotion
from affectgym.rewards.classifier import EmotionClassifier, MemoisedClassifier
from affectgym.rewards.factories import make_classifier, make_judge
from affectgym.rewards.judge import (
    EmotionJudge,
    EmpathyJudge,
    Judge,
    JudgeConfig,
    JudgeVerdict,
)
from affectgym.rewards.memo import BoundedMemo
from affectgym.rewards.relevance import ConditionalRelevance
from affectgym.rewards.rubric import Cap, Criterion, Gate, Reply, Rubric, RubricResult, Unscored
from affectgym.rewards.rules import (
    RuleMatch,
    addresses_judge,
    instruction_overlap,
    rule_penalties,
    strip_think,
)

__all__ = [
    "ConditionalRelevance",
    "EMOTIONS",
    "BoundedMemo",
    "Cap",
    "Criterion",
    "EmotionClassifier",
    "EmotionJudge",
    "EmpathyJudge",
    "Gate",
    "Judge",
    "JudgeConfig",
    "JudgeVerdict",
    "MemoisedClassifier",
    "Reply",
    "Rubric",
    "RubricResult",
    "RuleMatch",
    "Unscored",
    "addresses_judge",
    "canonical_emotion",
    "instruction_overlap",
    "is_basic_emotion",
    "make_classifier",
    "make_judge",
    "rule_penalties",
    "strip_think",
]
