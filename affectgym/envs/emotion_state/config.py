"""The options of the emotion-state environments, and what they load.

:class:`EmotionStateConfig` is what a user sets (every field is a keyword argument of
``gym.make("affectgym/EmotionState-v0", ...)`` and of the vector env); :class:`EmotionStateCore`
loads and checks the data it names once for the single, vector and text environments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np

from affectgym.envs.emotion_state.batch import DTYPE, OBS_SIZE, EmotionBatch, step_rows
from affectgym.envs.emotion_state.data import (
    SPLITS,
    EmotionArc,
    arcs_in_split,
    load_arcs,
    load_transition_prior,
)
from affectgym.envs.emotion_state.dynamics import (
    COMPONENT_NAMES,
    DEFAULT_ALPHA,
    DEFAULT_SMOOTHNESS_SCALE,
    NUM_EMOTIONS,
    EmotionRewardWeights,
    exclusion_rules,
)

DEFAULT_MAX_EPISODE_STEPS = 60
# Half-width of the uniform noise on the starting state, in intensity units.
DEFAULT_START_NOISE = 0.05


@dataclass(frozen=True)
class EmotionStateConfig:
    """Options of the emotion-state environments; each field is also a ``gym.make`` keyword.

    ``reward_weights`` accepts a mapping of component weights (or None for the defaults) and
    is stored as :class:`EmotionRewardWeights`; ``arc_names`` is stored as a tuple.

    >>> config = EmotionStateConfig.build(alpha=0.5, reward_weights={"diversity": 0.1})
    >>> config.alpha, config.max_episode_steps, config.reward_weights.diversity
    (0.5, 60, 0.1)
    >>> EmotionStateConfig.build(config, steps=5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: unknown emotion-state option(s) ['steps']; accepted: alpha, max_episode_steps, ...
    """

    alpha: float = field(
        default=DEFAULT_ALPHA,
        metadata={"help": "weight of the new action in the moving average, in (0, 1]"},
    )
    max_episode_steps: int = field(
        default=DEFAULT_MAX_EPISODE_STEPS, metadata={"help": "step limit, >= 1"}
    )
    include_time: bool = field(
        default=True, metadata={"help": "append the remaining-steps fraction to the observation"}
    )
    reward_weights: EmotionRewardWeights = field(
        default_factory=EmotionRewardWeights,
        metadata={"help": "component weights (EmotionRewardWeights or a mapping of them)"},
    )
    smoothness_scale: float = field(
        default=DEFAULT_SMOOTHNESS_SCALE,
        metadata={"help": "mean change per step at which smoothness is 0.5, > 0"},
    )
    start_noise: float = field(
        default=DEFAULT_START_NOISE,
        metadata={"help": "half-width of the uniform noise on the starting state, in [0, 0.5]"},
    )
    transition_prior: str | PathLike[str] | Mapping[str, Any] | None = field(
        default=None, metadata={"help": "prior JSON (path or mapping); None for the shipped file"}
    )
    arcs: str | PathLike[str] | Mapping[str, Any] | None = field(
        default=None, metadata={"help": "arcs JSON (path or mapping); None for the shipped file"}
    )
    arc_names: tuple[str, ...] | None = field(
        default=None, metadata={"help": "restrict the arcs drawn at reset to these names, in order"}
    )
    split: str = field(
        default="all",
        metadata={"help": "arcs served: 'all', or the 'train', 'validation' or 'eval' part of a fixed split by arc name"},
    )

    def __post_init__(self) -> None:
        if int(self.max_episode_steps) < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {self.max_episode_steps!r}")
        if not 0.0 <= self.start_noise <= 0.5:
            raise ValueError(f"start_noise must be in [0, 0.5], got {self.start_noise!r}")
        if self.split not in SPLITS:
            raise ValueError(f"split {self.split!r} is not available; accepted: {', '.join(map(repr, SPLITS))}")
        # Frozen: normalise the two fields that accept several forms, once, here.
        object.__setattr__(self, "reward_weights", EmotionRewardWeights.coerce(self.reward_weights))
        if self.arc_names is not None:
            object.__setattr__(self, "arc_names", tuple(self.arc_names))

    @classmethod
    def build(cls, config: EmotionStateConfig | None = None, **options: Any) -> EmotionStateConfig:
        """Return ``config`` (the defaults when None) with the given fields replaced.

        Args:
            config: A starting configuration, or None.
            **options: Field values (the keyword arguments of ``gym.make``).

        Returns:
            The configuration.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise TypeError(
                f"unknown emotion-state option(s) {unknown}; accepted: {', '.join(names)}"
            )
        return dataclasses.replace(config or cls(), **options)


class EmotionStateCore:
    """An :class:`EmotionStateConfig` loaded for the single, vector and text environments.

    It loads and checks the prior and arcs, holds the dynamics' and reward's parameters and
    precomputes each arc's target schedule; it owns no episode state.

    Args:
        config: The options (None for the defaults).
        **options: Fields of :class:`EmotionStateConfig` that override ``config``'s.
    """

    def __init__(self, config: EmotionStateConfig | None = None, **options: Any):
        config = self.config = EmotionStateConfig.build(config, **options)
        self.alpha = float(config.alpha)
        self.max_episode_steps = int(config.max_episode_steps)
        # Remaining-steps fraction shown after k steps, k = 0 .. max_episode_steps.
        self.time_left = (
            1.0 - np.arange(self.max_episode_steps + 1) / self.max_episode_steps
        ).astype(DTYPE)
        self.time_left.setflags(write=False)
        self.include_time = bool(config.include_time)
        self.obs_size = OBS_SIZE if self.include_time else OBS_SIZE - 1
        self.start_noise = float(config.start_noise)
        self.multipliers = checked_multipliers(load_transition_prior(config.transition_prior), self.alpha)
        if not config.smoothness_scale > 0:
            raise ValueError(f"smoothness_scale must be > 0, got {config.smoothness_scale!r}")
        self.smoothness_scale = float(config.smoothness_scale)
        self.reward_weights = config.reward_weights
        #: The reward weights as a float64 array in ``COMPONENT_NAMES`` order.
        self.weights = self.reward_weights.as_array()
        self.component_names = tuple(
            name
            for name, w in zip(COMPONENT_NAMES, self.weights, strict=True)
            if name != "diversity" or w > 0
        )
        all_arcs = load_arcs(config.arcs)
        arc_names = config.arc_names
        if arc_names is not None:
            missing = [name for name in arc_names if name not in all_arcs]
            if missing or not arc_names:
                raise ValueError(
                    f"arc_names {list(arc_names)!r}: unknown {missing}; available: {list(all_arcs)}"
                )
            all_arcs = {name: all_arcs[name] for name in arc_names}
        in_split = arcs_in_split(list(all_arcs), config.split)
        if not in_split:
            raise ValueError(f"split {config.split!r} holds none of the arcs {list(all_arcs)}; use split='all'")
        all_arcs = {name: all_arcs[name] for name in in_split}
        self.arcs: tuple[EmotionArc, ...] = tuple(all_arcs.values())
        self.arc_ids = {arc.name: i for i, arc in enumerate(self.arcs)}
        self.schedules = np.stack(
            [arc.schedule(self.max_episode_steps) for arc in self.arcs]
        ).astype(DTYPE)
        self.schedules.setflags(write=False)
        # Per arc: the schedule's rows as a list (indexing a list is cheaper than an array)
        # and whether row k differs from row k - 1 (the env copies a target only then).
        self.schedule_rows = [list(schedule) for schedule in self.schedules]
        self.schedule_changes = [
            [True] + [bool(np.any(schedule[i] != schedule[i - 1])) for i in range(1, len(schedule))]
            for schedule in self.schedules
        ]
        self.target_names = {
            arc.name: arc.segment_names(self.max_episode_steps) for arc in self.arcs
        }

    def schedule_of(self, arc: str) -> np.ndarray:
        """The target of each step of the arc named ``arc``: ``(max_episode_steps + 1, 7)``, read-only."""
        return self.schedules[self.arc_ids[arc]]

    def step(self, batch: EmotionBatch, actions: np.ndarray) -> None:
        """Step every row of ``batch`` toward its ``(num_envs, 7)`` action with this config's dynamics
        and reward (:func:`~affectgym.envs.emotion_state.batch.step_rows`, in place)."""
        step_rows(batch.rows, actions, self.multipliers, self.alpha, self.smoothness_scale, self.weights,
                  batch.reward, batch.components, batch.invalid)

    def arc_index(self, options: Mapping[str, Any] | None, rng: np.random.Generator) -> int:
        """Pick an arc: ``options["arc"]`` (or ``options["scenario_id"]``, the name every
        affectgym env and the eval runner use) if given, else uniformly with ``rng``.

        Args:
            options: Reset options, possibly with ``"arc"`` or ``"scenario_id"``.
            rng: The env's random generator.

        Returns:
            The arc's index in :attr:`arcs`.
        """
        name = (options or {}).get("arc", (options or {}).get("scenario_id"))
        if name is not None:
            if name not in self.arc_ids:
                raise ValueError(
                    f"reset option arc/scenario_id {name!r} is not an arc of this env; available: {list(self.arc_ids)}"
                )
            return self.arc_ids[name]
        return int(rng.integers(len(self.arcs)))

    def start_states(self, first_targets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw starting states near the arcs' first targets.

        Each start is ``exclusion_rules(clip(target + noise, 0, 1))``, the noise uniform in
        ``[-start_noise, start_noise]`` per emotion.

        Args:
            first_targets: ``(k, 7)`` first targets.
            rng: The env's random generator (the only source of randomness).

        Returns:
            ``(k, 7)`` starting states, float32 as the observations.
        """
        noise = rng.uniform(-self.start_noise, self.start_noise, first_targets.shape)
        return exclusion_rules(np.clip(first_targets + noise, 0.0, 1.0)).astype(DTYPE)


def checked_multipliers(multipliers: np.ndarray, alpha: float) -> np.ndarray:
    """Check a transition prior's rise-rate multipliers against the smoothing weight.

    Args:
        multipliers: ``multipliers[i, j]`` scales how fast emotion ``j`` rises while emotion
            ``i`` makes up the state; >= 0, 0 forbids the rise.
        alpha: Weight of the new action in the exponential moving average, in (0, 1].

    Returns:
        The multipliers as a ``(7, 7)`` float64 array.

    Raises:
        ValueError: Wrong shape, a negative or non-finite multiplier, ``alpha`` outside
            (0, 1], or ``alpha`` times the largest multiplier above 1 (the state would
            overshoot the action).

    >>> checked_multipliers(np.full((7, 7), 2.0), 0.2).shape
    (7, 7)
    >>> checked_multipliers(np.full((7, 7), 2.0), 0.6)
    Traceback (most recent call last):
    ...
    ValueError: alpha * largest multiplier = 1.2 > 1 would overshoot the action; lower alpha or the multipliers so their product is at most 1
    """
    multipliers = np.array(multipliers, dtype=np.float64)
    if multipliers.shape != (NUM_EMOTIONS, NUM_EMOTIONS):
        raise ValueError(f"transition multipliers must be 7 x 7, got shape {multipliers.shape}")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha (weight of the new action) must be in (0, 1], got {alpha!r}")
    if not np.all(np.isfinite(multipliers)) or multipliers.min() < 0:
        raise ValueError("transition multipliers must be finite and >= 0")
    if alpha * multipliers.max() > 1.0:
        raise ValueError(
            f"alpha * largest multiplier = {alpha * multipliers.max():.3g} > 1 would overshoot "
            "the action; lower alpha or the multipliers so their product is at most 1"
        )
    return multipliers
