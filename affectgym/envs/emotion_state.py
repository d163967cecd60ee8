"""affectgym/EmotionState-v0: steer a 7-dimension emotion state smoothly along target arcs.

The module holds the environment class and, at module level, the one implementation of its
dynamics (:func:`emotion_transition`, :func:`constrain_emotions`) and reward
(:func:`emotion_reward`). They are plain numpy functions over an :class:`EmotionBatch` (arrays
with a leading batch dimension), so the single environment (a batch of one), the native
vector environment (:mod:`affectgym.envs.emotion_state_vector`) and the text environment all
step and score through the same code.

The design follows the emotion-state article in ``seeds/002`` (an EMOTRON-3B write-up) with
its mechanics kept and its mistakes fixed; each departure is documented in
:class:`EmotionStateEnv`'s docstring.

Why the kernels look the way they do: for a batch of one, each numpy call costs far more than
its arithmetic (about 0.3-0.5 us), and a call that broadcasts, casts, masks with ``where=`` or
writes over an overlapping view costs two to four times that. So every affine map of a step
is folded into one matrix product over a packed row that carries a constant 1, all arrays are
float32 (the action's dtype), and every view and scratch array is made once in
:class:`EmotionBatch`. A step is about 20 numpy calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from importlib import resources
from os import PathLike
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces

try:  # The clip ufunc itself: np.clip wraps it in Python checks costing ~1.5 us per call.
    from numpy._core.umath import clip as _clip_ufunc
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip_ufunc  # type: ignore[no-redef]

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

EMOTIONS: tuple[str, ...] = ("anger", "disgust", "fear", "joy", "neutral", "sadness", "surprise")
NUM_EMOTIONS = len(EMOTIONS)
ANGER, DISGUST, FEAR, JOY, NEUTRAL, SADNESS, SURPRISE = range(NUM_EMOTIONS)

# Layout of the packed per-env row. The observation is its first 22 entries (21 without the
# time entry); a constant 1 and the commanded action follow, so affine maps of a step are one
# matrix product.
STATE_SLICE = slice(0, 7)
TARGET_SLICE = slice(7, 14)
PREV_SLICE = slice(14, 21)
TIME_INDEX = 21
OBS_SIZE = 22
CONST_INDEX = 22
ACTION_SLICE = slice(23, 30)
PACKED_SIZE = 30

DTYPE = np.float32

# Mutual exclusion (seeds/002): joy is capped once anger exceeds this intensity ...
ANGER_JOY_THRESHOLD = 0.8
# ... and when anger + sadness exceed this sum, both are scaled by the factor below.
ANGER_SADNESS_LIMIT = 1.2
ANGER_SADNESS_SCALE = 0.7

# Weight of the uniform floor when the state's composition mixes the rise-rate rows: keeps
# the mix defined (the column mean of the prior) when the state is all zeros.
_COMPOSITION_FLOOR = 0.01

COMPONENT_NAMES: tuple[str, ...] = ("target_match", "smoothness", "intensity", "diversity")
_MATCH, _SMOOTH, _INTENSITY, _DIVERSITY = range(len(COMPONENT_NAMES))
# Largest variance of a vector with entries in [0, 1] is 1/4 (half zeros, half ones).
_MAX_VARIANCE = 0.25

DEFAULT_ALPHA = 0.2
DEFAULT_MAX_EPISODE_STEPS = 60
DEFAULT_SMOOTHNESS_SCALE = 0.05
DEFAULT_START_NOISE = 0.05

_DATA_PACKAGE = "affectgym"
_DATA_DIR = ("data", "emotion_state")
PRIOR_FILE = "transition_prior.json"
ARCS_FILE = "arcs.json"

# 0-d constants: a Python float argument costs a conversion on every call.
_ZERO = np.array(0.0, dtype=DTYPE)
_ONE = np.array(1.0, dtype=DTYPE)
# numpy functions bound once: the kernels below are called ~100,000 times a second, and a
# module global is one lookup where ``np.dot`` is two.
_add, _copyto, _divide, _dot = np.add, np.copyto, np.divide, np.dot
_greater, _maximum, _minimum, _multiply = np.greater, np.maximum, np.minimum, np.multiply

# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmotionRewardWeights:
    """Weights of the reward components; the reward is their weighted sum.

    The article's hybrid reward is 0.4 intensity + 0.3 smoothness + 0.3 target match, with an
    optional 0.1 diversity bonus. Diversity is off by default (see :class:`EmotionStateEnv`).

    >>> EmotionRewardWeights().as_array().tolist()
    [0.3, 0.3, 0.4, 0.0]
    """

    target_match: float = field(
        default=0.3, metadata={"help": "weight of 1 - mean |state - target|"}
    )
    smoothness: float = field(
        default=0.3, metadata={"help": "weight of 1 / (1 + mean |change| / scale)"}
    )
    intensity: float = field(default=0.4, metadata={"help": "weight of the target coverage"})
    diversity: float = field(default=0.0, metadata={"help": "weight of 4 * variance(state)"})

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(
                    f"reward weight {f.name!r} must be a finite number >= 0, got {value!r}"
                )

    def as_array(self) -> np.ndarray:
        """Return the weights in :data:`COMPONENT_NAMES` order as a float64 array."""
        return np.array([getattr(self, name) for name in COMPONENT_NAMES], dtype=np.float64)

    @classmethod
    def coerce(
        cls, value: EmotionRewardWeights | Mapping[str, float] | None
    ) -> EmotionRewardWeights:
        """Build weights from ``None`` (defaults), a mapping of component names, or weights.

        Args:
            value: The weights, a mapping with any of the keys in :data:`COMPONENT_NAMES`, or None.

        Returns:
            An :class:`EmotionRewardWeights`.
        """
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - set(COMPONENT_NAMES)
            if unknown:
                raise ValueError(
                    f"reward_weights has unknown keys {sorted(unknown)}; accepted: {list(COMPONENT_NAMES)}"
                )
            return cls(**{k: float(v) for k, v in value.items()})
        raise TypeError(
            f"reward_weights must be EmotionRewardWeights, a mapping or None, got {type(value).__name__}"
        )


class RiseTable(NamedTuple):
    """A transition prior and smoothing weight compiled for :func:`emotion_transition`.

    ``weights`` (30 x 28) maps a packed row to ``[ema (7), delta (7), num (7), den (7)]``:
    ``ema = (1 - alpha) p + alpha a``, ``delta = a - p``, and ``num / den`` is the composition-
    weighted ``alpha * (multiplier - 1)``, i.e. the rise rate minus ``alpha``. ``p`` is the
    state before the step (already copied to the previous-state slot), ``a`` the action.
    """

    weights: np.ndarray


def compile_rise_table(multipliers: np.ndarray, alpha: float) -> RiseTable:
    """Compile a 7 x 7 rise-rate multiplier matrix and the smoothing weight into a table.

    Args:
        multipliers: ``multipliers[i, j]`` scales how fast emotion ``j`` rises while emotion
            ``i`` makes up the state; >= 0, 0 forbids the rise.
        alpha: Weight of the new action in the exponential moving average, in (0, 1].

    Returns:
        The :class:`RiseTable`.

    >>> compile_rise_table(np.ones((7, 7)), 0.2).weights.shape
    (30, 28)
    """
    multipliers = np.asarray(multipliers, dtype=np.float64)
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
    n = NUM_EMOTIONS
    eye = np.eye(n)
    w = np.zeros((PACKED_SIZE, 4 * n))
    w[PREV_SLICE, 0:n] = (1.0 - alpha) * eye
    w[ACTION_SLICE, 0:n] = alpha * eye
    w[ACTION_SLICE, n : 2 * n] = eye
    w[PREV_SLICE, n : 2 * n] = -eye
    excess = alpha * (multipliers - 1.0)
    w[PREV_SLICE, 2 * n : 3 * n] = excess
    w[CONST_INDEX, 2 * n : 3 * n] = _COMPOSITION_FLOOR * excess.sum(axis=0)
    w[PREV_SLICE, 3 * n : 4 * n] = 1.0
    w[CONST_INDEX, 3 * n : 4 * n] = _COMPOSITION_FLOOR * n
    return RiseTable(w.astype(DTYPE))


def _constraint_matrix() -> np.ndarray:
    """Map a packed row to ``[excess (7), cap (7), scaled (7)]`` for :func:`constrain_emotions`.

    ``excess`` is ``anger + sadness - 1.2`` in the anger and sadness columns and -1 elsewhere;
    ``cap`` is ``(1 - anger) / 0.2`` in the joy column and 1 elsewhere; ``scaled`` is
    ``0.7 * state``.
    """
    n = NUM_EMOTIONS
    m = np.zeros((PACKED_SIZE, 3 * n))
    m[CONST_INDEX, 0:n] = -1.0
    for column in (ANGER, SADNESS):
        m[ANGER, column] = m[SADNESS, column] = 1.0
        m[CONST_INDEX, column] = -ANGER_SADNESS_LIMIT
    slope = 1.0 / (1.0 - ANGER_JOY_THRESHOLD)
    m[CONST_INDEX, n : 2 * n] = 1.0
    m[ANGER, n + JOY] = -slope
    m[CONST_INDEX, n + JOY] = slope
    m[STATE_SLICE, 2 * n : 3 * n] = ANGER_SADNESS_SCALE * np.eye(n)
    return m.astype(DTYPE)


_CONSTRAINTS = _constraint_matrix()


# --------------------------------------------------------------------------------------------
# Dynamics and reward: the one implementation, batched
# --------------------------------------------------------------------------------------------


class EmotionBatch:
    """Arrays for a batch of emotion-state environments, allocated once.

    ``packed`` holds one float32 row per environment: ``[state (7), target (7), previous state
    (7), remaining-steps fraction, 1, action (7)]``; the observation is its first 21 or 22
    entries. The other attributes are views into it and scratch arrays for the kernels.

    Args:
        num_envs: Batch size.

    >>> batch = EmotionBatch.from_arrays([[0.5] * 7], target=[[0.5] * 7])
    >>> batch.packed.shape, batch.state.tolist() == batch.prev.tolist()
    ((1, 30), True)
    """

    __slots__ = (
        "num_envs", "packed", "state", "target", "prev", "time", "action",
        "mix", "ema", "delta", "num", "den", "rise_excess",
        "rules", "pair_excess", "joy_cap", "scaled", "over",
        "parts", "positive", "fractions", "numerators", "denominators", "components", "diversity",
        "reward", "transition_views", "constraint_views", "reward_views",
    )  # fmt: skip

    def __init__(self, num_envs: int):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs!r}")
        n = self.num_envs = int(num_envs)
        k = NUM_EMOTIONS
        packed = self.packed = np.zeros((n, PACKED_SIZE), dtype=DTYPE)
        packed[:, CONST_INDEX] = 1.0
        self.state = packed[:, STATE_SLICE]
        self.target = packed[:, TARGET_SLICE]
        self.prev = packed[:, PREV_SLICE]
        self.time = packed[:, TIME_INDEX]
        self.action = packed[:, ACTION_SLICE]
        # Transition scratch: [ema, delta, num, den].
        self.mix = np.empty((n, 4 * k), dtype=DTYPE)
        self.ema, self.delta, self.num, self.den = (
            self.mix[:, i * k : (i + 1) * k] for i in range(4)
        )
        self.rise_excess = np.empty((n, k), dtype=DTYPE)
        # Constraint scratch: [excess, cap, scaled].
        self.rules = np.empty((n, 3 * k), dtype=DTYPE)
        self.pair_excess, self.joy_cap, self.scaled = (
            self.rules[:, i * k : (i + 1) * k] for i in range(3)
        )
        self.over = np.empty((n, k), dtype=bool)
        # Reward scratch.
        self.parts = np.empty((n, _PARTS_SIZE), dtype=DTYPE)
        self.positive = self.parts[:, : 2 * k]
        self.fractions = np.empty((n, _FRACTION_SIZE), dtype=DTYPE)
        self.numerators = self.fractions[:, : len(COMPONENT_NAMES)]
        self.denominators = self.fractions[:, len(COMPONENT_NAMES) :]
        self.components = np.empty((n, len(COMPONENT_NAMES)), dtype=DTYPE)
        self.diversity = self.components[:, _DIVERSITY]
        self.reward = np.empty(n, dtype=DTYPE)
        # What each kernel needs, in one tuple (one attribute lookup per kernel call).
        self.transition_views = (packed, self.state, self.prev, self.mix, self.num, self.den,
                                 self.rise_excess, self.delta, self.ema)  # fmt: skip
        self.constraint_views = (packed, self.state, self.rules, self.pair_excess, self.over,
                                 self.scaled, self.joy_cap)  # fmt: skip
        self.reward_views = (packed, self.parts, self.positive, self.fractions, self.numerators,
                             self.denominators, self.components, self.reward)  # fmt: skip

    @classmethod
    def from_arrays(
        cls,
        state: np.ndarray | Sequence[Sequence[float]],
        target: np.ndarray | Sequence[Sequence[float]] | None = None,
        prev: np.ndarray | Sequence[Sequence[float]] | None = None,
    ) -> EmotionBatch:
        """Build a batch from ``(batch, 7)`` states (and optionally targets and previous states).

        Args:
            state: Current intensities.
            target: Targets; zeros when None.
            prev: Previous states; equal to ``state`` when None.

        Returns:
            The batch.
        """
        state = np.asarray(state, dtype=DTYPE)
        if state.ndim != 2 or state.shape[1] != NUM_EMOTIONS:
            raise ValueError(f"state must have shape (batch, 7), got {state.shape}")
        batch = cls(state.shape[0])
        batch.state[:] = state
        batch.prev[:] = state if prev is None else prev
        if target is not None:
            batch.target[:] = target
        return batch


def constrain_emotions(batch: EmotionBatch) -> None:
    """Apply the mutual-exclusion rules to ``batch.state``, in place.

    Both rules read the state as it was before either applies:

    1. if anger + sadness > 1.2, both are multiplied by 0.7 (the article's rule, once per
       step: an agent cannot hold both high);
    2. joy is capped at ``(1 - anger) / (1 - 0.8)``: no effect while anger <= 0.8, then the
       cap falls linearly to 0 at anger = 1. The article only says anger > 0.8 "suppresses"
       joy; a cap that starts at 1 avoids a jump at the threshold.

    Args:
        batch: The batch; its ``state`` is modified (entries must be in [0, 1]).

    >>> batch = EmotionBatch.from_arrays([[0.9, 0, 0, 0.9, 0, 0.5, 0], [0.95, 0, 0, 0.9, 0, 0, 0]])
    >>> constrain_emotions(batch)
    >>> batch.state.astype(float).round(2).tolist()
    [[0.63, 0.0, 0.0, 0.5, 0.0, 0.35, 0.0], [0.95, 0.0, 0.0, 0.25, 0.0, 0.0, 0.0]]
    """
    packed, state, rules, pair_excess, over, scaled, joy_cap = batch.constraint_views
    _dot(packed, _CONSTRAINTS, rules)
    _greater(pair_excess, _ZERO, over)
    _copyto(state, scaled, where=over)
    _minimum(state, joy_cap, out=state)


def clip_actions(action: np.ndarray, out: np.ndarray) -> None:
    """Write commanded intensities, clipped to [0, 1], into a batch's action slot.

    Args:
        action: The actions, shaped like ``out``.
        out: ``batch.action`` (``(batch, 7)``), or for a batch of one its row
            ``batch.action[0]``: writing a ``(7,)`` action into a ``(7,)`` view avoids a
            broadcast that costs more than the clip.

    >>> batch = EmotionBatch(1)
    >>> clip_actions(np.array([-1, 0.5, 2, 0, 0, 0, 1], dtype=np.float32), batch.action[0])
    >>> batch.action.tolist()
    [[0.0, 0.5, 1.0, 0.0, 0.0, 0.0, 1.0]]
    """
    _clip_ufunc(action, _ZERO, _ONE, out)


def emotion_transition(batch: EmotionBatch, rise: RiseTable) -> None:
    """Advance every state in the batch one step toward its commanded action, in place.

    The caller writes the actions into ``batch.action`` first (:func:`clip_actions`).
    Then ``prev <- state`` and ``state <- constrain(prev + rate * (action - prev))`` where,
    per emotion ``j``, ``rate_j = alpha`` when the emotion falls and, when it rises,
    ``rate_j = alpha * sum_i w_i * multiplier[i, j]`` with ``w`` the state's composition
    (``prev / prev.sum()``, mixed with a 1 % uniform floor). With all multipliers 1 this is
    the exponential moving average ``(1 - alpha) * prev + alpha * action``.

    Args:
        batch: The batch; ``state`` and ``prev`` are updated.
        rise: The compiled prior (:func:`compile_rise_table`).

    >>> batch = EmotionBatch.from_arrays([[0.5] * 7])
    >>> batch.action[:] = 1.0
    >>> emotion_transition(batch, compile_rise_table(np.ones((7, 7)), 0.2))
    >>> batch.state.astype(float).round(3).tolist(), batch.prev.astype(float).round(3).tolist()
    ([[0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]], [[0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]])
    """
    packed, state, prev, mix, num, den, rise_excess, delta, ema = batch.transition_views
    _copyto(prev, state)
    _dot(packed, rise.weights, mix)
    _divide(num, den, rise_excess)
    _maximum(delta, _ZERO, out=delta)
    _multiply(delta, rise_excess, delta)
    _add(ema, delta, state)
    constrain_emotions(batch)


# Layout of the reward's intermediate rows (see _reward_matrices).
_PARTS_SIZE = 18
_TARGET_TOTAL_PART = 16
_CONST_PART = 17
_FRACTION_SIZE = 2 * len(COMPONENT_NAMES)


def _reward_matrices(smoothness_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Build the two linear maps :func:`emotion_reward` applies to a packed batch.

    ``linear`` (30 x 18) maps a packed row to ``parts = [u1 (7), u2 (7), U1, U2, T, 1]`` with
    ``u1 = s - t``, ``u2 = s - p``, ``U1 = sum(u1)``, ``U2 = sum(u2)``, ``T = sum(t)``. The
    kernel then replaces ``u`` by ``max(u, 0)``, and ``fractions`` (18 x 8) maps the result to
    four numerators and four denominators whose ratios are the components:
    ``(1 - sum|u1| / 7) / 1``, ``1 / (1 + sum|u2| / (7 scale))``, ``sum min(s, t) / T`` and
    ``0 / 1``, using ``|u| = 2 max(u, 0) - u`` and ``min(s, t) = t - max(u1, 0) + u1``.
    """
    n = NUM_EMOTIONS
    k = len(COMPONENT_NAMES)
    eye = np.eye(n)
    linear = np.zeros((PACKED_SIZE, _PARTS_SIZE))
    linear[STATE_SLICE, 0:n] = eye
    linear[TARGET_SLICE, 0:n] = -eye
    linear[STATE_SLICE, n : 2 * n] = eye
    linear[PREV_SLICE, n : 2 * n] = -eye
    linear[:, 2 * n] = linear[:, 0:n].sum(axis=1)
    linear[:, 2 * n + 1] = linear[:, n : 2 * n].sum(axis=1)
    linear[TARGET_SLICE, _TARGET_TOTAL_PART] = 1.0
    linear[CONST_INDEX, _CONST_PART] = 1.0
    fractions = np.zeros((_PARTS_SIZE, _FRACTION_SIZE))
    fractions[_CONST_PART, k:] = 1.0  # every denominator starts at 1
    fractions[0:n, _MATCH] = -2.0 / n
    fractions[2 * n, _MATCH] = 1.0 / n
    fractions[_CONST_PART, _MATCH] = 1.0
    fractions[_CONST_PART, _SMOOTH] = 1.0
    fractions[n : 2 * n, k + _SMOOTH] = 2.0 / (n * smoothness_scale)
    fractions[2 * n + 1, k + _SMOOTH] = -1.0 / (n * smoothness_scale)
    fractions[0:n, _INTENSITY] = -1.0
    fractions[2 * n, _INTENSITY] = 1.0
    fractions[_TARGET_TOTAL_PART, _INTENSITY] = 1.0
    fractions[_CONST_PART, k + _INTENSITY] = 0.0
    fractions[_TARGET_TOTAL_PART, k + _INTENSITY] = 1.0
    return linear.astype(DTYPE), fractions.astype(DTYPE)


