"""``affectgym train``: options generated from the config dataclass, YAML files, precedence."""

from __future__ import annotations

import argparse
import json

import gymnasium as gym
import pytest
import toy_env
from tiny_models import tiny_causal_lm

from affectgym.train import commands
from affectgym.train.commands import config_from_args
from affectgym.train.config import TrainConfig, config_fields, config_to_yaml, load_config

TOY_ID = "affectgym-test/TrainToyMood-v0"
if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point=toy_env.ToyMoodEnv)


def parse(argv):
    parser = argparse.ArgumentParser(prog="affectgym")
    commands.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["train", *argv])


def test_every_config_field_is_a_cli_option():
    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers(dest="command"))
    help_text = parser._subparsers._group_actions[0].choices["train"].format_help()
    for item in config_fields():
        if item.name != "env_id":
            assert "--" + item.name.replace("_", "-") in help_text
            assert item.metadata["help"].split()[0] in help_text


def test_cli_options_parse_into_the_config():
    args = parse(["affectgym/Sarcasm-v0", "--model", "smollm2-135m", "--mode", "multiturn", "--max-steps", "7",
                  "--num-generations", "2", "--batch-size", "4", "--lora-r", "0", "--output-dir", "out",
                  "--eval-episodes", "5", "--oversample", "pivot=2", "--env-kwargs", '{"rubric": "single"}',
                  "--no-balance"])
    config = config_from_args(args)
    assert config == TrainConfig(
        env_id="affectgym/Sarcasm-v0", model="smollm2-135m", mode="multiturn", max_steps=7, num_generations=2,
        batch_size=4, lora_r=0, output_dir="out", eval_episodes=5, oversample={"pivot": 2},
        env_kwargs={"rubric": "single"}, balance=False,
    )


def test_yaml_file_is_read_and_explicit_options_win(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(config_to_yaml(TrainConfig(env_id="affectgym/Sarcasm-v0", max_steps=11, learning_rate=3e-5)))
    assert load_config(path).max_steps == 11
    config = config_from_args(parse(["--config", str(path), "--max-steps", "4"]))
    assert (config.env_id, config.max_steps, config.learning_rate) == ("affectgym/Sarcasm-v0", 4, 3e-5)


def test_unknown_yaml_keys_and_bad_values_are_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("max_stepz: 3\n")
    with pytest.raises(ValueError, match="unknown option.*max_stepz"):
        load_config(path)
    with pytest.raises(ValueError, match="batch_size \\(6\\) must be a multiple of num_generations \\(4\\)"):
        TrainConfig(env_id="x", batch_size=6, num_generations=4)


def test_print_config_writes_yaml_that_loads_back(tmp_path, capsys):
    args = parse(["affectgym/Sarcasm-v0", "--max-steps", "3", "--print-config"])
    assert args.func(args) == 0
    path = tmp_path / "printed.yaml"
    path.write_text(capsys.readouterr().out)
    assert load_config(path) == TrainConfig(env_id="affectgym/Sarcasm-v0", max_steps=3)


def test_train_command_runs_a_two_step_flat_run(tmp_path, capsys):
    model = tiny_causal_lm(tmp_path)
    args = parse([TOY_ID, "--model", str(model), "--max-steps", "2", "--num-generations", "2", "--batch-size", "2",
                  "--max-completion-length", "8", "--lora-r", "2", "--eval-episodes", "0",
                  "--output-dir", str(tmp_path / "run")])
    assert args.func(args) == 0
    assert '"steps": 2' in capsys.readouterr().out
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["steps"] == 2
    assert (tmp_path / "run" / "config.yaml").is_file() and (tmp_path / "run" / "adapter").is_dir()


def test_algo_ppo_dispatches_to_stable_baselines3_with_its_own_defaults(monkeypatch, tmp_path):
    from affectgym.train import sb3

    seen = {}

    def fake_train_sb3(**options):
        seen.update(options)
        return sb3.SB3Result(options["env_id"], options["algo"], options["timesteps"], options["seed"], 1.0, 0.0, 0.5, 0.0,
                             options["eval_episodes"], 0.1, "model.zip", "curve.png", "summary.json")

    monkeypatch.setattr(sb3, "train_sb3", fake_train_sb3)
    monkeypatch.chdir(tmp_path)
    args = parse(["affectgym/EmotionState-v0", "--algo", "ppo", "--timesteps", "64"])
    assert args.func(args) == 0
    assert (seen["env_id"], seen["algo"], seen["timesteps"]) == ("affectgym/EmotionState-v0", "ppo", 64)
    assert str(seen["output_dir"]) == "runs/sb3" and seen["seed"] == 0 and seen["eval_episodes"] == 20
    assert seen["n_envs"] == 8


def test_warmup_schedule_reward_scaling_and_entropy_bonus_reach_the_grpo_config(tmp_path):
    from affectgym.train.grpo import grpo_config

    config = TrainConfig(env_id="x", max_steps=20, warmup_steps=5, lr_scheduler="constant", scale_rewards="batch",
                         entropy_coef=0.01, output_dir=str(tmp_path))
    trl_config = grpo_config(config, [1.0], gpu=False)
    assert (trl_config.warmup_steps, trl_config.scale_rewards, trl_config.entropy_coef) == (5, "batch", 0.01)
    assert trl_config.lr_scheduler_type == "constant_with_warmup"
    assert grpo_config(TrainConfig(env_id="x", output_dir=str(tmp_path)), [1.0], gpu=False).lr_scheduler_type == "linear"
    with pytest.raises(ValueError, match="lr_scheduler must be one of 'linear', 'constant', 'cosine', got 'step'"):
        TrainConfig(env_id="x", lr_scheduler="step")
    with pytest.raises(ValueError, match="entropy_coef must be a finite number >= 0 \\(0 = no bonus\\), got -0.1"):
        TrainConfig(env_id="x", entropy_coef=-0.1)
    with pytest.raises(ValueError, match="warmup_steps must be an integer in \\[0, max_steps\\), got 20"):
        TrainConfig(env_id="x", max_steps=20, warmup_steps=20)
    with pytest.raises(ValueError, match="scale_rewards must be one of 'group', 'batch', 'none', got 'std'"):
        TrainConfig(env_id="x", scale_rewards="std")
