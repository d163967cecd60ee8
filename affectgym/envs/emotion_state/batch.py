"""The rows of a batch of emotion-state environments, and the one call that steps them.

Every environment (single, vector, text) keeps its episodes in an :class:`EmotionBatch` and
advances them with :func:`step_rows`, which applies the equations of
:mod:`affectgym.envs.emotion_state.dynamics` (:func:`next_state`, :func:`reward_components`,
:func:`step_reward`) to the whole batch in one compiled call: at a batch of one, a call from
Python costs more than the arithmetic, so a step is one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numba
import numpy as np

from affectgym.envs.emotion_state.dynamics import (
    NUM_COMPONENTS,
    NUM_EMOTIONS,
    next_state,
    reward_components,
    step_reward,
)

# Layout of an env's row: its observation is the first 22 entries (21 without the time entry).
STATE_SLICE = slice(0, 7)
TARGET_SLICE = slice(7, 14)
PREV_SLICE = slice(14, 21)
TIME_INDEX = 21
OBS_SIZE = 22
STATE, TARGET, PREV = STATE_SLICE.start, TARGET_SLICE.start, PREV_SLICE.start

DTYPE = np.float32  # of the observations, so of the rows


class EmotionBatch:
    """The rows of ``num_envs`` environments and the outputs of their last step, allocated once.

    ``rows`` holds one float32 row per environment, ``[state (7), target (7), previous state
    (7), remaining-steps fraction]``: the observation is its first 21 or 22 entries.
    ``state``, ``target``, ``prev`` and ``time`` are views into it; :func:`step_rows` writes
    ``reward`` (``(num_envs,)``), ``components`` (``(num_envs, 4)``) and ``invalid``
    (``(num_envs,)`` bool).

    Args:
        num_envs: Batch size.

    >>> batch = EmotionBatch.from_arrays([[0.5] * 7], target=[[0.5] * 7])
    >>> batch.rows.shape, batch.state.tolist() == batch.prev.tolist()
    ((1, 22), True)
    """

    __slots__ = ("num_envs", "rows", "state", "target", "prev", "time", "reward", "components", "invalid")

    def __init__(self, num_envs: int):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs!r}")
        n = self.num_envs = int(num_envs)
        self.rows = np.zeros((n, OBS_SIZE), dtype=DTYPE)
        self.state = self.rows[:, STATE_SLICE]
        self.target = self.rows[:, TARGET_SLICE]
        self.prev = self.rows[:, PREV_SLICE]
        self.time = self.rows[:, TIME_INDEX]
        self.reward = np.zeros(n)
        self.components = np.zeros((n, NUM_COMPONENTS))
        self.invalid = np.zeros(n, dtype=np.bool_)

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


@numba.njit(cache=True)
def step_rows(
    rows: np.ndarray,
    action: np.ndarray,
    multipliers: np.ndarray,
    alpha: float,
    smoothness_scale: float,
    weights: np.ndarray,
    reward: np.ndarray,
    components: np.ndarray,
    invalid: np.ndarray,
) -> None:
    """Step every row of a batch toward its action, in place; targets and time are left as they are.

    Per row, with ``p`` its state and ``t`` its target: ``s = next_state(p, a)``, then the
    row's previous state becomes ``p`` and its state ``s``; ``components =
    reward_components(s, p, t)`` and ``reward = step_reward(components, weights)``. A row
    whose action holds a NaN is invalid: its state does not move (the previous state becomes
    the current one), its reward and components are 0 and ``invalid`` is True for it.

    Args:
        rows: ``(batch, 22)`` rows of an :class:`EmotionBatch`; updated.
        action: ``(batch, 7)`` commanded intensities (clipped to [0, 1] by :func:`next_state`).
        multipliers: ``(7, 7)`` rise-rate multipliers.
        alpha: Weight of the new action, in (0, 1].
        smoothness_scale: Mean change per step at which smoothness is 0.5, > 0.
        weights: ``(4,)`` reward weights in ``COMPONENT_NAMES`` order.
        reward: ``(batch,)`` output.
        components: ``(batch, 4)`` output.
        invalid: ``(batch,)`` bool output.

    >>> batch = EmotionBatch.from_arrays([[0.5] * 7, [0.5] * 7], target=[[0.55] * 7, [0.55] * 7])
    >>> action = np.array([[0.75] * 7, [np.nan] + [0.75] * 6])
    >>> step_rows(batch.rows, action, np.ones((7, 7)), 0.2, 0.05, np.array([0.3, 0.3, 0.4, 0.0]),
    ...           batch.reward, batch.components, batch.invalid)
    >>> batch.state.astype(float).round(6).tolist(), batch.invalid.tolist()
    ([[0.55, 0.55, 0.55, 0.55, 0.55, 0.55, 0.55], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]], [False, True])
    >>> batch.reward.round(6).tolist(), batch.components[:, :3].round(6).tolist()
    ([0.85, 0.0], [[1.0, 0.5, 1.0], [0.0, 0.0, 0.0]])
    """
    n = rows.shape[0]
    prev = np.empty((n, NUM_EMOTIONS))
    target = np.empty((n, NUM_EMOTIONS))
    commanded = np.empty((n, NUM_EMOTIONS))
    for row in range(n):
        invalid[row] = False
        for j in range(NUM_EMOTIONS):
            if np.isnan(action[row, j]):
                invalid[row] = True
        for j in range(NUM_EMOTIONS):
            prev[row, j] = rows[row, STATE + j]
            target[row, j] = rows[row, TARGET + j]
            # An invalid row commands its own state, so no NaN enters the equations.
            commanded[row, j] = prev[row, j] if invalid[row] else action[row, j]
    state = next_state(prev, commanded, multipliers, alpha)
    scores = reward_components(state, prev, target, smoothness_scale)
    paid = step_reward(scores, weights)
    for row in range(n):
        for j in range(NUM_EMOTIONS):
            rows[row, PREV + j] = prev[row, j]
            rows[row, STATE + j] = prev[row, j] if invalid[row] else state[row, j]
        for c in range(NUM_COMPONENTS):
            components[row, c] = 0.0 if invalid[row] else scores[row, c]
        reward[row] = 0.0 if invalid[row] else paid[row]


def checked_actions(action: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``action`` as an array of real numbers of exactly ``shape``, or one clear ``ValueError``.

    Nothing is broadcast: a scalar, a ``(6,)`` or a ``(1, 7)`` action for a ``(7,)`` slot
    is refused rather than guessed at. Integers are read as intensities; booleans,
    strings, objects and complex numbers are refused.

    Args:
        action: What the agent sent.
        shape: The shape the env expects: ``(7,)``, or ``(num_envs, 7)`` for the vector env.

    Returns:
        ``action`` itself when it is already a float32 or float64 array of that shape, else
        a float64 copy (the dtypes :func:`step_rows` is compiled for).

    Raises:
        ValueError: The shape or the dtype is wrong; the message names both expected ones.

    >>> checked_actions([0, 0, 0, 1, 0, 0, 0], (7,)).shape
    (7,)
    >>> checked_actions(0.5, (7,))
    Traceback (most recent call last):
    ...
    ValueError: action must be an array of shape (7,) with a real dtype (e.g. float32, as action_space: one intensity in [0, 1] per emotion), got shape () and dtype float64; nothing is broadcast
    """
    if type(action) is np.ndarray and action.shape == shape and action.dtype.char in "fd":
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
    return array if array.dtype.char in "fd" else array.astype(np.float64)
