"""affectgym/EmotionStateText-v0: the emotion-state control task for language-model agents.

Same dynamics and reward as :class:`~affectgym.envs.emotion_state.EmotionStateEnv` (the
equations of :mod:`affectgym.envs.emotion_state.dynamics`, stepped by
:func:`~affectgym.envs.emotion_state.step_rows`), behind the
:class:`~affectgym.envs.core.AffectEnv` text contract.
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
)
from affectgym.envs.emotion_state.data import ARCS_FILE, DATA_DIR, DATA_PACKAGE, arcs_in_split
from affectgym.envs.state_text_format import (
    STATE_TEXT_FORMATS,
    StateTextFormat,
    intensity_word,
    parse_emotion_action,
    render_emotions,
)
from affectgym.envs.task_format import coerce_task_format
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


@dataclass(frozen=True)
class EmotionArcScenario:
    """One text episode: an arc of targets.

    Attributes:
        id: The arc's name.
        description: One line on the arc.
    """

    id: str
    description: str


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
    mutual-exclusion rules and reward, computed by the same equations
    (:mod:`affectgym.envs.emotion_state.dynamics`). Each observation gives a one-line situation for
    the current target, the state in words and numbers, the previous state and the target.

    ## Action Space

    Text: one JSON object with all seven emotions, numbers in [0, 1], e.g.
    ``{"anger": 0.1, "disgust": 0.0, "fear": 0.0, "joy": 0.8, "neutral": 0.1, "sadness": 0.0,
    "surprise": 0.2}``. Anything else gets an error message that names the problem and the
    accepted format, and the base's invalid-action penalty (0.05); it does not advance the
    state. There are no tools.

    ## Observation Space

    Text (see :meth:`first_observation`). The numbers it shows are also in every step's
    ``info``, for programs that play the env: ``info["state"]`` (the current intensities)
    and ``info["target"]`` (the target the next reply is scored against).

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
    - ``task_format``: how the state is shown and the action read: ``"default"`` |
      ``"state-only"`` (see :data:`~affectgym.envs.state_text_format.STATE_TEXT_FORMATS`) |
      a :class:`~affectgym.envs.state_text_format.StateTextFormat` | a mapping of its fields.
    - ``rubric``: a :class:`~affectgym.rewards.rubric.Rubric` of one's own (default: each
      reward component's mean over the episode, weighted as in the numeric env).
    - ``split``: ``"all"`` (default), ``"train"``, ``"validation"`` or ``"eval"`` (a fixed hash split of arcs).

    ## Version History

    * v0: Initial version.
    """

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
        task_format: StateTextFormat | str | Mapping[str, Any] | None = None,
        rubric: Rubric | None = None,
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
        self.task_format = coerce_task_format(task_format, StateTextFormat, STATE_TEXT_FORMATS)
        if rubric is not None and not isinstance(rubric, Rubric):
            raise ValueError(f"rubric must be None (the reward components' means) or a Rubric, got {rubric!r}")
        self.narratives = _load_narratives()
        self._batch = EmotionBatch(1)
        self._replays: BoundedMemo[tuple[str, tuple[tuple[float, ...], ...]], np.ndarray] = BoundedMemo(REPLAY_MEMO_ENTRIES)
        super().__init__(
            scenarios=self.arc_scenarios(split),
            rubric=rubric if rubric is not None else self.component_rubric(),
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
        """The task format's instructions: the task, the dynamics, the reward and the reply format."""
        return self.task_format.system_prompt(self.core.alpha, self.steps)

    def first_observation(self, scenario: Any) -> str:
        """The first user message: the scene and the first state."""
        start = self._start_state(scenario.id)
        return self._describe(scenario, 0, start, start)

    def parse_final(self, text: str) -> tuple[Any, str | None]:
        """The task format reads the JSON action (see :func:`parse_emotion_action`)."""
        return self.task_format.parse(text)

    def component_rubric(self) -> Rubric:
        """Mean of each reward component over the episode's steps, weighted as in the numeric env."""
        weights = dict(zip(COMPONENT_NAMES, self.core.weights.tolist(), strict=True))
        criteria = [
            Criterion(name, _ComponentMean(self, index), weight=weights[name])
            for index, name in enumerate(COMPONENT_NAMES)
            if name in self.core.component_names
        ]
        return Rubric(criteria=tuple(criteria))

    def score_bounds(self) -> tuple[float, float]:
        """The rubric's weights' negative and positive sums (every reward component is in [0, 1]), before
        the invalid-action penalty."""
        return self.rubric.without("invalid_actions").unit_bounds()

    def reference_answer(self, scenario: Any) -> tuple[str, Trace]:
        """Command the target at every step."""
        schedule = self.core.schedule_of(scenario.id)
        trace: Trace = [
            {"type": "control", "action": schedule[k].tolist()} for k in range(self.steps - 1)
        ]
        return _action_text(schedule[self.steps - 1]), trace

    def canaries(self, scenario: Any) -> dict[str, tuple[str | None, Trace]]:
        """Loud (all ones), silent (all zeros) and, on arcs that change target, frozen (the start) policies."""
        schedule = self.core.schedule_of(scenario.id)
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
        batch = self._batch
        batch.state[:] = batch.prev[:] = self._start_state(scenario.id)
        batch.target[:] = self.core.schedule_of(scenario.id)[0]
        batch.time[:] = 1.0
        return scenario

    def _start_state(self, arc_id: str) -> np.ndarray:
        """The arc's first target, constrained (the text env starts without noise): ``(7,)``."""
        return self.core.start_states(self.core.schedule_of(arc_id)[:1], np.random.default_rng(0))[0]

    def _control_steps(self) -> int:
        """State commands taken so far this episode (the trace's ``control`` entries)."""
        return sum(1 for entry in self.trace if entry["type"] == "control")

    def on_answer(self, reply: Reply) -> Continue | None:
        """A valid JSON action advances the state and pays ``r_t / steps``; the last control step ends the episode."""
        taken = self._control_steps()
        if taken + 1 >= self.steps:
            return None
        intensities = reply.answer
        components = self._advance(self._batch, self.core.schedule_of(self.scenario.id), taken, intensities)
        named = {
            name: float(components[COMPONENT_NAMES.index(name)])
            for name in self.core.component_names
        }
        return Continue(
            observation=self._describe(self.scenario, taken + 1, self._batch.state[0], self._batch.prev[0]),
            reward=float(np.dot(components, self.core.weights)) / self.steps,
            components=named,
            entry={"type": "control", "action": intensities.tolist()},
        )

    def episode_info(self, scenario: EmotionArcScenario) -> dict[str, Any]:
        """``state`` (the current intensities) and ``target`` (the one the next reply is scored
        against), the numbers the observation shows, for programs that play the env."""
        target = self.core.schedule_of(scenario.id)[min(self._control_steps(), self.steps - 1)]
        return {"state": self._batch.state[0].tolist(), "target": target.tolist()}

    def _advance(
        self, batch: EmotionBatch, schedule: np.ndarray, k: int, intensities: np.ndarray
    ) -> np.ndarray:
        batch.target[:] = schedule[k]
        self.core.step(batch, intensities.astype(np.float64)[None])
        return batch.components[0].copy()

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
        schedule = self.core.schedule_of(arc_id)
        batch = EmotionBatch(1)
        batch.state[:] = batch.prev[:] = self._start_state(arc_id)
        components = np.zeros((self.steps, len(COMPONENT_NAMES)))
        for k, action in enumerate(actions):
            components[k] = self._advance(batch, schedule, k, np.asarray(action))
        components.setflags(write=False)
        return components

    def _describe(self, scenario: Any, k: int, state: np.ndarray, previous: np.ndarray) -> str:
        arc = self.core.arcs[self.core.arc_ids[scenario.id]]
        names = self.core.target_names[arc.name]
        shown = min(k, self.steps - 1)
        target_name = names[shown]
        target = self.core.schedule_of(arc.name)[shown]
        segment = sum(1 for i in range(1, min(k, self.steps - 1) + 1) if names[i] != names[i - 1])
        lines = self.narratives.get(target_name, [""])
        situation = lines[zlib.crc32(f"{arc.name}/{segment}".encode()) % len(lines)]
        return self.task_format.observation(
            turn=k, steps=self.steps, scene=arc.description, situation=situation,
            state=state.tolist(), previous=previous.tolist(),
            target_name=target_name, target=target.tolist())


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
