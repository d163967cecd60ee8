"""affectgym: Gymnasium environments for language-model agents on affective tasks.

>>> import affectgym
>>> "affectgym/Sarcasm-v0" in affectgym.list_envs() or affectgym.list_envs() == []
True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from affectgym._version import __version__
from affectgym.envs.registration import affectgym_env_ids, load_plugins, register_builtin_envs


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """Create an environment: a thin alias of :func:`gymnasium.make`."""
    return gym.make(env_id, **kwargs)


def check_env(env: gym.Env, **kwargs: Any) -> Any:
    """Check an environment; see :func:`affectgym.envs.checker.check_env`."""
    from affectgym.envs.checker import check_env as _check_env

    return _check_env(env, **kwargs)


def list_envs() -> list[str]:
    """Ids of the built-in environments and of those registered by plugins."""
    return affectgym_env_ids()


register_builtin_envs()
load_plugins()

__all__ = ["__version__", "check_env", "list_envs", "make"]
