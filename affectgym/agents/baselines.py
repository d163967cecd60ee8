"""Baselines for the labelled-speech envs that need no language model.

They act through the same reset/step contract as any agent, so their numbers are directly
comparable with a model's:

* ``majority`` -- always the most frequent label of the train split, confidence = its share;
* ``random`` -- a uniformly random label, confidence 1/K;
* ``prosody-rule`` -- calls the prosody tool and thresholds pitch range, pitch variability
  and pauses (as z-scores against the train split), the threshold fitted
  on the train split;
* ``probe`` -- a scikit-learn logistic regression over TF-IDF of the transcript's words
  (``features="text"``), the prosody numbers (``"prosody"``) or both (``"both"``, default),
  trained on the train split;
* ``protocol`` -- the label-blind protocol demonstrator of :mod:`affectgym.agents.protocol`:
  the env's flat tool calls, then a random answer.

Fitting reads the train split through the public contract: each clip is reset by id, the
tools are called, and the gold label comes from ``info["outcome"]`` after an answer, as a
supervised learner would see it. The tools' results are read as data (``info["tool_data"]``:
the transcript's lines, the measurements by name), never parsed from the text the model reads.

For the envs without labels, baselines that read only the observation:

* ``style-lexicon`` (EmotionStyle-v0) -- a templated reply built from a small emotion
  lexicon (an interjection, a description and a closing line per emotion, none naming the
  emotion), about the instruction's content words;
* ``dialogue-template`` (EmpatheticDialogue-v0) -- three tagged sentences, each from a
  lexicon of sentences per tag, the last an open question;
* ``controller`` (EmotionStateText-v0, and EmotionState-v0 through
  :class:`~affectgym.agents.policies.ControllerPolicy`) -- the proportional controller:
  command the state plus twice the error to the target.

``baseline`` picks the one an env recommends (its ``recommended_baseline`` class attribute),
so ``affectgym eval ENV --agent baseline`` works for every built-in env.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from affectgym.agents.base import Agent, tool_call_text
from affectgym.agents.policies import (
    DEFAULT_CONTROLLER_GAIN,
    ControllerPolicy,
    RandomPolicy,
    proportional_command,
)
from affectgym.agents.protocol import ProtocolAgent
from affectgym.agents.registry import agent_env_problem, make_agent, register_agent
from affectgym.envs.label_format import final_answer
from affectgym.envs.spaces import env_kind

#: The prosody measurements the probe reads, by their names in ``get_prosody_features``' data.
PROSODY_FEATURES: tuple[str, ...] = (
    "f0_mean_st", "f0_sd_st", "f0_range_st", "f0_slope_st_per_s", "intensity_sd_db",
    "speaking_rate_syl_per_s", "pause_count", "pause_total_s",
)
RULE_FEATURES = ("f0_range_st", "f0_sd_st", "pause_count")  # what the prosody rule thresholds


def prosody_numbers(data: Mapping[str, Any] | None) -> dict[str, float]:
    """The :data:`PROSODY_FEATURES` of ``get_prosody_features``' data (``info["tool_data"]``);
    NaN where a feature was not measured or the clip has no audio (``None``).

    >>> numbers = prosody_numbers({"f0_range_st": 13.7, "f0_sd_st": 4.3, "pause_count": 0, "f0_slope_st_per_s": None})
    >>> numbers["f0_range_st"], numbers["pause_count"], numbers["f0_slope_st_per_s"]
    (13.7, 0.0, nan)
    """
    data = data or {}
    return {name: math.nan if data.get(name) is None else float(data[name]) for name in PROSODY_FEATURES}


def transcript_words(data: Mapping[str, Any] | None) -> str:
    """The spoken words of ``get_transcript``' data: the context lines and the line, without speaker names.

    Speaker names are left out so the probe models what is said (as MUStARD's text
    baselines do), not who tends to be sarcastic.

    >>> transcript_words({"context": ["LEONARD: Nice plan."], "speaker": "SHELDON", "line": "Thank you."})
    'Nice plan. Thank you.'
    """
    data = data or {}
    spoken = [line.split(":", 1)[-1].strip() for line in data.get("context", [])]
    return " ".join([*spoken, data.get("line") or ""]).strip()


@dataclass(frozen=True)
class LabelledClip:
    """What the train split shows an agent about one clip, and its gold label."""

    transcript: Mapping[str, Any] | None
    prosody: Mapping[str, Any] | None
    label: str
    pivot: bool


def collect_split(env_id: str, split: str = "train", env_kwargs: Mapping[str, Any] | None = None) -> tuple[list[LabelledClip], tuple[str, ...]]:
    """Tool outputs and gold labels of every clip of a split, read through reset/step."""
    import affectgym

    env = affectgym.make(env_id, split=split, **dict(env_kwargs or {}))
    base = env.unwrapped
    labels = tuple(base.label_set)
    clips = []
    for scenario_id in base.scenario_ids:
        env.reset(options={"scenario_id": scenario_id})
        env.step(tool_call_text("get_transcript", {}))
        data = env.step(tool_call_text("get_prosody_features", {}))[-1]["tool_data"]
        *_, info = env.step(f'<final>{{"label": "{labels[0]}", "confidence": 0.5}}</final>')
        outcome = info["outcome"]
        clips.append(LabelledClip(data.get("get_transcript"), data.get("get_prosody_features"), outcome["label"],
                                  bool(outcome.get("pivot"))))
    env.close()
    return clips, labels


class LabelAnswerAgent(Agent):
    """Base of the baselines that answer ``<final>{"label": ..., "confidence": ...}</final>``.

    They play text envs that hide one label of a ``label_set`` and read that answer (the
    labelled-speech envs), with the tools in :attr:`required_tools`.
    """

    #: Tools the agent (or its fitting on the train split) calls.
    required_tools: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """What the env lacks: a label set, the ``<final>`` answer format, the tools."""
        labels = tuple(getattr(env, "label_set", ()) or ())
        if not labels:
            return "it answers with one of the env's labels and the env hides none (its label_set is empty)"
        answer = final_answer(labels[0], 0.5)
        if env.parse_final(answer)[1] is not None:
            return f"it answers like {answer} and the env does not accept that answer format"
        missing = [name for name in cls.required_tools if name not in env.tools]
        if missing:
            return f"it calls the tools {', '.join(missing)} and the env does not declare them"
        return None


class MajorityAgent(LabelAnswerAgent):
    """Always the most frequent train label, with its train share as confidence."""

    name = "majority"

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None):
        clips, _ = collect_split(env_id, "train", env_kwargs)
        label, count = Counter(c.label for c in clips).most_common(1)[0]
        self.label, self.confidence = label, count / len(clips)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """Answer at once."""
        return final_answer(self.label, self.confidence)


class RandomAgent(LabelAnswerAgent):
    """A uniformly random label at confidence 1/K, seeded per episode.

    Raises:
        ValueError: The env cannot be played by it (:meth:`env_problem`: no label set, ...).
    """

    name = "random"

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, seed: int = 0):
        import affectgym

        env = affectgym.make(env_id, **dict(env_kwargs or {}))
        problem = self.env_problem(env.unwrapped)
        if problem is None:
            self.labels = tuple(env.unwrapped.label_set)
        env.close()
        if problem is not None:
            raise ValueError(
                f"the 'random' agent cannot play {env_id}: {problem}; it plays labelling envs (Sarcasm-v0, "
                f"SpeechEmotion-v0) and numeric ones (EmotionState-v0); for {env_id} use --agent baseline"
            )
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed, so an episode's answer depends only on its seed."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """Answer at once with a random label."""
        label = self.labels[int(self._rng.integers(len(self.labels)))]
        return final_answer(label, 1 / len(self.labels))


class _ToolThenAnswerAgent(LabelAnswerAgent):
    """Calls ``tools`` in order, then answers from their results as data (``info["tool_data"]``) with :meth:`decide`."""

    tools: tuple[str, ...] = ()

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """The next tool call, or the answer once every tool has answered."""
        called = {m.get("name") for m in info.get("messages", []) if m.get("role") == "tool"}
        for name in self.tools:
            if name not in called:
                return tool_call_text(name, {})
        label, confidence = self.decide(info.get("tool_data", {}))
        return final_answer(label, confidence)

    def decide(self, data: Mapping[str, Any]) -> tuple[str, float]:
        raise NotImplementedError


class ProsodyRuleAgent(_ToolThenAnswerAgent):
    """Sarcastic when pitch range, pitch variability and pauses stand out (threshold fitted on train).

    The cue score is the sum of the z-scores of F0 range and F0 sd (in semitones) and of the
    pause count, each against the train split's mean and sd; the threshold is the one that
    classifies the train split best.
    """

    name = "prosody-rule"
    tools = ("get_prosody_features",)
    required_tools = tools
    marked_label = "sarcastic"

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """As :class:`LabelAnswerAgent`, and the labels must be sarcastic and one other."""
        problem = super().env_problem(env)
        labels = tuple(env.label_set)
        if problem is None and (cls.marked_label not in labels or len(labels) != 2):
            return f"it needs the labels sarcastic/sincere and the env has {list(labels)}"
        return problem

    def __init__(self, env_id: str = "affectgym/Sarcasm-v0", env_kwargs: Mapping[str, Any] | None = None):
        clips, labels = collect_split(env_id, "train", env_kwargs)
        if self.marked_label not in labels or len(labels) != 2:
            raise ValueError(f"prosody-rule needs the labels sarcastic/sincere, {env_id} has {list(labels)}")
        self.other_label = next(label for label in labels if label != self.marked_label)
        table = np.array([[prosody_numbers(c.prosody)[f] for f in RULE_FEATURES] for c in clips])
        self.mean = np.nanmean(table, axis=0)
        self.sd = np.where(np.nanstd(table, axis=0) > 0, np.nanstd(table, axis=0), 1.0)
        scores = self._scores(table)
        truth = np.array([c.label == self.marked_label for c in clips])
        candidates = np.unique(scores)
        accuracy = [np.mean((scores > t) == truth) for t in candidates]
        self.threshold = float(candidates[int(np.argmax(accuracy))])
        self.train_accuracy = float(max(accuracy))

    def _scores(self, table: np.ndarray) -> np.ndarray:
        return np.nan_to_num((table - self.mean) / self.sd).sum(axis=1)

    def decide(self, data: Mapping[str, Any]) -> tuple[str, float]:
        """Threshold the cue score; confidence grows with the distance from the threshold."""
        numbers = prosody_numbers(data.get("get_prosody_features"))
        score = float(self._scores(np.array([[numbers[f] for f in RULE_FEATURES]]))[0])
        if not any(math.isfinite(numbers[f]) for f in RULE_FEATURES):
            return self.other_label, 0.5
        confidence = 1 / (1 + math.exp(-abs(score - self.threshold)))
        return (self.marked_label if score > self.threshold else self.other_label), confidence


class ProbeAgent(_ToolThenAnswerAgent):
    """Logistic regression on the train split over TF-IDF text, prosody numbers, or both.

    The text is the context and the line (:func:`transcript_words`), as unigrams and bigrams.

    Args:
        env_id: The labelled-speech env to fit on (its ``train`` split, or ``train_split``).
        features: ``"text"``, ``"prosody"`` or ``"both"``.
        env_kwargs: Passed to the env (e.g. ``dataset``, ``data_dir``).
        train_split: Split the probe is fitted on.
    """

    name = "probe"
    required_tools = ("get_transcript", "get_prosody_features")  # fitting reads both

    def __init__(
        self,
        env_id: str = "affectgym/Sarcasm-v0",
        features: str = "both",
        env_kwargs: Mapping[str, Any] | None = None,
        train_split: str = "train",
    ):
        if features not in ("text", "prosody", "both"):
            raise ValueError(f"features must be 'text', 'prosody' or 'both', got {features!r}")
        self.features = features
        self.tools = {
            "text": ("get_transcript",),
            "prosody": ("get_prosody_features",),
            "both": ("get_transcript", "get_prosody_features"),
        }[features]
        clips, _ = collect_split(env_id, train_split, env_kwargs)
        self._fit(clips)

    def _fit(self, clips: Sequence[LabelledClip]) -> None:
        from sklearn.linear_model import LogisticRegression

        rows = [{"get_transcript": c.transcript, "get_prosody_features": c.prosody} for c in clips]
        self._vectorizer = None
        x = self._matrix(rows, fit=True)
        self.model = LogisticRegression(max_iter=2_000, C=1.0, class_weight="balanced").fit(x, [c.label for c in clips])

    def _matrix(self, rows: Sequence[Mapping[str, Any]], fit: bool = False) -> Any:
        from scipy import sparse
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.preprocessing import StandardScaler

        blocks = []
        if self.features in ("text", "both"):
            texts = [transcript_words(r.get("get_transcript")) for r in rows]
            if fit:
                self._vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=1, sublinear_tf=True)
                self._vectorizer.fit(texts)
            blocks.append(self._vectorizer.transform(texts))
        if self.features in ("prosody", "both"):
            table = np.array([[prosody_numbers(r.get("get_prosody_features"))[n] for n in PROSODY_FEATURES] for r in rows])
            if fit:
                self._fill = np.nan_to_num(np.nanmean(table, axis=0))
                self._scaler = StandardScaler().fit(np.where(np.isnan(table), self._fill, table))
            table = self._scaler.transform(np.where(np.isnan(table), self._fill, table))
            blocks.append(sparse.csr_matrix(table))
        return sparse.hstack(blocks).tocsr()

    def decide(self, data: Mapping[str, Any]) -> tuple[str, float]:
        """The probe's label and its predicted probability."""
        probabilities = self.model.predict_proba(self._matrix([data]))[0]
        best = int(np.argmax(probabilities))
        return str(self.model.classes_[best]), float(probabilities[best])


