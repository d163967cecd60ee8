"""The labelled-speech envs' baselines, which need no language model.

* ``majority`` -- always the most frequent label of the train split, confidence = its share;
* ``random`` -- a uniformly random label, confidence 1/K;
* ``prosody-rule`` -- calls the prosody tool and thresholds pitch range, pitch variability
  and pauses (as z-scores against the train split), the threshold fitted on the train split;
* ``probe`` -- a scikit-learn logistic regression over TF-IDF of the transcript's words
  (``features="text"``), the prosody numbers (``"prosody"``) or both (``"both"``, default),
  trained on the train split;
* ``feature-probe`` -- a logistic regression over *every* number the prosody tool returns
  (``features="tools"``: each measurement, and each one relative to the speaker's own
  baseline where the env gives it), fitted on the train split: the ceiling of what the
  tools carry, against which a model that reads the same tools is measured.

Fitting reads the train split through the public contract: each clip is reset by id, the
tools are called, and the gold label comes from ``info["outcome"]`` after an answer, as a
supervised learner would see it. The tools' results are read as data (``info["tool_data"]``:
the transcript's lines, the measurements by name), never parsed from the text the model reads.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from affectgym.agents.base import Agent, tool_call_text
from affectgym.envs.label_format import final_answer

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


def tool_numbers(data: Mapping[str, Any] | None) -> dict[str, float]:
    """Every number of ``get_prosody_features``' data by its name (booleans and text left out; ``None`` as NaN).

    >>> tool_numbers({"f0_range_st": 13.7, "f0_range_st_vs_speaker": -0.4, "backend": "praat", "hnr_db": None})
    {'f0_range_st': 13.7, 'f0_range_st_vs_speaker': -0.4, 'hnr_db': nan}
    """
    numbers = {}
    for name, value in (data or {}).items():
        if value is None:
            numbers[name] = math.nan
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            numbers[name] = float(value)
    return numbers


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
        features: ``"text"``, ``"prosody"`` (:data:`PROSODY_FEATURES`), ``"both"``, or
            ``"tools"`` (every number of the prosody tool, :func:`tool_numbers`; the
            ``feature-probe`` baseline).
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
        if features not in ("text", "prosody", "both", "tools"):
            raise ValueError(f"features must be 'text', 'prosody', 'both' or 'tools', got {features!r}")
        self.features = features
        self.tools = {
            "text": ("get_transcript",),
            "prosody": ("get_prosody_features",),
            "both": ("get_transcript", "get_prosody_features"),
            "tools": ("get_prosody_features",),
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
        if self.features in ("prosody", "both", "tools"):
            numbers = [(tool_numbers if self.features == "tools" else prosody_numbers)(r.get("get_prosody_features"))
                       for r in rows]
            if fit:
                self._columns = sorted({name for row in numbers for name in row}) if self.features == "tools" \
                    else list(PROSODY_FEATURES)
            table = np.array([[row.get(name, math.nan) for name in self._columns] for row in numbers], float)
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


__all__ = [
    "PROSODY_FEATURES",
    "RULE_FEATURES",
    "LabelAnswerAgent",
    "LabelledClip",
    "MajorityAgent",
    "ProbeAgent",
    "ProsodyRuleAgent",
    "RandomAgent",
    "collect_split",
    "prosody_numbers",
    "tool_numbers",
    "transcript_words",
]
