"""The subclass API of AffectEnv is public: no env overrides a private method of the base class."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.envs.registration import load_env_creator
from toy_env import ToyMoodEnv

import affectgym
from affectgym.envs.core import AffectEnv


def registered_env_classes() -> dict[str, type]:
    """The class behind every affectgym id (the built-in ones, plug-ins, any ``affectgym/`` id)."""
    ids = {*affectgym.list_envs(), *(env_id for env_id in gym.registry if env_id.startswith("affectgym/"))}
    classes = {}
    for env_id in sorted(ids):
        entry_point = gym.spec(env_id).entry_point
        classes[env_id] = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    return classes


def private_overrides(cls: type) -> list[str]:
    """``Class._name`` for every non-dunder ``_name`` that ``cls`` or a base below AffectEnv defines and AffectEnv has too."""
    found = []
    for klass in cls.__mro__:
        if klass is AffectEnv or not issubclass(klass, AffectEnv):
            continue
        for name in vars(klass):
            dunder = name.startswith("__") and name.endswith("__")
            if name.startswith("_") and not dunder and hasattr(AffectEnv, name):
                found.append(f"{klass.__name__}.{name}")
    return found


def test_every_registered_affect_env_uses_only_the_public_hooks():
    classes = registered_env_classes()
    affect_envs = {env_id: cls for env_id, cls in classes.items() if isinstance(cls, type) and issubclass(cls, AffectEnv)}
    assert {"affectgym/Sarcasm-v0", "affectgym/EmpatheticDialogue-v0", "affectgym/EmotionStateText-v0"} <= set(affect_envs)
    overrides = {env_id: private_overrides(cls) for env_id, cls in affect_envs.items()}
    assert not any(overrides.values()), {env_id: names for env_id, names in overrides.items() if names}


def test_the_guides_example_env_uses_only_the_public_hooks():
    assert private_overrides(ToyMoodEnv) == []


@pytest.mark.parametrize("name", ["_call_tool", "_info", "_finish"])
def test_overriding_a_private_method_of_the_base_is_found(name):
    sneaky = type("SneakyEnv", (ToyMoodEnv,), {name: lambda self, *args: None})
    assert private_overrides(type("Child", (sneaky,), {})) == [f"SneakyEnv.{name}"]


def test_no_env_overrides_a_private_method_of_any_env_it_derives_from():
    """E.g. Sarcasm-v0 adds MUStARD through the dataset seam, not by overriding SpeechEmotionEnv's loading."""
    found = {}
    for env_id, cls in registered_env_classes().items():
        if not (isinstance(cls, type) and issubclass(cls, AffectEnv)):
            continue
        for klass in cls.__mro__[1:]:
            if not issubclass(klass, AffectEnv) or klass is AffectEnv:
                continue
            names = [name for name, value in vars(cls).items() if callable(value) and name.startswith("_")
                     and not name.startswith("__") and name in vars(klass)]
            if names:
                found[env_id] = [f"{cls.__name__}.{name} over {klass.__name__}" for name in names]
    assert not found, found