# ----------------------------------------------------------------------------- envs without labels
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


_INTENSITIES = re.compile(r"([a-z]+) (\d+(?:\.\d+)?) \(")


def read_intensities(line: str) -> np.ndarray:
    """The seven intensities of one ``anger 0.90 (intense), disgust 0.00 (none), ...`` line.

    >>> read_intensities("Current state: anger 0.90 (intense), joy 0.05 (none)").tolist()
    [0.9, 0.05]
    """
    return np.array([float(value) for _, value in _INTENSITIES.findall(line)])


class StateControllerAgent(Agent):
    """EmotionStateText-v0's LLM-free baseline: the proportional controller on the observation's
    ``Current state:`` and ``Target (...):`` lines, answered as the JSON object the env reads.

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

        return _env_class_problem(env, EmotionStateTextEnv, "EmotionStateText-v0's 'Current state:' and 'Target' lines")

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """The command for the current state and target, as ``{"anger": ..., ...}``."""
        from affectgym.emotions import EMOTIONS

        lines = {line.split(":", 1)[0]: line for line in observation.splitlines() if ":" in line}
        state = read_intensities(lines.get("Current state", ""))
        target_line = next((line for key, line in lines.items() if key.startswith("Target")), "")
        target = read_intensities(target_line.split(":", 1)[-1])
        if len(state) != len(EMOTIONS) or len(target) != len(EMOTIONS):
            raise ValueError(
                "the controller reads the 'Current state:' and 'Target (...):' lines of EmotionStateText-v0, "
                f"and the observation has no seven intensities there: {observation[:200]!r}"
            )
        command = proportional_command(state, target, self.gain)
        return json.dumps({name: round(float(v), 4) for name, v in zip(EMOTIONS, command, strict=True)})

    def describe(self) -> dict[str, Any]:
        """Class, name and gain."""
        return {**super().describe(), "gain": self.gain}


def _env_class_problem(env: Any, env_class: type, what: str) -> str | None:
    """None when ``env`` is an ``env_class`` (plug-in subclasses included), else what the agent reads."""
    if isinstance(env, env_class):
        return None
    return f"it reads {what} and the env is a {type(env).__name__}, not a {env_class.__name__}"


# ----------------------------------------------------------------------------- registration
class ByEnvKindAgent(Agent):
    """What a name that builds one agent class per env kind (``random``, ``controller``) declares.

    :func:`~affectgym.agents.registry.check_agent_supports` reads a registered name's class
    before anything is built. Such a name registers a subclass of this one: :attr:`by_kind`
    maps each env kind to the class its factory builds, and :meth:`env_problem` is that
    class's. It is never built itself.
    """

    env_kinds = ("text", "numeric")
    #: The class built for each env kind (:func:`~affectgym.envs.spaces.env_kind`).
    by_kind: ClassVar[Mapping[str, type[Agent]]] = {}

    @classmethod
    def class_for(cls, env: Any) -> type[Agent] | None:
        """The class built for ``env``'s kind, or None for a kind it does not play."""
        return cls.by_kind.get(env_kind(env))

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """The problem of the class built for ``env``."""
        chosen = cls.class_for(env)
        return f"it plays {' or '.join(cls.by_kind)} envs" if chosen is None else chosen.env_problem(env)


