"""Native batched vector env for affectgym/EmotionState-v0.

The single env's dynamics and reward are already batched
(:func:`affectgym.envs.emotion_state.batch.step_rows` over the equations of
:mod:`affectgym.envs.emotion_state.dynamics`); this class runs them over ``num_envs`` rows at
once, like Gymnasium's ``CartPoleVectorEnv``, with next-step autoreset. Use it through
``gymnasium.make_vec("affectgym/EmotionState-v0", num_envs=N,
vectorization_mode="vector_entry_point")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from affectgym.envs.emotion_state.batch import EmotionBatch, checked_actions
from affectgym.envs.emotion_state.config import EmotionStateConfig, EmotionStateCore
from affectgym.envs.emotion_state.dynamics import NUM_EMOTIONS


class EmotionStateVectorEnv(VectorEnv):
    """``num_envs`` copies of :class:`~affectgym.envs.emotion_state.EmotionStateEnv` in one array.

    Every row follows exactly the single env's rules (same equations, same arcs, same reward);
    see that class for the task. Differences:

    - Spaces: ``single_observation_space`` / ``single_action_space`` are the single env's;
      ``observation_space`` is ``(num_envs, 22)`` and ``action_space`` ``(num_envs, 7)``.
    - Autoreset (``AutoresetMode.NEXT_STEP``, as Gymnasium's vector envs): the step after a
      row is truncated resets that row, ignores its action, and returns its first observation
      with reward 0 and ``truncated`` False.
    - ``info["reward_components"]`` maps each component to a ``(num_envs,)`` array;
      ``info["arc_index"]`` gives each row's arc (an index into ``self.core.arcs``).
    - ``reset(options={"arc": name})`` starts every row on that arc; later autoresets draw
      arcs at random.
    - A row whose action holds a NaN is invalid, as in the single env: its state does not
      move, its reward and components are 0, and ``info["invalid_action"]`` (a
      ``(num_envs,)`` bool array) marks it; the other rows step as usual. Actions of
      another shape than ``(num_envs, 7)`` (a single ``(7,)`` row included) or not of real
      numbers raise a ``ValueError``; nothing is broadcast.

    Args:
        num_envs: Number of rows.
        config: The options (None for the defaults); see :class:`EmotionStateConfig`.
        render_mode: Accepted for compatibility; nothing is rendered.
        **options: Fields of :class:`EmotionStateConfig` (override ``config``'s), the same
            keywords as the single env's.

    >>> env = EmotionStateVectorEnv(num_envs=4)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype
    ((4, 22), dtype('float32'))
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    >>> reward.shape, sorted(info["reward_components"])
    ((4,), ['intensity', 'smoothness', 'target_match'])
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        config: EmotionStateConfig | None = None,
        *,
        render_mode: str | None = None,
        **options: Any,
    ):
        if render_mode is not None:
            gym.logger.warn(
                f"render_mode {render_mode!r} is not supported by the vector env; nothing is rendered"
            )
        self.render_mode = render_mode
        self.core = core = EmotionStateCore(config, **options)
        self.num_envs = n = int(num_envs)
        self.single_observation_space = spaces.Box(0.0, 1.0, (core.obs_size,), dtype=np.float32)
        self.single_action_space = spaces.Box(0.0, 1.0, (NUM_EMOTIONS,), dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._batch = EmotionBatch(n)
        self._obs = self._batch.rows[:, : core.obs_size]
        self._num_components = len(core.component_names)
        self._action_shape = (n, NUM_EMOTIONS)
        self._arc_index = np.zeros(n, dtype=np.intp)
        self._steps = np.zeros(n, dtype=np.intp)
        self._prev_done = np.zeros(n, dtype=bool)

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every row.

        Args:
            seed: Seed for ``self.np_random`` (one int for the whole batch).
            options: ``{"arc": name}`` to start every row on that arc.

        Returns:
            ``(observations, info)`` with ``info["arc_index"]``.
        """
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be an int or None for the native vector env, got {seed!r}")
        super().reset(seed=seed)
        core = self.core
        if options and options.get("arc") is not None:
            self._arc_index[:] = core.arc_index(options, self.np_random)
        else:
            self._arc_index[:] = self.np_random.integers(len(core.arcs), size=self.num_envs)
        self._prev_done[:] = False
        self._start_rows(slice(None))
        return self._obs.copy(), {"arc_index": self._arc_index.copy()}

    def _start_rows(self, rows: slice | np.ndarray) -> None:
        core = self.core
        batch = self._batch
        first = core.schedules[self._arc_index[rows], 0]
        start = core.start_states(first, self.np_random)
        batch.state[rows] = start
        batch.prev[rows] = start
        batch.target[rows] = first
        batch.time[rows] = 1.0
        self._steps[rows] = 0

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every row; rows truncated at the previous step are reset instead.

        Args:
            actions: ``(num_envs, 7)`` commanded intensities; clipped to [0, 1]. A row
                with a NaN is invalid (see the class docstring).

        Raises:
            ValueError: ``actions`` is not a ``(num_envs, 7)`` array of real numbers.

        Returns:
            ``(observations, rewards, terminated, truncated, info)``.
        """
        core = self.core
        batch = self._batch
        core.step(batch, checked_actions(actions, self._action_shape))
        reward = batch.reward.copy()
        components = batch.components[:, : self._num_components].copy()
        invalid = batch.invalid.copy()
        steps = self._steps
        steps += 1
        done = self._prev_done
        if done.any():
            rows = np.flatnonzero(done)
            self._arc_index[rows] = self.np_random.integers(len(core.arcs), size=len(rows))
            self._start_rows(rows)
            reward[rows] = 0.0
            components[rows] = 0.0
        batch.target[:] = core.schedules[self._arc_index, steps]
        batch.time[:] = core.time_left[steps]
        truncated = steps >= core.max_episode_steps
        self._prev_done = truncated.copy()
        info = {
            "reward_components": {
                name: components[:, i] for i, name in enumerate(core.component_names)
            },
            "arc_index": self._arc_index.copy(),
            "invalid_action": invalid,
        }
        terminated = np.zeros(self.num_envs, dtype=bool)
        return self._obs.copy(), reward, terminated, truncated, info