class RewardTable(NamedTuple):
    """The reward's configuration compiled for :func:`emotion_reward`."""

    linear: np.ndarray
    fractions: np.ndarray
    weights: np.ndarray
    diversity: bool


def compile_reward_table(
    weights: EmotionRewardWeights | Mapping[str, float] | None = None,
    smoothness_scale: float = DEFAULT_SMOOTHNESS_SCALE,
) -> RewardTable:
    """Compile reward weights and the smoothness scale for :func:`emotion_reward`.

    Args:
        weights: Component weights (defaults: 0.3 target match, 0.3 smoothness,
            0.4 intensity, 0 diversity).
        smoothness_scale: Mean absolute change per step at which smoothness is 0.5, > 0.

    Returns:
        The :class:`RewardTable`.
    """
    if not smoothness_scale > 0:
        raise ValueError(f"smoothness_scale must be > 0, got {smoothness_scale!r}")
    w = EmotionRewardWeights.coerce(weights).as_array()
    linear, fractions = _reward_matrices(float(smoothness_scale))
    return RewardTable(linear, fractions, w.astype(DTYPE), bool(w[_DIVERSITY] > 0))


def emotion_reward(batch: EmotionBatch, table: RewardTable) -> tuple[np.ndarray, np.ndarray]:
    """Score the step that led to ``batch.state``; every component is in [0, 1].

    With ``s`` the new state, ``p`` the state before the step and ``t`` the target the agent
    was shown (all in ``batch``):

    - target_match = ``1 - mean_j |s_j - t_j|``;
    - smoothness = ``1 / (1 + mean_j |s_j - p_j| / smoothness_scale)``: 1 for a still state,
      0.5 at a mean change of ``smoothness_scale`` per step;
    - intensity = ``sum_j min(s_j, t_j) / sum_j t_j``: the share of the target's intensity
      the state expresses (1 when every emotion is at least as strong as asked); the target
      must have a positive total;
    - diversity = ``4 var_j(s_j)``, computed only when its weight is > 0 (else 0).

    Args:
        batch: The batch after :func:`emotion_transition`.
        table: The compiled reward (:func:`compile_reward_table`).

    Returns:
        ``(reward, components)``: ``(batch,)`` weighted sums and ``(batch, 4)`` components in
        :data:`COMPONENT_NAMES` order, float32. Both are the batch's scratch arrays: copy them
        to keep them past the next call.

    >>> batch = EmotionBatch.from_arrays([[0.5] * 7, [0.0] * 7], target=[[0.5] * 7, [0.5] * 7])
    >>> reward, components = emotion_reward(batch, compile_reward_table())
    >>> reward.astype(float).round(6).tolist(), components.astype(float).round(6).tolist()
    ([1.0, 0.45], [[1.0, 1.0, 1.0, 0.0], [0.5, 1.0, 0.0, 0.0]])
    """
    packed, parts, positive, fractions, numerators, denominators, components, reward = (
        batch.reward_views
    )
    linear, fraction_map, weights, diversity = table
    _dot(packed, linear, parts)
    _maximum(positive, _ZERO, out=positive)
    _dot(parts, fraction_map, fractions)
    _divide(numerators, denominators, components)
    if diversity:
        _multiply(np.var(batch.state, axis=1), 1.0 / _MAX_VARIANCE, batch.diversity)
    _dot(components, weights, reward)
    return reward, components


