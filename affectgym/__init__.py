"""affectgym: Gymnasium environments for language-model agents on affective tasks.

>>> import affectgym
>>> "affectgym/Sarcasm-v0" in affectgym.list_envs() or affectgym.list_envs() == []
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec, load_env_creator

from affectgym._version import __version__
from affectgym.envs.registration import affectgym_env_ids, load_plugins, register_builtin_envs


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


def check_env(env: gym.Env, **kwargs: Any) -> Any:
    """Check an environment and return the report, printing nothing; see :func:`affectgym.envs.checker.check_env`.

    Gymnasium's render check renders the env in ``"human"`` mode, which prints the episode
    (a whole system prompt); that print is dropped here, and the report holds the findings.
    """
    import contextlib
    import io

    from affectgym.envs.checker import check_env as _check_env

    with contextlib.redirect_stdout(io.StringIO()):
        return _check_env(env, **kwargs)


def validate(env: str | gym.Env, **kwargs: Any) -> Any:
    """Check an env's rewards, determinism and leakage after OpenEnv's RFC 008; see :func:`affectgym.envs.validation.validate`."""
    from affectgym.envs.validation import validate as _validate

    return _validate(env, **kwargs)


def list_envs() -> list[str]:
    """Ids of the built-in environments and of those registered by plugins."""
    return affectgym_env_ids()


register_builtin_envs()
load_plugins()

__all__ = ["__version__", "check_env", "list_envs", "make", "validate"]
