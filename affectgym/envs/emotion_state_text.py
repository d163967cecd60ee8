"""affectgym/EmotionStateText-v0: the emotion-state control task for language-model agents.

Same dynamics and reward kernels as :class:`~affectgym.envs.emotion_state.EmotionStateEnv`,
behind the :class:`~affectgym.envs.core.AffectEnv` text contract.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, ClassVar

import numpy as np

from affectgym.envs.core import AffectEnv, Continue, Trace
from affectgym.envs.emotion_state import (
    COMPONENT_NAMES,
    EMOTIONS,
    NUM_EMOTIONS,
    EmotionBatch,
    EmotionStateCore,
    clip_actions,
    emotion_reward,
    emotion_transition,
)
from affectgym.envs.emotion_state.data import ARCS_FILE, DATA_DIR, DATA_PACKAGE, arcs_in_split
from affectgym.envs.parsing import NO_JSON_OBJECT, last_json_object
from affectgym.rewards.memo import BoundedMemo
from affectgym.rewards.rubric import Criterion, Reply, Rubric

NARRATIVES_FILE = "narratives.json"
# Text episodes are shorter than numeric ones (each step is a model call): the shipped arcs'
# segment lengths are scaled by this factor (at least 1 step each) ...
DEFAULT_STEP_SCALE = 0.2
DEFAULT_TEXT_STEPS = 12
# ... and the state moves faster, so a target is reachable within a segment of 2-6 steps.
DEFAULT_TEXT_ALPHA = 0.5
# Extra messages allowed beyond the control steps (invalid replies) before truncation.
DEFAULT_SPARE_TURNS = 4
REPLAY_MEMO_ENTRIES = 256  # episodes whose replayed reward components are remembered
_INTENSITY_WORDS = (
    (0.1, "none"),
    (0.3, "mild"),
    (0.6, "moderate"),
    (0.85, "strong"),
    (1.01, "intense"),
)


@dataclass(frozen=True)
class EmotionArcScenario:
    """One text episode: an arc of targets.

    Attributes:
        id: The arc's name.
        description: One line on the arc.
    """

    id: str
    description: str


def intensity_word(value: float) -> str:
    """Name an intensity in [0, 1].

    >>> [intensity_word(v) for v in (0.05, 0.2, 0.5, 0.7, 0.9)]
    ['none', 'mild', 'moderate', 'strong', 'intense']
    """
    return next(word for limit, word in _INTENSITY_WORDS if value < limit)


def render_emotions(values: Sequence[float]) -> str:
    """Render seven intensities in words and numbers, in the fixed emotion order.

    >>> render_emotions([0.9, 0, 0, 0.05, 0.3, 0, 0.5])[:48]
    'anger 0.90 (intense), disgust 0.00 (none), fear '
    """
    return ", ".join(
        f"{name} {float(v):.2f} ({intensity_word(float(v))})"
        for name, v in zip(EMOTIONS, values, strict=True)
    )


def parse_emotion_action(text: str) -> tuple[np.ndarray | None, str | None]:
    """Read a JSON action ``{"anger": 0.1, ...}`` with all seven emotions in [0, 1].

    The last JSON object of the text is read, by the rule every env shares
    (:func:`~affectgym.envs.parsing.last_json_object`); code fences and prose around it
    are ignored.

    Args:
        text: The agent's message.

    Returns:
        ``(intensities (7,), None)`` or ``(None, what was wrong and what is accepted)``.

    >>> action, error = parse_emotion_action('{"anger": 0, "disgust": 0, "fear": 0, "joy": 1, "neutral": 0, "sadness": 0, "surprise": 0.5}')
    >>> action.tolist(), error
    ([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.5], None)
    >>> parse_emotion_action('{"joy": 2}')[1][:40]
    'the JSON object is missing anger, disgus'
    """
    expected = "{" + ", ".join(f'"{name}": <number 0-1>' for name in EMOTIONS) + "}"
    data, problem = last_json_object(text)
    if data is None:
        accepted = f"one JSON object {expected}" if problem == NO_JSON_OBJECT else expected
        return None, f"{problem}; accepted: {accepted}"
    missing = [name for name in EMOTIONS if name not in data]
    extra = sorted(set(data) - set(EMOTIONS))
    problems = []
    if missing:
        problems.append("is missing " + ", ".join(missing))
    if extra:
        problems.append(
            "has unknown keys " + ", ".join(extra) + " (only the seven emotions are read)"
        )
    bad = [
        name
        for name in EMOTIONS
        if name in data
        and (
            isinstance(data[name], bool)
            or not isinstance(data[name], (int, float))
            or not 0.0 <= data[name] <= 1.0
        )
    ]
    if bad:
        problems.append("needs numbers in [0, 1] for " + ", ".join(bad))
    if problems:
        return None, f"the JSON object {'; '.join(problems)}; accepted: {expected}"
    return np.array([float(data[name]) for name in EMOTIONS]), None


def _scaled_arcs(step_scale: float) -> dict[str, Any]:
    ref = resources.files(DATA_PACKAGE).joinpath(*DATA_DIR, ARCS_FILE)
    data = json.loads(ref.read_text(encoding="utf-8"))
    for arc in data["arcs"].values():
        arc["segments"] = [
            [name, max(1, round(steps * step_scale))] for name, steps in arc["segments"]
        ]
    return data


def _load_narratives() -> dict[str, list[str]]:
    ref = resources.files(DATA_PACKAGE).joinpath(*DATA_DIR, NARRATIVES_FILE)
    return json.loads(ref.read_text(encoding="utf-8"))["lines"]


class EmotionStateTextEnv(AffectEnv):
    """Steer a 7-dimension emotion state along a target arc, one JSON message per step.

    ## Description

    The text form of ``affectgym/EmotionState-v0``: the same state (anger, disgust, fear,
    joy, neutral, sadness, surprise, each in [0, 1]), the same transition prior,
    mutual-exclusion rules and reward, computed by the same kernels
    (:mod:`affectgym.envs.emotion_state`). Each observation gives a one-line situation for
    the current target, the state in words and numbers, the previous state and the target.

    ## Action Space

    Text: one JSON object with all seven emotions, numbers in [0, 1], e.g.
    ``{"anger": 0.1, "disgust": 0.0, "fear": 0.0, "joy": 0.8, "neutral": 0.1, "sadness": 0.0,
    "surprise": 0.2}``. Anything else gets an error message that names the problem and the
    accepted format, and the base's invalid-action penalty (0.05); it does not advance the
    state. There are no tools.

    ## Observation Space

    Text (see :meth:`first_observation`).

    ## Rewards

    Each valid step pays ``r_t / steps`` where ``r_t`` is the numeric env's step reward
    (0.3 target_match + 0.3 smoothness + 0.4 intensity); ``info["reward_components"]`` holds
    the step's components. The episode score (the rubric, replayed from the trace) is the
    mean of each component over the ``steps`` steps, missing steps counting 0, minus the
    invalid-action penalties; the step rewards sum to it.

    ## Starting State

    Exactly the arc's first target (no noise, so the score is a pure function of the trace).
    The arc (scenario) is drawn with ``self.np_random`` or picked with
    ``options={"scenario_id": arc}``.

    ## Episode End

    The ``steps``-th valid action is the final answer (terminated); the earlier ones are
    state commands, each recorded in the trace as ``{"type": "control", "action": [...]}``.
    The episode is truncated after ``steps + 4`` messages.

    ## Arguments

    ```python
    >>> env = EmotionStateTextEnv()
    >>> text, info = env.reset(seed=0, options={"scenario_id": "good_news"})
    >>> "Target (calm):" in text, info["scenario_id"]
    (True, 'good_news')

    ```

    - ``steps`` (12): control steps per episode.
    - ``step_scale`` (0.2): factor on the shipped arcs' segment lengths.
    - ``alpha`` (0.5): weight of the new action (faster than the numeric env's 0.2, so
      targets are reachable in a few steps).
    - ``spare_turns`` (4): extra messages allowed for invalid replies.
    - ``reward_weights``, ``smoothness_scale``: as in the numeric env.
    - ``split``: ``"all"`` (default), ``"train"`` or ``"eval"`` (a fixed hash split of arcs).

    ## Version History

    * v0: Initial version.
    """

    score_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    #: The LLM-free agent ``affectgym eval --agent baseline`` plays: the proportional controller.
    recommended_baseline: ClassVar[str] = "controller"

    def __init__(
        self,
        *,
        steps: int = DEFAULT_TEXT_STEPS,
        step_scale: float = DEFAULT_STEP_SCALE,
        alpha: float = DEFAULT_TEXT_ALPHA,
        spare_turns: int = DEFAULT_SPARE_TURNS,
        reward_weights: Mapping[str, float] | None = None,
        smoothness_scale: float | None = None,
        split: str = "all",
        invalid_action_penalty: float = 0.05,
        render_mode: str | None = None,
    ):
        extra = {} if smoothness_scale is None else {"smoothness_scale": smoothness_scale}
        self.core = EmotionStateCore(
            alpha=alpha,
            max_episode_steps=steps,
            reward_weights=reward_weights,
            start_noise=0.0,
            arcs=_scaled_arcs(step_scale),
            **extra,
        )
        self.steps = int(steps)
        self.narratives = _load_narratives()
        self._batch = EmotionBatch(1)
        self._scratch = EmotionBatch(1)
        self._replays: BoundedMemo[tuple[str, tuple[tuple[float, ...], ...]], np.ndarray] = BoundedMemo(REPLAY_MEMO_ENTRIES)
        super().__init__(
            scenarios=self.arc_scenarios(split),
            rubric=self.component_rubric(),
            split=split,
            max_turns=self.steps + int(spare_turns),
            invalid_action_penalty=invalid_action_penalty,
            render_mode=render_mode,
        )

    # ----------------------------------------------------------------- AffectEnv API
    def arc_scenarios(self, split: str) -> list[EmotionArcScenario]:
        """The arcs of ``split``, as scenarios."""
        chosen = set(arcs_in_split([arc.name for arc in self.core.arcs], split))
        return [EmotionArcScenario(arc.name, arc.description) for arc in self.core.arcs if arc.name in chosen]

    def system_prompt(self, scenario: Any) -> str:
        """The task, the dynamics, the reward and the reply format."""
        keys = ", ".join(f'"{name}": 0.0' for name in EMOTIONS)
        return (
            "You steer an emotional state through a scene. The state has seven intensities in [0, 1]: "
            f"{', '.join(EMOTIONS)}. Each turn, reply with the intensities you want next as one JSON object "
            f"with all seven keys, e.g. {{{keys}}}.\n"
            f"The state does not jump to your reply: each emotion moves a fraction ({self.core.alpha:g}) of the "
            "way toward it per turn; some changes are slower (crossing from a negative to a positive emotion, "
            "calming down from anger or grief) or blocked (delight straight out of disgust). If anger + sadness "
            "exceed 1.2 both are cut by 30 %, and anger above 0.8 caps joy.\n"
            "Each turn you are scored on how close the state is to the target, whether the target's emotions "
            f"are expressed as strongly as asked, and how smoothly the state moves. The scene lasts {self.steps} turns."
        )

    def first_observation(self, scenario: Any) -> str:
        """The first user message: the scene and the first state."""
        return self._describe(scenario, 0)

    def parse_final(self, text: str) -> tuple[Any, str | None]:
        """Read the JSON action (see :func:`parse_emotion_action`)."""
        return parse_emotion_action(text)

    def component_rubric(self) -> Rubric:
        """Mean of each reward component over the episode's steps, weighted as in the numeric env."""
        weights = dict(zip(COMPONENT_NAMES, self.core.reward_table.weights.tolist(), strict=True))
        criteria = [
            Criterion(name, _ComponentMean(self, index), weight=weights[name])
            for index, name in enumerate(COMPONENT_NAMES)
            if name in self.core.component_names
        ]
        return Rubric(criteria=tuple(criteria))

    def reference_answer(self, scenario: Any) -> tuple[str, Trace]:
        """Command the target at every step."""
        schedule = self.core.schedules[self.core.arc_ids[scenario.id]]
        trace: Trace = [
            {"type": "control", "action": schedule[k].tolist()} for k in range(self.steps - 1)
        ]
        return _action_text(schedule[self.steps - 1]), trace

    def canaries(self, scenario: Any) -> dict[str, tuple[str | None, Trace]]:
        """Loud (all ones), silent (all zeros) and, on arcs that change target, frozen (the start) policies."""
        schedule = self.core.schedules[self.core.arc_ids[scenario.id]]
        policies = [("all_ones", np.ones(NUM_EMOTIONS)), ("all_zeros", np.zeros(NUM_EMOTIONS))]
        if np.any(schedule[: self.steps] != schedule[0]):
            policies.append(("frozen", schedule[0]))
        out: dict[str, tuple[str | None, Trace]] = {}
        for name, action in policies:
            trace: Trace = [
                {"type": "control", "action": action.tolist()} for _ in range(self.steps - 1)
            ]
            out[name] = (_action_text(action), trace)
        return out

    def fuzz_actions(self) -> list[str]:
        """Valid JSON actions for the checker's fuzzing."""
        return [_action_text(np.full(NUM_EMOTIONS, v)) for v in (0.0, 0.5, 1.0)]

    # ----------------------------------------------------------------- episode
    def start_episode(self, options: Mapping[str, Any]) -> EmotionArcScenario:
        """The arc of the reset options (or one drawn with ``np_random``); the state starts at its first target."""
        scenario = super().start_episode(options)
        first = self.core.schedules[self.core.arc_ids[scenario.id]][0]
        start = self.core.start_states(first[None], np.random.default_rng(0), self._scratch)
        batch = self._batch
        batch.state[:] = start
        batch.prev[:] = start
        batch.target[:] = first
        batch.time[:] = 1.0
        return scenario

    def on_answer(self, reply: Reply) -> Continue | None:
        """A valid JSON action advances the state and pays ``r_t / steps``; the last control step ends the episode."""
        taken = sum(1 for entry in self.trace if entry["type"] == "control")
        if taken + 1 >= self.steps:
            return None
        intensities = reply.answer
        components = self._advance(
            self._batch, self.core.schedules[self.core.arc_ids[self.scenario.id]], taken, intensities
        )
        named = {
            name: float(components[COMPONENT_NAMES.index(name)])
            for name in self.core.component_names
        }
        return Continue(
            observation=self._describe(self.scenario, taken + 1),
            reward=float(np.dot(components, self.core.reward_table.weights)) / self.steps,
            components=named,
            entry={"type": "control", "action": intensities.tolist()},
            info={"state": self._batch.state[0].tolist()},
        )

    def _advance(
        self, batch: EmotionBatch, schedule: np.ndarray, k: int, intensities: np.ndarray
    ) -> np.ndarray:
        batch.target[:] = schedule[k]
        clip_actions(intensities.astype(np.float32), batch.action[0])
        emotion_transition(batch, self.core.rise)
        return emotion_reward(batch, self.core.reward_table)[1][0].astype(np.float64)

    def replay(
        self, scenario: Any, reply: Reply, trace: Sequence[Mapping[str, Any]]
    ) -> np.ndarray:
        """Recompute the per-step components of an episode from its trace (pure).

        Args:
            scenario: The arc.
            reply: The final answer (its parsed action is the last step), ``Reply(None)``
                when unanswered.
            trace: The episode's trace (its ``control`` entries hold the earlier actions).

        Returns:
            ``(steps, 4)`` components, zero rows for steps never taken.
        """
        actions = [tuple(entry["action"]) for entry in trace if entry.get("type") == "control"]
        if reply.answer is not None:
            actions.append(tuple(reply.answer.tolist()))
        key = (scenario.id, tuple(actions[: self.steps]))
        cached = self._replays.get(key)
        if cached is None:
            cached = self._replay(*key)
            self._replays.put(key, cached)
        return cached

    def _replay(self, arc_id: str, actions: tuple[tuple[float, ...], ...]) -> np.ndarray:
        schedule = self.core.schedules[self.core.arc_ids[arc_id]]
        batch, scratch = EmotionBatch(1), EmotionBatch(1)
        start = self.core.start_states(schedule[0][None], np.random.default_rng(0), scratch)
        batch.state[:] = start
        batch.prev[:] = start
        components = np.zeros((self.steps, len(COMPONENT_NAMES)))
        for k, action in enumerate(actions):
            components[k] = self._advance(batch, schedule, k, np.asarray(action))
        components.setflags(write=False)
        return components

    def _describe(self, scenario: Any, k: int) -> str:
        arc = self.core.arcs[self.core.arc_ids[scenario.id]]
        names = self.core.target_names[arc.name]
        shown = min(k, self.steps - 1)
        target_name = names[shown]
        target = self.core.schedules[self.core.arc_ids[arc.name]][shown]
        segment = sum(1 for i in range(1, min(k, self.steps - 1) + 1) if names[i] != names[i - 1])
        lines = self.narratives.get(target_name, [""])
        situation = lines[zlib.crc32(f"{arc.name}/{segment}".encode()) % len(lines)]
        batch = self._batch
        return (
            f"Turn {k + 1} of {self.steps}. Scene: {arc.description}.\n"
            f"Situation: {situation}\n"
            f"Current state: {render_emotions(batch.state[0].tolist())}\n"
            f"Previous state: {render_emotions(batch.prev[0].tolist())}\n"
            f"Target ({target_name}): {render_emotions(target.tolist())}\n"
            "Reply with one JSON object giving all seven intensities you want next."
        )


class _ComponentMean:
    """Rubric criterion: the mean of one reward component over an episode's steps."""

    def __init__(self, env: EmotionStateTextEnv, index: int):
        self.env = env
        self.index = index

    def __call__(
        self, scenario: Any, reply: Reply, trace: Sequence[Mapping[str, Any]]
    ) -> float:
        return float(self.env.replay(scenario, reply, trace)[:, self.index].mean())


def _action_text(values: Sequence[float]) -> str:
    return json.dumps({name: round(float(v), 4) for name, v in zip(EMOTIONS, values, strict=True)})


__all__ = [
    "EmotionArcScenario",
    "EmotionStateTextEnv",
    "intensity_word",
    "parse_emotion_action",
    "render_emotions",
]