# --------------------------------------------------------------------------------------------
# Data: transition prior and target arcs
# --------------------------------------------------------------------------------------------


def _read_json(
    source: str | PathLike[str] | Mapping[str, Any] | None, default_name: str
) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    if source is None:
        ref = resources.files(_DATA_PACKAGE).joinpath(*_DATA_DIR, default_name)
        return json.loads(ref.read_text(encoding="utf-8"))
    with open(source, encoding="utf-8") as fh:
        return json.load(fh)


def load_transition_prior(
    source: str | PathLike[str] | Mapping[str, Any] | None = None,
) -> np.ndarray:
    """Load a rise-rate multiplier matrix from a JSON file (the shipped prior by default).

    The file has ``levels`` (name -> multiplier), ``default`` (a level name or number) and
    ``transitions`` (``{from: {to: level name or number}}``); unlisted pairs get the default.

    Args:
        source: A path, an already-parsed mapping, or None for the shipped
            ``affectgym/data/emotion_state/transition_prior.json``.

    Returns:
        ``(7, 7)`` multipliers, rows = from, columns = to, in :data:`EMOTIONS` order.

    >>> prior = load_transition_prior()
    >>> prior[DISGUST, JOY], prior[ANGER, DISGUST], prior[NEUTRAL, JOY]
    (np.float64(0.0), np.float64(1.5), np.float64(1.0))
    """
    data = _read_json(source, PRIOR_FILE)
    levels = {str(k): float(v) for k, v in data.get("levels", {}).items()}

    def value(raw: Any, where: str) -> float:
        if isinstance(raw, str):
            if raw not in levels:
                raise ValueError(
                    f"transition prior {where}: unknown level {raw!r}; accepted: {sorted(levels)} or a number >= 0"
                )
            return levels[raw]
        if isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw >= 0:
            return float(raw)
        raise ValueError(f"transition prior {where}: {raw!r} is not a level name or a number >= 0")

    matrix = np.full((NUM_EMOTIONS, NUM_EMOTIONS), value(data.get("default", 1.0), "default"))
    for src, row in data.get("transitions", {}).items():
        if src not in EMOTIONS:
            raise ValueError(
                f"transition prior: unknown emotion {src!r}; accepted: {list(EMOTIONS)}"
            )
        for dst, raw in row.items():
            if dst not in EMOTIONS:
                raise ValueError(
                    f"transition prior {src}->{dst}: unknown emotion {dst!r}; accepted: {list(EMOTIONS)}"
                )
            matrix[EMOTIONS.index(src), EMOTIONS.index(dst)] = value(raw, f"{src}->{dst}")
    return matrix