class RandomByEnvKind(ByEnvKindAgent):
    """``random``: :class:`RandomAgent` (a random label) on text envs, :class:`~affectgym.agents.policies.RandomPolicy` on numeric ones."""

    by_kind = {"text": RandomAgent, "numeric": RandomPolicy}


class ControllerByEnvKind(ByEnvKindAgent):
    """``controller``: :class:`StateControllerAgent` on text envs, :class:`~affectgym.agents.policies.ControllerPolicy` on numeric ones."""

    by_kind = {"text": StateControllerAgent, "numeric": ControllerPolicy}


class RecommendedBaseline(Agent):
    """What ``baseline`` declares: the agent the env recommends (its ``recommended_baseline``).

    Never built itself: its factory builds the recommended agent, and :meth:`env_problem` is
    that agent's, so :func:`~affectgym.agents.registry.check_agent_supports` checks it.
    """

    env_kinds = ("text", "numeric")

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """No recommendation, or the recommended agent's problem."""
        name = getattr(env, "recommended_baseline", None)
        if name is None:
            return "the env recommends no baseline (its class sets no recommended_baseline)"
        return agent_env_problem(name, env)


def _make_env(env_id: str, env_kwargs: Mapping[str, Any]) -> Any:
    import affectgym

    return affectgym.make(env_id, **dict(env_kwargs))


