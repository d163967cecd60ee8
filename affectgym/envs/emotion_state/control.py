"""The proportional controller of the emotion-state envs: EmotionState-v0's oracle, and the agents' ``controller``."""

from __future__ import annotations

from typing import Any

import numpy as np

#: Gain of the proportional controller: with the text env's alpha 0.5 the state reaches the
#: target in one step; with the numeric env's 0.2 it closes 40 % of the gap per step.
DEFAULT_CONTROLLER_GAIN = 2.0


def proportional_command(state: Any, target: Any, gain: float = DEFAULT_CONTROLLER_GAIN) -> np.ndarray:
    """The intensities to command: ``state + gain * (target - state)``, clipped to [0, 1].

    Args:
        state: The current intensities.
        target: The target intensities.
        gain: How far past the target to aim; 1 commands the target itself.

    Returns:
        The command, float32.

    >>> [round(float(v), 2) for v in proportional_command([0.2, 0.5], [0.4, 0.5])]
    [0.6, 0.5]
    >>> proportional_command([0.0], [1.0], gain=3.0).tolist()
    [1.0]
    """
    state = np.asarray(state, dtype=np.float64)
    return np.clip(state + gain * (np.asarray(target, dtype=np.float64) - state), 0.0, 1.0).astype(np.float32)
