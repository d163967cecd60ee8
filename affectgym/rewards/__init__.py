"""Reward building blocks: rubrics, the emotion classifier, the LLM judge and lexical rules.

Importing this package is cheap: torch, transformers and dspy load on first use.
"""

from __future__ import annotations

from affectgym.rewards.classifier import EmotionClassifier
from affectgym.rewards.emotions import EMOTIONS, canonical_emotion, is_basic_emotion
from affectgym.rewards.judge import EmotionJudge, JudgeConfig, JudgeVerdict
from affectgym.rewards.rubric import Cap, Criterion, Gate, Reply, Rubric, RubricResult
from affectgym.rewards.rules import RuleMatch, instruction_overlap, rule_penalties, strip_think

__all__ = [
    "EMOTIONS",
    "Cap",
    "Criterion",
    "EmotionClassifier",
    "EmotionJudge",
    "Gate",
    "JudgeConfig",
    "JudgeVerdict",
    "Reply",
    "Rubric",
    "RubricResult",
    "RuleMatch",
    "canonical_emotion",
    "instruction_overlap",
    "is_basic_emotion",
    "rule_penalties",
    "strip_think",
]
