"""The emotion-state dynamics and reward fused into matrix products over one packed row per env.

:mod:`affectgym.envs.emotion_state.dynamics` states the equations; this module computes the
same thing fast, and the environments step through it (a test checks the two agree on random
inputs). Why it exists: for a batch of one, each numpy call costs far more than its
arithmetic (about 0.3-0.5 us), and a call that broadcasts, casts, masks with ``where=`` or
writes over an overlapping view costs two to four times that. Written as the plain equations,
a step of EmotionState-v0 takes several times as long as a step of Pendulum-v1 (run
``benchmarks/bench_emotion_state.py``, which times both). So every affine map of a step is
folded into one matrix product over a packed row that carries a constant 1, all arrays are
float32 (the action's dtype), and every view and scratch array is made once in
:class:`EmotionBatch`. A step is about 20 numpy calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from affectgym.envs.emotion_state.dynamics import (
    ANGER,
    ANGER_JOY_THRESHOLD,
    ANGER_SADNESS_LIMIT,
    ANGER_SADNESS_SCALE,
    COMPONENT_NAMES,
    COMPOSITION_FLOOR,
    DEFAULT_SMOOTHNESS_SCALE,
    JOY,
    MAX_VARIANCE,
    NUM_EMOTIONS,
    SADNESS,
    EmotionRewardWeights,
)

try:  # The clip ufunc itself: np.clip wraps it in Python checks costing ~1.5 us per call.
    from numpy._core.umath import clip as _clip_ufunc
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip_ufunc  # type: ignore[no-redef]

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

_MATCH, _SMOOTH, _INTENSITY, _DIVERSITY = range(len(COMPONENT_NAMES))

# 0-d constants: a Python float argument costs a conversion on every call.
_ZERO = np.array(0.0, dtype=DTYPE)
_ONE = np.array(1.0, dtype=DTYPE)
# numpy functions bound once: the kernels below are called ~100,000 times a second, and a
# module global is one lookup where ``np.dot`` is two.
_add, _copyto, _divide, _dot = np.add, np.copyto, np.divide, np.dot
_greater, _maximum, _minimum, _multiply = np.greater, np.maximum, np.minimum, np.multiply
_isnan = np.isnan


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
    w[CONST_INDEX, 2 * n : 3 * n] = COMPOSITION_FLOOR * excess.sum(axis=0)
    w[PREV_SLICE, 3 * n : 4 * n] = 1.0
    w[CONST_INDEX, 3 * n : 4 * n] = COMPOSITION_FLOOR * n
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

    The rules are :func:`~affectgym.envs.emotion_state.dynamics.exclusion_rules`
    (anger + sadness > 1.2 scales both by 0.7; joy is capped at ``(1 - anger) / 0.2``).

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


def checked_actions(action: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``action`` as an array of real numbers of exactly ``shape``, or one clear ``ValueError``.

    Nothing is broadcast: a scalar, a ``(6,)`` or a ``(1, 7)`` action for a ``(7,)`` slot
    is refused rather than guessed at. Integers are read as intensities; booleans,
    strings, objects and complex numbers are refused.

    Args:
        action: What the agent sent.
        shape: The shape the env expects: ``(7,)``, or ``(num_envs, 7)`` for the vector env.

    Returns:
        ``action`` itself when it is already a float array of that shape, else a converted one.

    Raises:
        ValueError: The shape or the dtype is wrong; the message names both expected ones.

    >>> checked_actions([0, 0, 0, 1, 0, 0, 0], (7,)).shape
    (7,)
    >>> checked_actions(0.5, (7,))
    Traceback (most recent call last):
    ...
    ValueError: action must be an array of shape (7,) with a real dtype (e.g. float32, as action_space: one intensity in [0, 1] per emotion), got shape () and dtype float64; nothing is broadcast
    """
    if type(action) is np.ndarray and action.shape == shape and action.dtype.kind == "f":
        return action
    try:
        array = np.asarray(action)
    except (TypeError, ValueError):  # ragged nested lists
        array = None
    if array is None or array.shape != shape or array.dtype.kind not in "iuf":
        got = f"shape {array.shape} and dtype {array.dtype}" if array is not None else f"a ragged {type(action).__name__}"
        raise ValueError(
            f"action must be an array of shape {shape} with a real dtype (e.g. float32, as action_space: one "
            f"intensity in [0, 1] per emotion), got {got}; nothing is broadcast"
        )
    return array


def nan_rows(actions: np.ndarray) -> np.ndarray:
    """Which rows of ``(batch, 7)`` actions hold a NaN (they are invalid: see the env's Action Space).

    >>> nan_rows(np.array([[0.5] * 7, [np.nan] + [0.5] * 6], dtype=np.float32)).tolist()
    [False, True]
    """
    return _isnan(actions).any(axis=1)


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
    Then ``prev <- state`` and ``state <- next_state(prev, action)``, the equations of
    :func:`~affectgym.envs.emotion_state.dynamics.next_state`.

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

    The components are :func:`~affectgym.envs.emotion_state.dynamics.reward_components` of
    the new state, the previous state and the target in ``batch``, except that diversity is
    computed only when its weight is > 0 (else 0); the reward is their weighted sum.

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
        _multiply(np.var(batch.state, axis=1), 1.0 / MAX_VARIANCE, batch.diversity)
    _dot(components, weights, reward)
    return reward, components