def _random(env_id: str, env_kwargs: Mapping[str, Any], **kwargs: Any) -> Agent:
    env = _make_env(env_id, env_kwargs)
    try:
        if RandomByEnvKind.class_for(env) is RandomPolicy:
            return RandomPolicy(env.action_space, **kwargs)
    finally:
        env.close()
    return RandomAgent(env_id, env_kwargs, **kwargs)


def _controller(env_id: str, env_kwargs: Mapping[str, Any], **kwargs: Any) -> Agent:
    env = _make_env(env_id, env_kwargs)
    chosen = ControllerByEnvKind.class_for(env)
    env.close()
    if chosen is None:
        raise ValueError(f"the 'controller' agent plays text and numeric envs, and {env_id} is neither (env_kind 'other')")
    return chosen(**kwargs)


def recommended_baseline(env_id: str) -> str | None:
    """The agent name the env behind ``env_id`` recommends (its ``recommended_baseline``), or None.

    >>> recommended_baseline("affectgym/EmotionStyle-v0")
    'style-lexicon'
    """
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    import affectgym  # noqa: F401  (registers the built-in envs and plugins)

    entry_point = gym.spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    return getattr(creator, "recommended_baseline", None)


def _recommended(env_id: str, env_kwargs: Mapping[str, Any], **kwargs: Any) -> Agent:
    name = recommended_baseline(env_id)
    if name is None:
        raise ValueError(
            f"{env_id} recommends no baseline (its class sets no recommended_baseline); "
            "name an agent instead, e.g. --agent majority for a labelling env"
        )
    return make_agent(name, env_id=env_id, env_kwargs=dict(env_kwargs), **kwargs)


