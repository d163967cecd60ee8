"""The emotion-state dynamics and reward, written once as their equations.

This module is both the specification of affectgym/EmotionState-v0 and what every
environment steps through (:func:`~affectgym.envs.emotion_state.batch.step_rows` calls these
functions). Each function takes arrays with a leading batch dimension (``(batch, 7)``
intensities in :data:`EMOTIONS` order) and returns new arrays; nothing is modified in place.
The loops over rows and emotions are the equations as written below; numba compiles them
(``@numba.njit(cache=True)``: the first call in a fresh install compiles for several seconds
and caches the machine code in ``__pycache__``; later processes load it). Called from
Python, the functions take numpy arrays (not lists). Notation used in the docstrings: ``p``
the state before a step, ``a`` the commanded action, ``s`` the state after it, ``t`` the
target the agent was shown, ``M`` the 7 x 7 rise-rate multipliers of the transition prior
(``M[i, j]``: how fast emotion ``j`` rises while emotion ``i`` makes up the state).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numba
import numpy as np

from affectgym.emotions import EMOTIONS

NUM_EMOTIONS = len(EMOTIONS)
ANGER, DISGUST, FEAR, JOY, NEUTRAL, SADNESS, SURPRISE = range(NUM_EMOTIONS)

# Mutual exclusion (seeds/002): joy is capped once anger exceeds this intensity ...
ANGER_JOY_THRESHOLD = 0.8
# ... and when anger + sadness exceed this sum, both are scaled by the factor below.
ANGER_SADNESS_LIMIT = 1.2
ANGER_SADNESS_SCALE = 0.7

# Added to every intensity before the state's composition is taken: keeps the composition
# defined (uniform) when the state is all zeros.
COMPOSITION_FLOOR = 0.01

COMPONENT_NAMES: tuple[str, ...] = ("target_match", "smoothness", "intensity", "diversity")
TARGET_MATCH, SMOOTHNESS, INTENSITY, DIVERSITY = range(len(COMPONENT_NAMES))
NUM_COMPONENTS = len(COMPONENT_NAMES)
# Largest variance of a vector with entries in [0, 1] is 1/4 (half zeros, half ones).
MAX_VARIANCE = 0.25

# Weight of the new action in the moving average: a time constant of about 5 steps.
DEFAULT_ALPHA = 0.2
# Mean absolute change per step at which smoothness is 0.5.
DEFAULT_SMOOTHNESS_SCALE = 0.05


@numba.njit(cache=True)
def exclusion_rules(state: np.ndarray) -> np.ndarray:
    """Apply the two mutual-exclusion rules; both read ``state`` as it was before either applies.

    1. if ``anger + sadness > 1.2``, both are multiplied by 0.7 (the article's rule, once
       per step: an agent cannot hold both high);
    2. ``joy <- min(joy, (1 - anger) / (1 - 0.8))``: no effect while anger <= 0.8, then the
       cap falls linearly to 0 at anger = 1. The article only says anger > 0.8 "suppresses"
       joy; a cap that starts at 1 avoids a jump at the threshold.

    Args:
        state: ``(batch, 7)`` intensities in [0, 1].

    Returns:
        The constrained ``(batch, 7)`` intensities.

    >>> state = np.array([[0.9, 0, 0, 0.9, 0, 0.5, 0], [0.95, 0, 0, 0.9, 0, 0, 0]])
    >>> exclusion_rules(state).round(2).tolist()
    [[0.63, 0.0, 0.0, 0.5, 0.0, 0.35, 0.0], [0.95, 0.0, 0.0, 0.25, 0.0, 0.0, 0.0]]
    """
    constrained = state.copy()
    for row in range(state.shape[0]):
        anger, sadness, joy = state[row, ANGER], state[row, SADNESS], state[row, JOY]
        if anger + sadness > ANGER_SADNESS_LIMIT:
            constrained[row, ANGER] = ANGER_SADNESS_SCALE * anger
            constrained[row, SADNESS] = ANGER_SADNESS_SCALE * sadness
        joy_cap = (1.0 - anger) / (1.0 - ANGER_JOY_THRESHOLD)
        constrained[row, JOY] = np.minimum(joy, joy_cap)
    return constrained


@numba.njit(cache=True)
def composition(state: np.ndarray) -> np.ndarray:
    """Return each emotion's share of the state, ``w_i = (p_i + 0.01) / sum_k (p_k + 0.01)``.

    Args:
        state: ``(batch, 7)`` intensities.

    Returns:
        ``(batch, 7)`` shares summing to 1; uniform for an all-zero state.

    >>> composition(np.array([[0.0] * 7, [0.99, 0, 0, 0, 0, 0, 0]])).round(3).tolist()
    [[0.143, 0.143, 0.143, 0.143, 0.143, 0.143, 0.143], [0.943, 0.009, 0.009, 0.009, 0.009, 0.009, 0.009]]
    """
    shares = np.empty(state.shape)
    for row in range(state.shape[0]):
        total = 0.0
        for k in range(NUM_EMOTIONS):
            total += state[row, k] + COMPOSITION_FLOOR
        for i in range(NUM_EMOTIONS):
            shares[row, i] = (state[row, i] + COMPOSITION_FLOOR) / total
    return shares


@numba.njit(cache=True)
def rise_rates(prev: np.ndarray, multipliers: np.ndarray, alpha: float) -> np.ndarray:
    """Return how fast each emotion rises, ``r_j = alpha * sum_i w_i M[i, j]``.

    ``w`` is :func:`composition` of ``prev``: the emotions that make up the state decide
    which others rise easily (anger -> disgust easy), slowly or not at all (disgust -> joy
    forbidden).

    Args:
        prev: ``(batch, 7)`` state before the step.
        multipliers: ``(7, 7)`` rise-rate multipliers ``M``.
        alpha: Weight of the new action in the moving average, in (0, 1].

    Returns:
        ``(batch, 7)`` rise rates.

    >>> disgusted = np.array([[0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    >>> forbid_joy = np.ones((7, 7)); forbid_joy[DISGUST, JOY] = 0.0
    >>> rise_rates(disgusted, forbid_joy, 0.2).round(3).tolist()
    [[0.2, 0.2, 0.2, 0.011, 0.2, 0.2, 0.2]]
    """
    w = composition(prev)
    rates = np.empty(w.shape)
    for row in range(w.shape[0]):
        for j in range(NUM_EMOTIONS):
            weighted = 0.0
            for i in range(NUM_EMOTIONS):
                weighted += w[row, i] * multipliers[i, j]
            rates[row, j] = alpha * weighted
    return rates


@numba.njit(cache=True)
def clip_unit(value: float) -> float:
    """``value`` clipped to [0, 1] (``inf`` to 1, ``-inf`` to 0); a NaN stays NaN.

    >>> clip_unit(-np.inf), clip_unit(0.25), clip_unit(3.0)
    (0.0, 0.25, 1.0)
    """
    if value < 0.0:
        return 0.0
    if value > 1.0:
        return 1.0
    return value


@numba.njit(cache=True)
def next_state(
    prev: np.ndarray, action: np.ndarray, multipliers: np.ndarray, alpha: float
) -> np.ndarray:
    """Advance the state one step toward the commanded action.

    ``s = exclusion_rules(p + rate * (a - p))`` with ``a`` the action clipped to [0, 1] and,
    per emotion, ``rate = alpha`` when it falls (``a_j <= p_j``: any emotion may fade) and
    ``rate = r_j`` (:func:`rise_rates`) when it rises. With all multipliers 1 this is the
    exponential moving average ``(1 - alpha) p + alpha a``.

    Args:
        prev: ``(batch, 7)`` state before the step.
        action: ``(batch, 7)`` commanded intensities.
        multipliers: ``(7, 7)`` rise-rate multipliers.
        alpha: Weight of the new action, in (0, 1].

    Returns:
        ``(batch, 7)`` state after the step.

    >>> next_state(np.full((1, 7), 0.2), np.full((1, 7), 0.7), np.ones((7, 7)), 0.25).round(3).tolist()
    [[0.325, 0.325, 0.325, 0.325, 0.325, 0.325, 0.325]]
    >>> forbidden = np.zeros((7, 7))  # nothing may rise, everything may fall
    >>> rises = np.array([[0.0, 0, 0, 1, 1, 1, 1]])
    >>> next_state(np.full((1, 7), 0.5), rises, forbidden, 0.2).round(3).tolist()
    [[0.4, 0.4, 0.4, 0.5, 0.5, 0.5, 0.5]]
    """
    rise = rise_rates(prev, multipliers, alpha)
    moved = np.empty(rise.shape)
    for row in range(prev.shape[0]):
        for j in range(NUM_EMOTIONS):
            p, a = prev[row, j], clip_unit(action[row, j])
            rate = rise[row, j] if a > p else alpha
            moved[row, j] = p + rate * (a - p)
    return exclusion_rules(moved)


@numba.njit(cache=True)
def reward_components(
    state: np.ndarray, prev: np.ndarray, target: np.ndarray, smoothness_scale: float
) -> np.ndarray:
    """Score the step from ``prev`` to ``state`` against ``target``; each component is in [0, 1].

    - target_match = ``1 - mean_j |s_j - t_j|``;
    - smoothness = ``1 / (1 + mean_j |s_j - p_j| / smoothness_scale)``: 1 for a still state,
      0.5 at a mean change of ``smoothness_scale`` per step;
    - intensity = ``sum_j min(s_j, t_j) / sum_j t_j``: the share of the target's intensity
      the state expresses (1 when every emotion is at least as strong as asked); the target
      must have a positive total;
    - diversity = ``4 var_j(s_j)``: 1 for a state half at 0 and half at 1.

    Args:
        state: ``(batch, 7)`` state after the step.
        prev: ``(batch, 7)`` state before it.
        target: ``(batch, 7)`` target shown before the step.
        smoothness_scale: Mean change per step at which smoothness is 0.5, > 0.

    Returns:
        ``(batch, 4)`` components in :data:`COMPONENT_NAMES` order.

    >>> half = np.full((1, 7), 0.5)
    >>> reward_components(half, half, half, 0.05).tolist()
    [[1.0, 1.0, 1.0, 0.0]]
    >>> reward_components(np.zeros((1, 7)), half, half, 0.05).round(3).tolist()
    [[0.5, 0.091, 0.0, 0.0]]
    """
    n = NUM_EMOTIONS
    components = np.empty((state.shape[0], NUM_COMPONENTS))
    for row in range(state.shape[0]):
        s, p, t = state[row], prev[row], target[row]
        mismatch = change = expressed = asked = total = 0.0
        for j in range(n):
            mismatch += abs(s[j] - t[j])
            change += abs(s[j] - p[j])
            expressed += np.minimum(s[j], t[j])
            asked += t[j]
            total += s[j]
        mean = total / n
        variance = 0.0
        for j in range(n):
            variance += (s[j] - mean) ** 2
        variance /= n
        components[row, TARGET_MATCH] = 1.0 - mismatch / n
        components[row, SMOOTHNESS] = 1.0 / (1.0 + (change / n) / smoothness_scale)
        components[row, INTENSITY] = expressed / asked
        components[row, DIVERSITY] = variance / MAX_VARIANCE
    return components


@dataclass(frozen=True)
class EmotionRewardWeights:
    """Weights of the reward components; the reward is their weighted sum.

    The article's hybrid reward is 0.4 intensity + 0.3 smoothness + 0.3 target match, with an
    optional 0.1 diversity bonus. Diversity is off by default (see
    :class:`~affectgym.envs.emotion_state.EmotionStateEnv`).

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


@numba.njit(cache=True)
def step_reward(components: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Return the reward, the weighted sum of the components: ``sum_c weights_c components_c``.

    Args:
        components: ``(batch, 4)`` from :func:`reward_components`.
        weights: ``(4,)`` weights in :data:`COMPONENT_NAMES` order.

    Returns:
        ``(batch,)`` rewards.

    >>> step_reward(np.array([[1.0, 0.5, 0.0, 1.0]]), np.array([0.3, 0.3, 0.4, 0.0])).round(6).tolist()
    [0.45]
    """
    reward = np.zeros(components.shape[0])
    for row in range(components.shape[0]):
        for c in range(NUM_COMPONENTS):
            reward[row] += weights[c] * components[row, c]
    return reward