@dataclass(frozen=True)
class EmotionArc:
    """A scripted sequence of targets, each held for a number of steps.

    Attributes:
        name: The arc's id (``options={"arc": name}``).
        description: One line on the situation.
        segments: ``(target name, target (7,), steps held)`` in order.
    """

    name: str
    description: str
    segments: tuple[tuple[str, np.ndarray, int], ...]

    def schedule(self, num_steps: int) -> np.ndarray:
        """Return the ``(num_steps + 1, 7)`` target shown at each step index.

        Row ``k`` is the target in the observation before step ``k``; after the last segment
        the last target holds.

        Args:
            num_steps: The episode's step limit.

        Returns:
            The target schedule.
        """
        rows = [np.tile(target, (steps, 1)) for _, target, steps in self.segments]
        schedule = np.concatenate(rows, axis=0)[: num_steps + 1]
        if len(schedule) < num_steps + 1:
            tail = np.tile(schedule[-1], (num_steps + 1 - len(schedule), 1))
            schedule = np.concatenate([schedule, tail], axis=0)
        return schedule

    def segment_names(self, num_steps: int) -> list[str]:
        """Return the target name shown at each of the ``num_steps + 1`` step indices."""
        names = [name for name, _, steps in self.segments for _ in range(steps)]
        names = names[: num_steps + 1]
        return names + [names[-1]] * (num_steps + 1 - len(names))


