"""affectgym/EmotionState-v0 (numeric) and its native vector env: steer a 7-dim emotion state.

The subpackage, bottom up:

- :mod:`~affectgym.envs.emotion_state.dynamics`: the transition and reward, written once as
  their equations over batches of states (compiled by numba), both the specification and
  what every environment runs;
- :mod:`~affectgym.envs.emotion_state.data`: the transition prior and target arcs (JSON);
- :mod:`~affectgym.envs.emotion_state.batch`: :class:`EmotionBatch`, the rows of a batch of
  environments, and :func:`step_rows`, the one call that steps them through the equations;
- :mod:`~affectgym.envs.emotion_state.config`: :class:`EmotionStateConfig`, the one set of
  options, and :class:`EmotionStateCore`, those options compiled;
- :mod:`~affectgym.envs.emotion_state.env`: :class:`EmotionStateEnv` (EmotionState-v0);
- :mod:`~affectgym.envs.emotion_state.vector`: :class:`EmotionStateVectorEnv`;
- :mod:`~affectgym.envs.emotion_state.plot`: play an episode and plot it.

The text form for language models, EmotionStateText-v0, is
:mod:`affectgym.envs.emotion_state_text`.
"""

from __future__ import annotations

from affectgym.envs.emotion_state.batch import EmotionBatch, checked_actions, step_rows
from affectgym.envs.emotion_state.config import (
    DEFAULT_MAX_EPISODE_STEPS,
    DEFAULT_START_NOISE,
    EmotionStateConfig,
    EmotionStateCore,
)
from affectgym.envs.emotion_state.data import EmotionArc, load_arcs, load_transition_prior
from affectgym.envs.emotion_state.dynamics import (
    ANGER,
    COMPONENT_NAMES,
    DEFAULT_ALPHA,
    DEFAULT_SMOOTHNESS_SCALE,
    DISGUST,
    EMOTIONS,
    FEAR,
    JOY,
    NEUTRAL,
    NUM_EMOTIONS,
    SADNESS,
    SURPRISE,
    EmotionRewardWeights,
    composition,
    exclusion_rules,
    next_state,
    reward_components,
    rise_rates,
    step_reward,
)
from affectgym.envs.emotion_state.env import EmotionStateEnv, describe_state
from affectgym.envs.emotion_state.vector import EmotionStateVectorEnv

__all__ = [
    "ANGER",
    "COMPONENT_NAMES",
    "DEFAULT_ALPHA",
    "DEFAULT_MAX_EPISODE_STEPS",
    "DEFAULT_SMOOTHNESS_SCALE",
    "DEFAULT_START_NOISE",
    "DISGUST",
    "EMOTIONS",
    "FEAR",
    "JOY",
    "NEUTRAL",
    "NUM_EMOTIONS",
    "SADNESS",
    "SURPRISE",
    "EmotionArc",
    "EmotionBatch",
    "EmotionRewardWeights",
    "EmotionStateConfig",
    "EmotionStateCore",
    "EmotionStateEnv",
    "EmotionStateVectorEnv",
    "checked_actions",
    "composition",
    "describe_state",
    "exclusion_rules",
    "load_arcs",
    "load_transition_prior",
    "next_state",
    "reward_components",
    "rise_rates",
    "step_reward",
    "step_rows",
]
