"""Baselines for the envs without labels, which need no language model and read only what the env shows.

* ``style-lexicon`` (EmotionStyle-v0) -- a templated reply built from a small emotion
  lexicon (an interjection, a description and a closing line per emotion, none naming the
  emotion), about the instruction's content words;
* ``dialogue-template`` (EmpatheticDialogue-v0) -- three tagged sentences, each from a
  lexicon of sentences per tag, the last an open question;
* ``controller`` (EmotionStateText-v0) -- the proportional controller on the state and target
  the env gives as data (``info["state"]``, ``info["target"]``): command the state plus
  twice the error to the target.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from affectgym.agents.base import Agent
from affectgym.agents.policies import DEFAULT_CONTROLLER_GAIN, proportional_command

#: Per emotion: an interjection, a description of the topic and a closing line. None of the
#: words names the emotion (the rules of EmotionStyle-v0 penalise that); the tone carries it.
STYLE_LEXICON: Mapping[str, tuple[str, str, str]] = {
    "anger": ("Are you kidding me?", "is a complete mess, and nobody ever bothers to fix it", "Enough excuses. Sort it out properly, today!"),
    "disgust": ("Ugh, yuck.", "is slimy, stale and grimy, the kind of thing that leaves a film on everything", "Keep it far away from me and scrub your hands afterwards."),
    "fear": ("Oh no, please be careful.", "could go wrong at any moment, and every small sound makes my heart pound", "What if nobody is there to help? Please stay close to me."),
    "joy": ("Oh, wonderful!", "is bright, warm and full of promise, and it makes the whole day sweeter", "What a treat, this is going to be brilliant!"),
    "neutral": ("Here is a short overview.", "has a clear purpose, a usual sequence of steps and a few common variations", "Checking each point in order is the simplest approach."),
    "sadness": ("Oh...", "reminds me of how things used to be, quieter now and emptier somehow", "Some things just do not come back, no matter how long you wait."),
    "surprise": ("Wait, what? Really?", "turned out completely different from anything anyone expected", "Who would have guessed? Nobody saw that coming!"),
}
_STOP_WORDS = frozenset(
    "a about after all also an and any are as at be been before being best but by can could did do does doing "
    "for from get give good had has have how i if in into is it its just me my of on or our should so some such "
    "than that the their them then there these they this to up us want was way we were what when where which "
    "while who why will with without would you your".split()
)


def instruction_words(instruction: str, max_words: int = 6) -> str:
    """The instruction's first content words (no function words), as a short topic phrase.

    >>> instruction_words("How should I prepare for my first job interview after college?")
    'prepare first job interview college'
    """
    words = [word for word in re.findall(r"[A-Za-z][A-Za-z'-]*", instruction) if word.lower() not in _STOP_WORDS]
    return " ".join(word.lower() for word in words[:max_words]) or "this"


def style_reply(emotion: str, instruction: str) -> str:
    """The lexicon reply: interjection, the instruction's content words with the description, closing line.

    Labels outside the seven get the neutral entry (only a judge can score them).

    >>> style_reply("joy", "Explain why bread goes stale.")
    'Oh, wonderful! Explain bread goes stale is bright, warm and full of promise, and it makes the whole day sweeter. What a treat, this is going to be brilliant!'
    """
    opening, description, closing = STYLE_LEXICON.get(emotion.strip().lower(), STYLE_LEXICON["neutral"])
    topic = instruction_words(instruction)
    return f"{opening} {topic[:1].upper()}{topic[1:]} {description}. {closing}"


class StyleLexiconAgent(Agent):
    """EmotionStyle-v0's LLM-free baseline: :func:`style_reply` for the prompt's ``EMOTION:`` line and instruction."""

    name = "style-lexicon"

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """It reads EmotionStyle-v0's prompt, so the env must be an :class:`~affectgym.envs.emotion_style.EmotionStyleEnv`."""
        from affectgym.envs.emotion_style import EmotionStyleEnv

        return _env_class_problem(env, EmotionStyleEnv, "EmotionStyle-v0's prompt (its EMOTION: line and instruction)")

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """Read the target emotion (first line) and the instruction (last paragraph); reply from the lexicon."""
        match = re.match(r"\s*EMOTION:\s*(.+)", observation)
        emotion = match.group(1).strip() if match else "neutral"
        instruction = observation.strip().split("\n\n")[-1]
        return style_reply(emotion, instruction)


