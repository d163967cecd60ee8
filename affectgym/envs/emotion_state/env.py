"""affectgym/EmotionState-v0: steer a 7-dimension emotion state smoothly along target arcs.

The design follows the emotion-state article in ``seeds/002`` (an EMOTRON-3B write-up) with
its mechanics kept and its mistakes fixed; each departure is documented in
:class:`EmotionStateEnv`'s docstring.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from affectgym.envs.emotion_state.batch import EmotionBatch, checked_actions
from affectgym.envs.emotion_state.config import (
    EmotionStateConfig,
    EmotionStateCore,
)
from affectgym.envs.emotion_state.control import proportional_command
from affectgym.envs.emotion_state.data import EmotionArc
from affectgym.envs.emotion_state.dynamics import EMOTIONS, NUM_EMOTIONS

_ACTION_SHAPE = (NUM_EMOTIONS,)


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
    Values outside [0, 1] are clipped, ``inf`` and ``-inf`` included (to 1 and 0). An
    action with a NaN entry is invalid: the state does not move (the previous state
    becomes the current one), the step pays 0, the lowest reward, with every component 0,
    ``info["invalid_action"]`` is True (False on valid steps), and the step counts toward
    the limit. So a NaN never enters the state, the observation or the reward. An action
    of another shape, or not of real numbers, raises a ``ValueError`` naming the expected
    shape and dtype; a scalar is never broadcast to the seven emotions.

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

    No termination. The env ends its own episodes: it truncates after ``max_episode_steps``
    (default 60) steps, and ``env.spec.max_episode_steps`` says so. The target schedule and the
    remaining-time entry (0 on the last step) follow that limit, so the env is registered
    without a ``TimeLimit``. ``affectgym.make(..., max_episode_steps=N)`` passes N to the env
    as its own limit. Plain ``gym.make(..., max_episode_steps=N)`` cannot: Gymnasium hands N
    to a ``TimeLimit`` wrapper and tells the env nothing, so with N below the env's limit the
    wrapper cuts episodes early (the remaining-time entry above 0 at the cut). With
    ``gym.make``, set the limit with ``config=EmotionStateConfig(max_episode_steps=N)``;
    ``gym.make_vec`` passes ``max_episode_steps`` to the native vector env. The last step's ``info`` adds
    ``episode_reward_components`` (each component's mean over the episode) and ``outcome``
    (``arc``, ``steps``, ``mean_step_reward``).

    ## Arguments

    ```python
    >>> import affectgym
    >>> env = affectgym.make("affectgym/EmotionState-v0", alpha=0.2, max_episode_steps=60)
    >>> obs, info = env.reset(seed=0, options={"arc": "good_news"})
    >>> obs.shape, info["arc"]
    ((22,), 'good_news')
    >>> obs, reward, terminated, truncated, info = env.step(obs[7:14])
    >>> sorted(info["reward_components"])
    ['intensity', 'smoothness', 'target_match']

    ```

    The keyword arguments are the fields of :class:`EmotionStateConfig`; a whole config can
    be passed as ``config=`` instead (keywords then override its fields):

    - ``alpha`` (0.2): weight of the new action in the moving average, in (0, 1].
    - ``max_episode_steps`` (60): step limit.
    - ``include_time`` (True): append the remaining-steps fraction to the observation.
    - ``reward_weights``: :class:`EmotionRewardWeights` or a mapping of component weights.
    - ``smoothness_scale`` (0.05): mean change per step at which smoothness is 0.5.
    - ``start_noise`` (0.05): half-width of the uniform noise on the starting state.
    - ``transition_prior``: path or mapping of the prior JSON (default: shipped file).
    - ``arcs``: path or mapping of the arcs JSON (default: shipped file).
    - ``arc_names``: restrict the arcs drawn at reset to these names.
    - ``split`` ("all"): ``"train"`` or ``"eval"`` serve the arcs of a fixed hash split by arc
      name (the text env's split); ``env.scenario_ids`` lists the arcs served.
    - ``render_mode``: ``"ansi"`` (text bars for state and target), ``"rgb_array"`` (an
      image of the state bars and of the intensities over the episode so far, for
      ``gymnasium.wrappers.RecordVideo``; needs matplotlib) or None; other modes warn and
      render nothing.

    ``reset(options={"arc": name})`` (or ``{"scenario_id": name}``, as for every affectgym
    env) plays the named arc.

    ## Version History

    * v0: Initial version.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 10}
    #: The LLM-free agent ``affectgym eval --agent baseline`` plays: the proportional controller.
    recommended_baseline: ClassVar[str] = "controller"
    #: The env ends its own episodes: ``affectgym.make`` passes ``max_episode_steps`` to it.
    takes_step_limit: ClassVar[bool] = True

    def __init__(
        self,
        config: EmotionStateConfig | None = None,
        *,
        render_mode: str | None = None,
        **options: Any,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            # Warn, as Gymnasium's own envs do: Stable-Baselines3's make_vec_env passes
            # render_mode="rgb_array" to every env it builds.
            gym.logger.warn(
                f"render_mode {render_mode!r} is not supported (accepted: None, 'ansi', 'rgb_array'); render() returns None"
            )
        self.render_mode = render_mode
        self._spec: EnvSpec | None = None
        self.core = core = EmotionStateCore(config, **options)
        self.observation_space = spaces.Box(0.0, 1.0, (core.obs_size,), dtype=np.float32)
        self.action_space = spaces.Box(0.0, 1.0, (NUM_EMOTIONS,), dtype=np.float32)
        # One row; the views below are made once so step() allocates little.
        self._batch = EmotionBatch(1)
        self._time_left = core.time_left.tolist()
        self._target_row = self._batch.target[0]
        self._time = self._batch.time
        self._obs = self._batch.rows[0, : core.obs_size]
        self._components = self._batch.components[0, : len(core.component_names)]
        self._component_sums = np.zeros(len(core.component_names))
        self._return = 0.0
        self._schedule: np.ndarray | None = None
        self._target_rows: list[np.ndarray] = []
        self._target_changes: list[bool] = []
        self._arc: EmotionArc | None = None
        self._step_index = 0
        # (state, target) rows of this episode, kept only for render_mode="rgb_array".
        self._shown: list[tuple[np.ndarray, np.ndarray]] = []

    @property
    def spec(self) -> EnvSpec | None:
        """The env's spec; its ``max_episode_steps`` is the env's own step limit."""
        return self._spec

    @spec.setter
    def spec(self, spec: EnvSpec | None) -> None:
        # The env ends its own episodes, so its spec reports its own step limit.
        if spec is not None:
            spec = dataclasses.replace(spec, max_episode_steps=self.core.max_episode_steps)
        self._spec = spec

    @property
    def scenario_ids(self) -> list[str]:
        """The names of the arcs this env serves (its split); ``reset(options={"scenario_id": name})`` plays one."""
        return [arc.name for arc in self.core.arcs]

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
        start = core.start_states(first_target[None], self.np_random)
        batch = self._batch
        batch.state[:] = start
        batch.prev[:] = start
        batch.target[:] = first_target
        batch.time[:] = 1.0
        self._component_sums[:] = 0.0
        self._return = 0.0
        info = {"arc": self._arc.name, "target_name": core.target_names[self._arc.name][0]}
        if self.render_mode == "rgb_array":
            self._shown = [(batch.state[0].copy(), self._target_row.copy())]
        return self._obs.copy(), info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Command the next intensities.

        Args:
            action: Seven intensities, shape ``(7,)``; clipped to [0, 1]. With a NaN the
                step is invalid (see Action Space).

        Raises:
            ValueError: ``action`` is not a ``(7,)`` array of real numbers.

        Returns:
            ``(observation, reward, terminated, truncated, info)``; ``info["reward_components"]``
            maps each enabled component to its value.
        """
        core = self.core
        if self._schedule is None or self._step_index >= core.max_episode_steps:
            raise gym.error.ResetNeeded(
                "EmotionStateEnv.step() called before reset() or after the episode was truncated"
            )
        batch = self._batch
        core.step(batch, checked_actions(action, _ACTION_SHAPE)[None])
        reward = float(batch.reward[0])
        invalid = bool(batch.invalid[0])
        k = self._step_index = self._step_index + 1
        if self._target_changes[k]:
            np.copyto(self._target_row, self._target_rows[k])
        self._time[0] = self._time_left[k]
        info = {
            "reward_components": dict(
                zip(core.component_names, self._components.tolist(), strict=False)
            ),
            "invalid_action": invalid,
        }
        self._component_sums += self._components
        self._return += reward
        truncated = k >= core.max_episode_steps
        if truncated:
            means = (self._component_sums / k).tolist()
            info["episode_reward_components"] = dict(zip(core.component_names, means, strict=True))
            info["outcome"] = {"arc": self._arc.name, "steps": k, "mean_step_reward": self._return / k}
        if self.render_mode == "rgb_array":
            self._shown.append((self._batch.state[0].copy(), self._target_row.copy()))
        return self._obs.copy(), reward, False, truncated, info

    # ------------------------------------------------------------------ oracle and canaries (affectgym validate)
    def reference_policy(self, observation: np.ndarray) -> np.ndarray:
        """The oracle ``affectgym validate`` plays: the proportional controller on the observation's
        state and target (:func:`~affectgym.envs.emotion_state.control.proportional_command`, gain 2)."""
        return proportional_command(observation[:NUM_EMOTIONS], observation[NUM_EMOTIONS:2 * NUM_EMOTIONS])

    def idle_policy(self, observation: np.ndarray) -> np.ndarray:
        """Doing nothing: the zero action, what a policy that outputs nothing sends (it commands no emotion)."""
        return np.zeros(NUM_EMOTIONS, dtype=np.float32)

    def canary_policies(self) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
        """Cheap policies that must earn less than the oracle: every emotion commanded at full (the
        article's intensity term paid for it whatever the target), and the state held where it is
        (smoothness alone: it ignores every change of target)."""
        return {"every_emotion_full": lambda observation: np.ones(NUM_EMOTIONS, dtype=np.float32),
                "state_held": lambda observation: np.array(observation[:NUM_EMOTIONS], dtype=np.float32)}

    def render(self) -> str | np.ndarray | None:
        """The state and target as text bars (``"ansi"``) or as an ``(320, 640, 3)`` uint8 image (``"rgb_array"``)."""
        if self.render_mode not in self.metadata["render_modes"]:
            gym.logger.warn(
                f"render() with render_mode={self.render_mode!r} draws nothing; "
                "pass render_mode='ansi' or 'rgb_array' to gym.make"
            )
            return None
        head = (
            "(not reset)" if self._arc is None
            else f"arc {self._arc.name}, step {self._step_index}/{self.core.max_episode_steps}"
        )
        if self.render_mode == "rgb_array":
            from affectgym.envs.emotion_state.plot import render_frame

            shown = self._shown or [(self._batch.state[0].copy(), self._target_row.copy())]
            states, targets = (np.stack(rows) for rows in zip(*shown, strict=True))
            return render_frame(states, targets, max_steps=self.core.max_episode_steps, title=head)
        if self._arc is None:
            return head
        return f"{head}\nstate:\n{describe_state(self._batch.state[0])}\ntarget:\n{describe_state(self._target_row)}"
