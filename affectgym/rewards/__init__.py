"""Reward pieces: rubric, emotion classifier, LLM judge, rules."""
