"""EmotionStyle-v0's scenario and the criteria of its rubric that need no scorer: the rules, the cap, the control.

The classifier's and the judge's criteria live on the env (they call its scorers); everything
here is a plain function of ``(scenario, reply, trace)`` or of a result's components.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass

from affectgym.data.splits import stable_hash
from affectgym.emotions import EMOTIONS, canonical_emotion
from affectgym.envs.core import Trace
from affectgym.envs.style_content import in_requested_language
from affectgym.rewards.rubric import Reply
from affectgym.rewards.rules import (
    addresses_judge,
    instruction_overlap,
    rule_penalties,
    strip_think,
)

CORE_RULE_CAP = 0.60  # highest total while a core rule (implicitness, response-only) is broken
RULE_WEIGHTS: Mapping[str, float] = {
    "stage_direction": -0.5,
    "names_emotion": -0.5,
    "states_feeling": -0.5,
    "meta_commentary": -0.5,
    "addresses_judge": -0.5,
    "echoes_emotion_tag": -0.25,
    "shouting": -0.25,
    "empty": -0.5,
    "off_topic": -0.1,
    "word_salad": -0.5,
    "repetition": -0.5,
    "copies_instruction": -0.5,
    "wrong_language": -0.5,
}
"""Default weight of each rule (its component is 1 when it fires)."""

CORE_RULES: tuple[str, ...] = (
    "stage_direction",
    "names_emotion",
    "states_feeling",
    "echoes_emotion_tag",
    "meta_commentary",
    "addresses_judge",
)
"""Rules whose breach caps the total (implicitness and response-only, as in EMOTRON)."""

STYLE_RUBRICS: tuple[str, ...] = ("default", "shuffled-target", "classifier-only")
"""The env's named rubrics. ``"default"`` rewards the emotion the prompt asks for.
``"shuffled-target"`` computes the classifier's and the judge's terms for another emotion
than the one shown (:func:`shuffled_target`) and the rules for the one shown: the control of
a learning benchmark, which gains only what a generic emotive style or a longer reply gains.
``"classifier-only"`` is EMOTRON's first attempt, the reward a policy learns to hack: the
classifier's P(target) alone (and the env's price of an empty message), no judge, no cap, every
rule logged at weight 0 (its component says whether it fired; the reward does not read it)."""

TARGET_CRITERIA: tuple[str, ...] = ("emotion", "emotion_probability", "judge", "judge_implicitness", "judge_response_only")
"""The criteria that read the target emotion as a scorer's label (the rules read it as words to avoid)."""


@dataclass(frozen=True)
class StyleScenario:
    """One instruction to answer in one target emotion.

    Attributes:
        id: ``"<instruction id>:<emotion>"`` (the emotion is shown to the agent anyway).
        instruction_id: Id of the instruction.
        instruction: The user's request.
        emotion: Target emotion: one of the seven, or an open-vocabulary label.
        topic: A short phrase naming what the instruction is about (reference replies use it).
        preface: Whether the prompt carries the longer preface.
    """

    id: str
    instruction_id: str
    instruction: str
    emotion: str
    topic: str
    preface: bool = False


# ----------------------------------------------------------------------------- rules
def shuffled_target(scenario: StyleScenario) -> StyleScenario:
    """The scenario with another of the seven emotions as its target, always the same one for its id.

    Open-vocabulary targets are kept (the judge alone scores them).

    >>> s = StyleScenario("es001:joy", "es001", "Explain tides.", "joy", "tides")
    >>> shuffled_target(s).emotion != "joy", shuffled_target(s) == shuffled_target(s)
    (True, True)
    """
    label = canonical_emotion(scenario.emotion)
    if label is None:
        return scenario
    others = [emotion for emotion in EMOTIONS if emotion != label]
    return dataclasses.replace(scenario, emotion=others[stable_hash(scenario.id, salt="shuffled-target") % len(others)])


