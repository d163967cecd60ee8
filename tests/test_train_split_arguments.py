"""Held out means held out: no argument a trainer is given can move a registered held-out scenario into its train split.

Every built-in env declares the arguments that reshape its splits (``split_arguments``: an eval
fraction, a grouping); ``affectgym train`` refuses them in ``--env-kwargs`` and in a config file,
``eval --from-train`` refuses a run whose config holds one, and ``--demos`` refuses episodes
played under one.
"""

from __future__ import annotations

import json
import textwrap

import gymnasium as gym
import pytest
from toy_env import ToyMoodEnv

import affectgym
from affectgym.envs.registration import split_shaping_arguments
from affectgym.eval import EvalConfig, run_eval
from affectgym.train.config import TrainConfig
from affectgym.train.config_parser import load_config
from affectgym.train.demos import DemonstrationError, episode_demonstrations

#: Each built-in text env, an argument that reshapes its splits and a value that moves eval scenarios into train.
RESHAPING = [
    ("affectgym/Sarcasm-v0", "eval_fraction", 0.01),
    ("affectgym/Sarcasm-v0", "eval_fraction", 0.0),
    ("affectgym/Sarcasm-v0", "validation_fraction", 0.0),
    ("affectgym/Sarcasm-v0", "group_by", "speaker"),
    ("affectgym/SpeechEmotion-v0", "eval_fraction", 0.0),
    ("affectgym/SpeechEmotion-v0", "group_by", "speaker"),
    ("affectgym/EmotionStyle-v0", "eval_fraction", 0.0),
    ("affectgym/EmpatheticDialogue-v0", "eval_fraction", 0.0),
]


@pytest.mark.parametrize(("env_id", "key", "value"), RESHAPING)
def test_each_split_shaping_argument_of_each_builtin_env_moves_eval_scenarios_and_is_refused(env_id, key, value):
    kwargs = {"classifier": "nade"} if env_id in ("affectgym/EmotionStyle-v0", "affectgym/EmpatheticDialogue-v0") else {}
    if env_id == "affectgym/EmpatheticDialogue-v0":
        kwargs["relevance_model"] = None
    eval_ids = set(affectgym.make(env_id, split="eval", **kwargs).unwrapped.scenario_ids)
    try:
        train_ids = set(affectgym.make(env_id, split="train", **kwargs, **{key: value}).unwrapped.scenario_ids)
    except ValueError:
        train_ids = set()  # the env refuses the value itself: nothing moves
    assert key in split_shaping_arguments(env_id, {key: value})
    if key != "validation_fraction" and train_ids:
        assert eval_ids & train_ids, f"{key}={value!r} should move some eval scenarios of {env_id} into train"
    with pytest.raises(ValueError, match=rf"env_kwargs may not set {key}: it changes which scenarios {env_id} holds out"):
        TrainConfig(env_id=env_id, env_kwargs={key: value})


def test_a_config_file_that_reshapes_the_splits_is_refused_naming_the_argument(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text(textwrap.dedent("""\
        env_id: affectgym/Sarcasm-v0
        env_kwargs:
          eval_fraction: 0.0
          max_turns: 4
    """), encoding="utf-8")
    with pytest.raises(ValueError, match=r"recipe.yaml: invalid training config: env_kwargs may not set eval_fraction"):
        load_config(path)


def test_arguments_that_keep_the_splits_are_accepted():
    assert TrainConfig(env_id="affectgym/Sarcasm-v0", env_kwargs={"max_turns": 4, "rubric": "single"}).env_kwargs["max_turns"] == 4
    assert split_shaping_arguments("affectgym/EmotionStyle-v0", {"labels": "basic", "max_instructions": 40}) == []


def test_a_plugin_env_declares_its_own_split_arguments():
    class FoldedMood(ToyMoodEnv):
        split_arguments = ("fold",)

    env_id = "mymoods/FoldedMood-v0"
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=FoldedMood)
    assert split_shaping_arguments(env_id, {"fold": 2, "max_turns": 3, "split": "train"}) == ["fold", "split"]
    with pytest.raises(ValueError, match="env_kwargs may not set fold"):
        TrainConfig(env_id=env_id, env_kwargs={"fold": 2})
    plain = "mymoods/ToyMood-v0"
    if plain not in gym.registry:
        gym.register(id=plain, entry_point=ToyMoodEnv)
    assert split_shaping_arguments(plain, {"max_turns": 3}) == []


def test_demonstrations_played_under_a_reshaped_split_are_refused(tmp_path):
    out = tmp_path / "demos"
    run_eval(EvalConfig(env_id="affectgym/Sarcasm-v0", agent="protocol", out=out, split="train", n=2,
                        env_kwargs={"eval_fraction": 0.0}, progress=False))
    assert json.loads((out / "metadata.json").read_text())["env_kwargs"]["eval_fraction"] == 0.0
    with pytest.raises(DemonstrationError, match=r"played with eval_fraction=0.0, which change which scenarios"):
        episode_demonstrations([out], "affectgym/Sarcasm-v0")
