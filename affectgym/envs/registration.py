"""Environment ids, their entry points, plugin discovery, and :func:`make` (``affectgym.make``).

The built-in environments are one table (:data:`BUILTIN_ENVS`), registered with
:func:`gymnasium.register` under the ``affectgym/`` namespace when ``affectgym`` is
imported. A third-party package adds its own environments through the entry-point group
``affectgym.envs``: each entry point names a callable that registers its ids, e.g. in the
plugin's ``setup.cfg``::

    [options.entry_points]
    affectgym.envs =
        mypkg = mypkg.envs:register_envs
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec, load_env_creator

logger = logging.getLogger(__name__)

PLUGIN_GROUP = "affectgym.envs"


@dataclass(frozen=True)
class BuiltinEnv:
    """One row of the registration table.

    Attributes:
        entry_point: ``"module:Class"`` of the environment.
        kwargs: Default keyword arguments passed to the class.
        vector_entry_point: ``"module:Class"`` of a native vector env, if any.
        max_episode_steps: The episode length ``gym.make`` enforces with its ``TimeLimit``
            (``None``: the env ends its episodes itself).
    """

    entry_point: str
    kwargs: dict[str, Any] | None = None
    vector_entry_point: str | None = None
    max_episode_steps: int | None = None


BUILTIN_ENVS: dict[str, BuiltinEnv] = {
    "affectgym/Sarcasm-v0": BuiltinEnv("affectgym.envs.sarcasm:SarcasmEnv"),
    "affectgym/SpeechEmotion-v0": BuiltinEnv("affectgym.envs.speech_emotion:SpeechEmotionEnv"),
    "affectgym/EmotionStyle-v0": BuiltinEnv("affectgym.envs.emotion_style:EmotionStyleEnv"),
    "affectgym/EmpatheticDialogue-v0": BuiltinEnv("affectgym.envs.dialogue:DialogueEnv"),
    "affectgym/EmotionState-v0": BuiltinEnv(
        "affectgym.envs.emotion_state.env:EmotionStateEnv",
        vector_entry_point="affectgym.envs.emotion_state.vector:EmotionStateVectorEnv",
    ),
    "affectgym/EmotionStateText-v0": BuiltinEnv("affectgym.envs.emotion_state_text:EmotionStateTextEnv"),
}

#: Ids registered by each plugin, filled by :func:`load_plugins`.
PLUGIN_ENVS: dict[str, list[str]] = {}


def register_builtin_envs() -> None:
    """Register every id of :data:`BUILTIN_ENVS` that is not registered yet."""
    for env_id, row in BUILTIN_ENVS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point=row.entry_point,
            vector_entry_point=row.vector_entry_point,
            max_episode_steps=row.max_episode_steps,
            kwargs=dict(row.kwargs or {}),
            disable_env_checker=False,
        )


def load_plugins() -> dict[str, list[str]]:
    """Call every ``affectgym.envs`` entry point once; return the ids each registered.

    A plugin that fails to load is logged and skipped: one broken plugin must not stop
    ``import affectgym``.
    """
    for entry_point in metadata.entry_points(group=PLUGIN_GROUP):
        if entry_point.name in PLUGIN_ENVS:
            continue
        before = set(gym.registry)
        try:
            entry_point.load()()
        except Exception as exc:  # a broken third-party plugin is reported, not fatal
            logger.warning("affectgym plugin %r (%s) failed to load: %s", entry_point.name, entry_point.value, exc)
            PLUGIN_ENVS[entry_point.name] = []
            continue
        PLUGIN_ENVS[entry_point.name] = sorted(set(gym.registry) - before)
    return PLUGIN_ENVS


def make(env_id: str | EnvSpec, **kwargs: Any) -> gym.Env:
    """Create an environment: :func:`gymnasium.make`, save for one thing Gymnasium cannot do.

    An env that ends its own episodes (a class attribute ``takes_step_limit = True``, e.g.
    EmotionState-v0, whose target schedule follows its step limit) is given
    ``max_episode_steps`` as its own option. ``gymnasium.make`` would wrap it in a
    ``TimeLimit`` of that length and tell the env nothing.
    """
    limit = kwargs.get("max_episode_steps")
    if limit is None or limit == -1:
        return gym.make(env_id, **kwargs)
    spec = env_id if isinstance(env_id, EnvSpec) else gym.spec(env_id)
    creator = spec.entry_point if callable(spec.entry_point) else load_env_creator(spec.entry_point)
    if not getattr(creator, "takes_step_limit", False):
        return gym.make(env_id, **kwargs)
    options = {name: value for name, value in kwargs.items() if name != "max_episode_steps"}
    return gym.make(dataclasses.replace(spec, kwargs={**spec.kwargs, "max_episode_steps": limit}), **options)


def split_shaping_arguments(env_id: str, env_kwargs: Mapping[str, Any]) -> list[str]:
    """The keys of ``env_kwargs`` that change the splits of ``env_id``: ``split``, and the env class's
    ``split_arguments`` (an eval fraction, a grouping).

    A training run refuses them, so that it never trains on a scenario of the registered
    validation or eval split. An id that is not registered, or whose entry point is not a class,
    declares nothing beyond ``split``.

    >>> split_shaping_arguments("affectgym/Sarcasm-v0", {"eval_fraction": 0.0, "max_turns": 4, "group_by": "speaker"})
    ['eval_fraction', 'group_by']
    """
    declared: tuple[str, ...] = ()
    if env_id in gym.registry:
        entry = gym.spec(env_id).entry_point
        creator = load_env_creator(entry) if isinstance(entry, str) else entry
        declared = tuple(getattr(creator, "split_arguments", ()) or ())
    return [key for key in env_kwargs if key == "split" or key in declared]


def affectgym_env_ids() -> list[str]:
    """Every id that affectgym knows: the built-in ones and those its plugins registered."""
    ids = [env_id for env_id in BUILTIN_ENVS if env_id in gym.registry]
    for plugin_ids in PLUGIN_ENVS.values():
        ids += [env_id for env_id in plugin_ids if env_id not in ids]
    return ids


def env_summary(env_id: str) -> str:
    """First line of the docstring of the class behind ``env_id``."""
    from gymnasium.envs.registration import load_env_creator

    entry_point = gym.spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    doc = (creator.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else "(no description)"