@functools.lru_cache(maxsize=2048)
def _rule_hits(reply: str | None, target: str, instruction: str, topic: str) -> tuple[frozenset[str], float]:
    """Names of the rules ``reply`` breaks and its lexical overlap with the instruction."""
    hits = {name for name, match in rule_penalties(reply, target, instruction, topic).items() if match.hit}
    visible = strip_think(reply)
    if addresses_judge(visible).hit:
        hits.add("addresses_judge")
    if visible and not in_requested_language(visible):
        hits.add("wrong_language")
    overlap = instruction_overlap(visible, instruction) if visible else 0.0
    return frozenset(hits), overlap


def rule_hit(scenario: StyleScenario, reply: Reply, trace: Trace, rule: str) -> float:
    """1 when the reply breaks ``rule`` (a rule of :func:`~affectgym.rewards.rules.rule_penalties`,
    under the same name, or ``addresses_judge``), else 0.

    The reply's answer is its text, so the rules read ``reply.text``; an unanswered
    episode (``reply.text`` is ``None``) breaks ``empty`` only.

    >>> s = StyleScenario("es003:anger", "es003", "Explain why traffic lights are slow.", "anger", "slow lights")
    >>> rule_hit(s, Reply("(sighs) The lights are slow."), [], "stage_direction"), rule_hit(s, Reply("The lights are slow."), [], "stage_direction")
    (1.0, 0.0)
    >>> rule_hit(s, Reply(None), [], "empty"), rule_hit(s, Reply(None), [], "off_topic")
    (1.0, 0.0)

    The coherence rules see the scenario's topic as on topic, so an exclamation of it is no heap:

    >>> salad, honest = "Slow lights! Yay! Woohoo! Wonderful, fantastic, amazing!", "Slow lights! Again? Who times these?"
    >>> rule_hit(s, Reply(salad), [], "word_salad"), rule_hit(s, Reply(honest), [], "word_salad")
    (1.0, 0.0)
    >>> rule_hit(s, Reply("Explain why traffic lights are slow. " * 3), [], "repetition")
    1.0
    """
    hits, _ = _rule_hits(reply.text, scenario.emotion, scenario.instruction, scenario.topic)
    return float(rule in hits)


def overlap_with_instruction(scenario: StyleScenario, reply: Reply, trace: Trace) -> float:
    """Share of the instruction's content words the reply uses (a logged metric).

    >>> s = StyleScenario("es003:anger", "es003", "Explain why traffic lights are slow.", "anger", "slow lights")
    >>> overlap_with_instruction(s, Reply("Those traffic lights! Slow, every single time."), [])
    1.0
    """
    return _rule_hits(reply.text, scenario.emotion, scenario.instruction, scenario.topic)[1]


def reward_breakdown(
    components: Mapping[str, float | None], weights: Mapping[str, float]
) -> dict[str, dict[str, float | None]]:
    """Each component's ``value``, ``weight`` and ``contribution`` (weight × value, ``None`` when
    the component did not apply); the contributions of a final step sum to its reward.

    >>> reward_breakdown({"off_topic": 1.0, "judge": None}, {"off_topic": -0.1, "judge": 0.5})
    {'off_topic': {'value': 1.0, 'weight': -0.1, 'contribution': -0.1}, 'judge': {'value': None, 'weight': 0.5, 'contribution': None}}
    """
    breakdown: dict[str, dict[str, float | None]] = {}
    for name, value in components.items():
        weight = float(weights.get(name, 0.0))
        # + 0.0 turns the -0.0 of a rule that did not fire into 0.0.
        breakdown[name] = {"value": value, "weight": weight, "contribution": None if value is None else weight * value + 0.0}
    return breakdown


def core_rule_broken(components: Mapping[str, float | None]) -> bool:
    """Whether a core rule is broken: one of :data:`CORE_RULES` fired or the judge found the reply
    not implicit or not a response only (the cap of :data:`CORE_RULE_CAP` then applies)."""
    if any(components.get(rule) for rule in CORE_RULES):
        return True
    return components.get("judge_implicitness") == 0.0 or components.get("judge_response_only") == 0.0


__all__ = [
    "CORE_RULES",
    "CORE_RULE_CAP",
    "RULE_WEIGHTS",
    "STYLE_RUBRICS",
    "TARGET_CRITERIA",
    "StyleScenario",
    "core_rule_broken",
    "overlap_with_instruction",
    "reward_breakdown",
    "rule_hit",
    "shuffled_target",
]
