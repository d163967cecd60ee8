"""affectgym: Gymnasium environments for language-model agents on affective tasks.

>>> import affectgym
>>> "affectgym/Sarcasm-v0" in affectgym.list_envs() or affectgym.list_envs() == []
True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from affectgym._version import __version__
from affectgym.envs.registration import affectgym_env_ids, load_plugins, make, register_builtin_envs


def check_env(env: gym.Env, **kwargs: Any) -> Any:
    """Check an environment and return the report (it prints nothing); see :func:`affectgym.envs.checker.check_env`."""
    from affectgym.envs.checker import check_env as _check_env

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