#: Per dialogue tag: an empathy sentence (mirrors the user), an emotional sentence (the
#: requested emotion) and, for NEUTRAL, an open question. About 7 words each, so the three
#: take the 20-25 words the env asks for; none names its emotion.
DIALOGUE_LEXICON: Mapping[str, tuple[str, str]] = {
    "ANGER": ("That would drive anyone straight up the wall.", "Honestly, that kind of carelessness is simply unacceptable!"),
    "DISGUST": ("Ugh, that sounds truly gross to deal with.", "Yuck, the whole thing sounds slimy and rotten."),
    "FEAR": ("That sounds tense, and waiting like that is hard.", "Please be careful, something about it seems risky."),
    "HAPPINESS": ("That is lovely news, what a bright moment!", "What a treat, this could turn out brilliantly!"),
    "NEUTRAL": ("That makes sense, thanks for telling me.", "What do you think you will do next about it?"),
    "SADNESS": ("That sounds heavy, and it must weigh on you.", "Some days just drain the colour out of everything."),
    "SURPRISE": ("Wow, nobody could have seen that coming!", "Wait, really? That changes everything, out of nowhere!"),
}


def dialogue_reply(user_tag: str, target_tag: str, question_tag: str = "NEUTRAL") -> str:
    """Three tagged sentences from :data:`DIALOGUE_LEXICON`: empathy, the requested emotion, an open question.

    >>> dialogue_reply("SADNESS", "HAPPINESS")
    '(SADNESS) That sounds heavy, and it must weigh on you. (HAPPINESS) What a treat, this could turn out brilliantly! (NEUTRAL) What do you think you will do next about it?'
    """
    neutral = DIALOGUE_LEXICON["NEUTRAL"]
    empathy = DIALOGUE_LEXICON.get(user_tag, neutral)[0]
    emotional = DIALOGUE_LEXICON.get(target_tag, neutral)[1 if target_tag != "NEUTRAL" else 0]
    return f"({user_tag}) {empathy} ({target_tag}) {emotional} ({question_tag}) {neutral[1]}"


class DialogueTemplateAgent(Agent):
    """EmpatheticDialogue-v0's LLM-free baseline: :func:`dialogue_reply` for the tags the turn asks for.

    The tags come from the observation's ``Reply in three tagged sentences: (A) ... (B) ... (C)``
    line; the user's own words are not read.
    """

    name = "dialogue-template"

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """It reads EmpatheticDialogue-v0's turns, so the env must be a :class:`~affectgym.envs.dialogue.DialogueEnv`."""
        from affectgym.envs.dialogue import DialogueEnv

        return _env_class_problem(env, DialogueEnv, "the tags EmpatheticDialogue-v0 asks for")

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """Reply with the template of the required tags (``info["required_tags"]`` when given)."""
        tags = list(info.get("required_tags") or [])
        if len(tags) != 3:
            line = next((text for text in observation.splitlines() if text.startswith("Reply in three tagged sentences")), "")
            tags = re.findall(r"\(([A-Z_]+)\)", line)[:3]
        if len(tags) != 3:
            tags = ["NEUTRAL", "NEUTRAL", "NEUTRAL"]
        return dialogue_reply(*tags)


class StateControllerAgent(Agent):
    """EmotionStateText-v0's LLM-free baseline: the proportional controller on the state and the
    target the env gives as data (``info["state"]``, ``info["target"]``), answered as the JSON
    object the env reads.

    Args:
        gain: See :func:`~affectgym.agents.policies.proportional_command`.
    """

    name = "controller"

    def __init__(self, gain: float = DEFAULT_CONTROLLER_GAIN):
        self.gain = float(gain)

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """It reads EmotionStateText-v0's observation, so the env must be an :class:`~affectgym.envs.emotion_state_text.EmotionStateTextEnv`."""
        from affectgym.envs.emotion_state_text import EmotionStateTextEnv

        return _env_class_problem(env, EmotionStateTextEnv, "EmotionStateText-v0's state and target (info['state'], info['target'])")

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """The command for the current state and target, as ``{"anger": ..., ...}``."""
        from affectgym.emotions import EMOTIONS

        state, target = info.get("state"), info.get("target")
        if state is None or target is None or len(state) != len(EMOTIONS) or len(target) != len(EMOTIONS):
            raise ValueError("the controller reads EmotionStateText-v0's info['state'] and info['target'] (seven "
                             f"intensities each), and this step's info has state={state!r}, target={target!r}")
        command = proportional_command(np.asarray(state), np.asarray(target), self.gain)
        return json.dumps({name: round(float(v), 4) for name, v in zip(EMOTIONS, command, strict=True)})

    def describe(self) -> dict[str, Any]:
        """Class, name and gain."""
        return {**super().describe(), "gain": self.gain}


def _env_class_problem(env: Any, env_class: type, what: str) -> str | None:
    """None when ``env`` is an ``env_class`` (plug-in subclasses included), else what the agent reads."""
    if isinstance(env, env_class):
        return None
    return f"it reads {what} and the env is a {type(env).__name__}, not a {env_class.__name__}"


__all__ = [
    "DIALOGUE_LEXICON",
    "STYLE_LEXICON",
    "DialogueTemplateAgent",
    "StateControllerAgent",
    "StyleLexiconAgent",
    "dialogue_reply",
    "instruction_words",
    "style_reply",
]