def load_arcs(
    source: str | PathLike[str] | Mapping[str, Any] | None = None,
) -> dict[str, EmotionArc]:
    """Load target arcs from a JSON file (the shipped set by default).

    Every target must be feasible: within [0, 1], a positive total, and unchanged by the
    mutual-exclusion rules (so a perfect agent can hold it).

    Args:
        source: A path, a parsed mapping, or None for ``affectgym/data/emotion_state/arcs.json``.

    Returns:
        Arcs by name, in file order.

    >>> arcs = load_arcs()
    >>> len(arcs) >= 8, [name for name, _, _ in arcs["good_news"].segments]
    (True, ['calm', 'surprise', 'joy'])
    """
    data = _read_json(source, ARCS_FILE)
    floor = float(data.get("floor", 0.0))
    targets: dict[str, np.ndarray] = {}
    for name, spec in data.get("targets", {}).items():
        vector = np.full(NUM_EMOTIONS, floor)
        for emotion, level in spec.items():
            if emotion not in EMOTIONS:
                raise ValueError(
                    f"arcs target {name!r}: unknown emotion {emotion!r}; accepted: {list(EMOTIONS)}"
                )
            vector[EMOTIONS.index(emotion)] = float(level)
        if vector.min() < 0 or vector.max() > 1 or vector.sum() <= 0:
            raise ValueError(
                f"arcs target {name!r}: intensities must be in [0, 1] with a positive total, got {vector}"
            )
        check = EmotionBatch.from_arrays(vector[None])
        constrain_emotions(check)
        if not np.allclose(check.state[0], vector):
            raise ValueError(
                f"arcs target {name!r} breaks the mutual-exclusion rules (anger + sadness <= "
                f"{ANGER_SADNESS_LIMIT}, joy <= (1 - anger) / {1 - ANGER_JOY_THRESHOLD:.1f}): {vector}"
            )
        targets[name] = vector
    arcs: dict[str, EmotionArc] = {}
    for name, spec in data.get("arcs", {}).items():
        segments = []
        for item in spec.get("segments", []):
            target_name, steps = item
            if target_name not in targets:
                raise ValueError(
                    f"arc {name!r}: unknown target {target_name!r}; defined: {sorted(targets)}"
                )
            if int(steps) < 1:
                raise ValueError(
                    f"arc {name!r}: segment {target_name!r} must last >= 1 step, got {steps!r}"
                )
            segments.append((target_name, targets[target_name], int(steps)))
        if not segments:
            raise ValueError(f"arc {name!r} has no segments")
        arcs[name] = EmotionArc(name, str(spec.get("description", "")), tuple(segments))
    if not arcs:
        raise ValueError("the arcs file defines no arcs")
    return arcs