def _baseline_factory(build: Any, name: str) -> Any:
    def factory(env_id: str | None = None, env_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> Agent:
        if env_id is None:
            raise ValueError(f"the {name!r} baseline fits itself on an env: pass env_id (affectgym eval does)")
        return build(env_id, dict(env_kwargs or {}), **kwargs)

    return factory


_BASELINES: dict[str, tuple[type[Agent], Any]] = {
    "baseline": (RecommendedBaseline, _recommended),
    "majority": (MajorityAgent, lambda env_id, env_kwargs, **kw: MajorityAgent(env_id, env_kwargs)),
    "random": (RandomByEnvKind, _random),
    "controller": (ControllerByEnvKind, _controller),
    "style-lexicon": (StyleLexiconAgent, lambda env_id, env_kwargs, **kw: StyleLexiconAgent()),
    "dialogue-template": (DialogueTemplateAgent, lambda env_id, env_kwargs, **kw: DialogueTemplateAgent()),
    "prosody-rule": (ProsodyRuleAgent, lambda env_id, env_kwargs, **kw: ProsodyRuleAgent(env_id, env_kwargs)),
    "probe": (ProbeAgent, lambda env_id, env_kwargs, **kw: ProbeAgent(env_id, kw.get("features", "both"), env_kwargs)),
    "probe-text": (ProbeAgent, lambda env_id, env_kwargs, **kw: ProbeAgent(env_id, "text", env_kwargs)),
    "probe-prosody": (ProbeAgent, lambda env_id, env_kwargs, **kw: ProbeAgent(env_id, "prosody", env_kwargs)),
    "protocol": (ProtocolAgent, lambda env_id, env_kwargs, **kw: ProtocolAgent(env_id, env_kwargs, **kw)),
}
for _name, (_class, _build) in _BASELINES.items():
    register_agent(_name, _baseline_factory(_build, _name), agent_class=_class)