def describe_state(state: Sequence[float], width: int = 20) -> str:
    """Render intensities as one bar line per emotion (used by ``render_mode="ansi"``).

    Args:
        state: Seven intensities in [0, 1].
        width: Characters of a full bar.

    Returns:
        The text block.

    >>> print(describe_state([0, 0, 0, 0.5, 1, 0, 0], width=4).splitlines()[3])
    joy      0.50 ##..
    """
    lines = []
    for name, value in zip(EMOTIONS, state, strict=True):
        filled = int(round(float(value) * width))
        lines.append(f"{name:<8} {float(value):.2f} {'#' * filled}{'.' * (width - filled)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------------------------


class EmotionStateEnv(gym.Env[np.ndarray, np.ndarray]):
    """Steer a 7-dimension emotion state smoothly along a scripted arc of targets.

    ## Description

    The state is one intensity in [0, 1] per basic emotion, in the order anger, disgust,
    fear, joy, neutral, sadness, surprise (EMOTRON's seven labels). Each step the agent
    commands the intensities it wants next; the state follows through an exponential moving
    average whose rise rates come from a transition prior (which emotion changes are easy,
    hard or forbidden), then mutually exclusive emotions are constrained. An episode follows
    a scripted arc of targets (calm -> surprise -> joy, calm -> anger -> sadness, ...), each
    held for some steps. The agent is rewarded for matching the target, expressing it fully
    and moving smoothly.

    Adapted from an emotion-state article (``seeds/002``, a write-up of "EMOTRON-3B"). Kept:
    the 7-dim state, the JSON transition file, the 0.4/0.3/0.3 hybrid reward, the two
    mutual-exclusion rules, EMA smoothing with alpha 0.2, the optional 0.1 diversity bonus.
    Fixed: the article's intensity ``sigmoid(||s||)`` rewards a loud state whatever the
    target, and its target term ``t @ s`` is unbounded and maximised by all-ones; both are
    replaced by bounded, target-relative terms (see Rewards). Its smoothness ``1 - cosine``
    ignores magnitude and is undefined at zero; it is replaced by a mean absolute change.
    (The article also calls GRPO "Gradient-based Reinforcement Policy Optimization"; GRPO is
    Group Relative Policy Optimization, and its latency and naturalness figures are unsourced.)

    ## Action Space

    ``Box(0, 1, (7,), float32)``: the commanded intensities, in the emotion order above.
    Values outside [0, 1] are clipped.

    ## Observation Space

    ``Box(0, 1, (22,), float32)`` (``(21,)`` with ``include_time=False``):

    | index  | meaning                                                   |
    |--------|-----------------------------------------------------------|
    | 0-6    | current state                                             |
    | 7-13   | target for the next step                                  |
    | 14-20  | state before the last step (equal to the state at reset)  |
    | 21     | fraction of the step limit remaining (1 at reset, 0 last) |

    The remaining-time entry keeps the task Markov under the step limit.

    ## Dynamics

    Per emotion ``j``: ``s'_j = s_j + r_j (a_j - s_j)`` with ``r_j = alpha`` when the emotion
    falls and ``r_j = alpha * sum_i w_i M[i, j]`` when it rises, ``w`` the state's composition
    (``s / sum(s)``, mixed with a 1 % uniform floor) and ``M`` the prior's multipliers (shipped: easy 1.5, normal 1, hard 0.5,
    forbidden 0; e.g. anger -> disgust easy, disgust -> joy forbidden). ``alpha`` is the weight
    of the new action: with all multipliers 1 this is ``(1 - alpha) s + alpha a``, the
    article's EMA. The default 0.2 gives a time constant of about 5 steps (90 % of a step
    change in 10 steps), so a target held 10-30 steps is reachable but not instant. Falls are
    never scaled: any emotion may fade. Then the mutual-exclusion rules, both reading the
    state before either applies: if anger + sadness > 1.2, both are multiplied by 0.7 (the
    article's rule; it fires once per step, so pushing both up makes them oscillate below the
    limit); joy is capped at ``(1 - anger) / 0.2``, i.e. inactive up to anger 0.8 and 0 at
    anger 1 (the article only says anger > 0.8 "suppresses" joy; a cap that starts at 1 has
    no jump at the threshold). All shipped targets satisfy both rules, so a perfect agent can
    hold them.

    ## Rewards

    ``reward = 0.3 target_match + 0.3 smoothness + 0.4 intensity [+ w diversity]``, each
    component in [0, 1], so the reward is in [0, sum of weights]:

    - target_match = ``1 - mean_j |s'_j - t_j|`` (``t``: the target shown before the step);
    - smoothness = ``1 / (1 + mean_j |s'_j - s_j| / 0.05)``: 1 for a still state, 0.5 when
      the state moves by a mean 0.05 per step (a quarter of what a full-range command moves
      it with alpha 0.2). A random policy averages about 0.5 here, the tracker below 0.9. The
      rational form is bounded without a clamp and keeps a gradient for large changes;
    - intensity = ``sum_j min(s'_j, t_j) / sum_j t_j``: the share of the target's intensity
      the state expresses. Like the article's term it rewards strong emotions (its concern
      was extreme emotions fading), but only up to what the target asks; overshooting is
      paid for in target_match;
    - diversity = ``4 var_j(s'_j)`` (weight 0 by default; the article used 0.1). Off because
      it pays for peaked states regardless of the target, which pulls against blended
      targets such as "bittersweet"; intensity already counters fading emotions.

    ``info["reward_components"]`` holds the enabled components every step. Mean reward per
    step over the shipped arcs (20 seeds): commanding the target itself 0.93, holding the
    state still 0.74, random actions 0.66, commanding all ones ("loud") 0.64.

    ## Starting State

    The arc's first target plus uniform noise in [-0.05, 0.05] per emotion, clipped to [0, 1]
    and constrained. The previous state equals it. The arc is drawn uniformly from the set.

    ## Episode End

    No termination. The episode is truncated after ``max_episode_steps`` (default 60) steps.

    ## Arguments

    ```python
    >>> import gymnasium as gym
    >>> import affectgym.envs.emotion_state as es
    >>> if "affectgym/EmotionState-v0" not in gym.registry:
    ...     gym.register(id="affectgym/EmotionState-v0", entry_point=es.EmotionStateEnv)
    >>> env = gym.make("affectgym/EmotionState-v0", alpha=0.2, max_episode_steps=60)
    >>> obs, info = env.reset(seed=0, options={"arc": "good_news"})
    >>> obs.shape, info["arc"]
    ((22,), 'good_news')
    >>> obs, reward, terminated, truncated, info = env.step(obs[7:14])
    >>> sorted(info["reward_components"])
    ['intensity', 'smoothness', 'target_match']

    ```

    - ``alpha`` (0.2): weight of the new action in the moving average, in (0, 1].
    - ``max_episode_steps`` (60): step limit.
    - ``include_time`` (True): append the remaining-steps fraction to the observation.
    - ``reward_weights``: :class:`EmotionRewardWeights` or a mapping of component weights.
    - ``smoothness_scale`` (0.05): mean change per step at which smoothness is 0.5.
    - ``start_noise`` (0.05): half-width of the uniform noise on the starting state.
    - ``transition_prior``: path or mapping of the prior JSON (default: shipped file).
    - ``arcs``: path or mapping of the arcs JSON (default: shipped file).
    - ``arc_names``: restrict the arcs drawn at reset to these names.
    - ``render_mode``: ``"ansi"`` (bars for state and target) or None; other modes warn
      and render nothing.

    ``reset(options={"arc": name})`` plays the named arc.

    ## Version History

    * v0: Initial version.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 10}

    def __init__(
        self,
        *,
        alpha: float = DEFAULT_ALPHA,
        max_episode_steps: int = DEFAULT_MAX_EPISODE_STEPS,
        include_time: bool = True,
        reward_weights: EmotionRewardWeights | Mapping[str, float] | None = None,
        smoothness_scale: float = DEFAULT_SMOOTHNESS_SCALE,
        start_noise: float = DEFAULT_START_NOISE,
        transition_prior: str | PathLike[str] | Mapping[str, Any] | None = None,
        arcs: str | PathLike[str] | Mapping[str, Any] | None = None,
        arc_names: Sequence[str] | None = None,
        render_mode: str | None = None,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            # Warn, as Gymnasium's own envs do: Stable-Baselines3's make_vec_env passes
            # render_mode="rgb_array" to every env it builds.
            gym.logger.warn(
                f"render_mode {render_mode!r} is not supported (accepted: None, 'ansi'); render() returns None"
            )
        self.render_mode = render_mode
        self.core = EmotionStateCore(
            alpha=alpha,
            max_episode_steps=max_episode_steps,
            include_time=include_time,
            reward_weights=reward_weights,
            smoothness_scale=smoothness_scale,
            start_noise=start_noise,
            transition_prior=transition_prior,
            arcs=arcs,
            arc_names=arc_names,
        )
        core = self.core
        self.observation_space = spaces.Box(0.0, 1.0, (core.obs_size,), dtype=np.float32)
        self.action_space = spaces.Box(0.0, 1.0, (NUM_EMOTIONS,), dtype=np.float32)
        # One packed row; the views below are made once so step() allocates little.
        self._batch = EmotionBatch(1)
        self._scratch = EmotionBatch(1)
        self._time_left = core.time_left.tolist()
        self._action_row = self._batch.action[0]
        self._target_row = self._batch.target[0]
        self._time = self._batch.time
        self._obs = self._batch.packed[0, : core.obs_size]
        self._components = self._batch.components[0, : len(core.component_names)]
        self._schedule: np.ndarray | None = None
        self._target_rows: list[np.ndarray] = []
        self._target_changes: list[bool] = []
        self._arc: EmotionArc | None = None
        self._step_index = 0

    @property
    def arc(self) -> EmotionArc | None:
        """The arc of the current episode (None before the first reset)."""
        return self._arc

    @property
    def state(self) -> np.ndarray:
        """A copy of the current intensities, ``(7,)``."""
        return self._batch.state[0].copy()

    @property
    def target(self) -> np.ndarray:
        """A copy of the current target, ``(7,)``."""
        return self._target_row.copy()

    @property
    def step_index(self) -> int:
        """Steps taken in the current episode."""
        return self._step_index

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode on a random arc, or on ``options["arc"]``.

        Args:
            seed: Seed for ``self.np_random``.
            options: ``{"arc": name}`` to pick the arc.

        Returns:
            The first observation and ``info`` with ``arc`` and ``target_name``.
        """
        super().reset(seed=seed)
        core = self.core
        arc_index = core.arc_index(options, self.np_random)
        self._arc = core.arcs[arc_index]
        self._schedule = core.schedules[arc_index]
        self._target_rows = core.schedule_rows[arc_index]
        self._target_changes = core.schedule_changes[arc_index]
        self._step_index = 0
        first_target = self._target_rows[0]
        start = core.start_states(first_target[None], self.np_random, self._scratch)
        batch = self._batch
        batch.state[:] = start
        batch.prev[:] = start
        batch.target[:] = first_target
        batch.time[:] = 1.0
        info = {"arc": self._arc.name, "target_name": core.target_names[self._arc.name][0]}
        return self._obs.copy(), info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Command the next intensities.

        Args:
            action: Seven intensities; clipped to [0, 1].

        Returns:
            ``(observation, reward, terminated, truncated, info)``; ``info["reward_components"]``
            maps each enabled component to its value.
        """
        core = self.core
        if self._schedule is None or self._step_index >= core.max_episode_steps:
            raise gym.error.ResetNeeded(
                "EmotionStateEnv.step() called before reset() or after the episode was truncated"
            )
        clip_actions(action, self._action_row)
        emotion_transition(self._batch, core.rise)
        reward = emotion_reward(self._batch, core.reward_table)[0]
        k = self._step_index = self._step_index + 1
        if self._target_changes[k]:
            np.copyto(self._target_row, self._target_rows[k])
        self._time[0] = self._time_left[k]
        info = {
            "reward_components": dict(
                zip(core.component_names, self._components.tolist(), strict=False)
            )
        }
        return self._obs.copy(), float(reward[0]), False, k >= core.max_episode_steps, info

    def render(self) -> str | None:
        """Return the state and target as text bars when ``render_mode == "ansi"``."""
        if self.render_mode != "ansi":
            gym.logger.warn(
                f"render() with render_mode={self.render_mode!r} draws nothing; pass render_mode='ansi' to gym.make"
            )
            return None
        if self._arc is None:
            return "(not reset)"
        head = f"arc {self._arc.name}, step {self._step_index}/{self.core.max_episode_steps}"
        return f"{head}\nstate:\n{describe_state(self._batch.state[0])}\ntarget:\n{describe_state(self._target_row)}"


class EmotionStateCore:
    """Configuration shared by the single, vector and text emotion-state environments.

    It loads the prior and arcs, compiles the dynamics and reward tables and precomputes each
    arc's target schedule; it owns no episode state.

    Args:
        alpha: Weight of the new action in the moving average.
        max_episode_steps: Step limit.
        include_time: Whether the observation carries the remaining-steps fraction.
        reward_weights: Component weights.
        smoothness_scale: Mean change per step at which smoothness is 0.5.
        start_noise: Half-width of the uniform noise on the starting state.
        transition_prior: Prior JSON (path or mapping); None for the shipped file.
        arcs: Arcs JSON (path or mapping); None for the shipped file.
        arc_names: Restrict the arcs to these names, in this order.
    """

    def __init__(
        self,
        *,
        alpha: float = DEFAULT_ALPHA,
        max_episode_steps: int = DEFAULT_MAX_EPISODE_STEPS,
        include_time: bool = True,
        reward_weights: EmotionRewardWeights | Mapping[str, float] | None = None,
        smoothness_scale: float = DEFAULT_SMOOTHNESS_SCALE,
        start_noise: float = DEFAULT_START_NOISE,
        transition_prior: str | PathLike[str] | Mapping[str, Any] | None = None,
        arcs: str | PathLike[str] | Mapping[str, Any] | None = None,
        arc_names: Sequence[str] | None = None,
    ):
        if int(max_episode_steps) < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps!r}")
        if not 0.0 <= start_noise <= 0.5:
            raise ValueError(f"start_noise must be in [0, 0.5], got {start_noise!r}")
        self.alpha = float(alpha)
        self.max_episode_steps = int(max_episode_steps)
        # Remaining-steps fraction shown after k steps, k = 0 .. max_episode_steps.
        self.time_left = (
            1.0 - np.arange(self.max_episode_steps + 1) / self.max_episode_steps
        ).astype(DTYPE)
        self.time_left.setflags(write=False)
        self.include_time = bool(include_time)
        self.obs_size = OBS_SIZE if include_time else OBS_SIZE - 1
        self.start_noise = float(start_noise)
        self.multipliers = load_transition_prior(transition_prior)
        self.rise = compile_rise_table(self.multipliers, self.alpha)
        self.reward_weights = EmotionRewardWeights.coerce(reward_weights)
        self.reward_table = compile_reward_table(self.reward_weights, smoothness_scale)
        self.component_names = tuple(
            name
            for name, w in zip(COMPONENT_NAMES, self.reward_table.weights, strict=True)
            if name != "diversity" or w > 0
        )
        all_arcs = load_arcs(arcs)
        if arc_names is not None:
            missing = [name for name in arc_names if name not in all_arcs]
            if missing or not arc_names:
                raise ValueError(
                    f"arc_names {list(arc_names)!r}: unknown {missing}; available: {list(all_arcs)}"
                )
            all_arcs = {name: all_arcs[name] for name in arc_names}
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

    def arc_index(self, options: Mapping[str, Any] | None, rng: np.random.Generator) -> int:
        """Pick an arc: ``options["arc"]`` if given, else uniformly with ``rng``.

        Args:
            options: Reset options, possibly with ``"arc"``.
            rng: The env's random generator.

        Returns:
            The arc's index in :attr:`arcs`.
        """
        if options and options.get("arc") is not None:
            name = options["arc"]
            if name not in self.arc_ids:
                raise ValueError(
                    f"options['arc'] = {name!r} is not an arc; available: {list(self.arc_ids)}"
                )
            return self.arc_ids[name]
        return int(rng.integers(len(self.arcs)))

    def start_states(
        self, first_targets: np.ndarray, rng: np.random.Generator, scratch: EmotionBatch
    ) -> np.ndarray:
        """Draw starting states near the arcs' first targets.

        Each start is the target plus uniform noise in ``[-start_noise, start_noise]``,
        clipped to [0, 1] and constrained.

        Args:
            first_targets: ``(k, 7)`` first targets.
            rng: The env's random generator (the only source of randomness).
            scratch: A batch with at least ``k`` rows to compute in (its states are overwritten).

        Returns:
            ``(k, 7)`` starting states: a view into ``scratch``, valid until its next use.
        """
        start = scratch.state[: len(first_targets)]
        noise = rng.uniform(-self.start_noise, self.start_noise, first_targets.shape)
        np.add(first_targets, noise, out=start, casting="same_kind")
        _clip_ufunc(start, _ZERO, _ONE, start)
        constrain_emotions(scratch)
        return start
