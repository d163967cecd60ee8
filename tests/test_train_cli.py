"""``affectgym train``: options from the config dataclass through TRL's TrlParser, YAML files, recipes, precedence."""

from __future__ import annotations

import argparse
import json

import gymnasium as gym
import pytest
import toy_env
from tiny_models import tiny_causal_lm

from affectgym.cli import main
from affectgym.train import commands
from affectgym.train.commands import config_from_args
from affectgym.train.config import TrainConfig, config_fields, config_to_yaml
from affectgym.train.config_parser import ConfigFileError, load_config, parse_train_args
from affectgym.train.recipes import sarcasm_cpu_config

TOY_ID = "affectgym-test/TrainToyMood-v0"
if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point=toy_env.ToyMoodEnv)


def parse(argv):
    parser = argparse.ArgumentParser(prog="affectgym")
    commands.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["train", *argv])


def test_train_help_lists_every_config_field_with_its_help(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["train", "--help"])
    assert exited.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    for item in config_fields():
        if item.name != "env_id":
            assert "--" + item.name.replace("_", "-") in help_text
            assert " ".join(item.metadata["help"].split()[:4]) in help_text
    for switch in ("--config FILE.yaml", "--recipe NAME", "--list-recipes", "--print-config", "--overwrite", "--resume"):
        assert switch in help_text


def test_affectgym_help_lists_the_train_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "train a policy on an environment" in capsys.readouterr().out


def test_a_usage_error_exits_2_and_an_invalid_value_is_one_error_line(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["train", "affectgym/Sarcasm-v0", "--mode", "bogus"])
    assert exited.value.code == 2
    assert "affectgym train: error: argument --mode: invalid choice: 'bogus'" in capsys.readouterr().err
    assert main(["train", "affectgym/Sarcasm-v0", "--learning-rate", "-1"]) == 1
    assert capsys.readouterr().err.startswith(
        "affectgym: error: invalid training config: learning_rate must be a finite number >= 0 (0 = the policy stays as it "
        "is), got -1.0 (rerun with --debug"
    )


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
    with pytest.raises(ConfigFileError, match=rf"{path}: unknown option\(s\) \['max_stepz'\]; accepted: env_id, model"):
        load_config(path)
    with pytest.raises(ConfigFileError, match="unknown option.*max_stepz"):
        config_from_args(parse(["affectgym/Sarcasm-v0", "--config", str(path)]))
    with pytest.raises(ValueError, match="batch_size \\(6\\) must be a multiple of num_generations \\(4\\)"):
        TrainConfig(env_id="x", batch_size=6, num_generations=4)


@pytest.mark.parametrize(("line", "named"), [
    ("max_steps: many", "invalid training config: max_steps must be an integer, got 'many'"),
    ("max_steps: 2.5", "invalid training config: max_steps must be an integer, got 2.5"),
    ("learning_rate: -1e-5", "invalid training config: learning_rate must be a finite number >= 0 (0 = the policy stays as "
                             "it is), got -1e-05"),
    ("mode: batch", "invalid training config: mode must be one of 'flat', 'multiturn', got 'batch'"),
    ("demos: one-folder", "invalid training config: demos must be a list of strings, got 'one-folder'"),
])
def test_a_bad_value_in_a_yaml_file_is_refused_as_the_same_value_in_python(tmp_path, line, named):
    path = tmp_path / "bad.yaml"
    path.write_text(f"env_id: affectgym/Sarcasm-v0\n{line}\n")
    with pytest.raises(ValueError) as refused:
        config_from_args(parse(["--config", str(path)]))
    assert str(refused.value) == named
    with pytest.raises(ValueError) as refused:
        load_config(path)
    assert str(refused.value) == f"{path}: {named}"


def test_a_missing_or_non_yaml_config_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="config file .*nope.yaml' does not exist; write one with --print-config"):
        config_from_args(parse(["--config", str(tmp_path / "nope.yaml")]))
    path = tmp_path / "torn.yaml"
    path.write_text("env_id: [unclosed\n")
    with pytest.raises(ConfigFileError, match=rf"{path}: not a YAML file of option: value lines"):
        load_config(path)


def test_options_given_win_over_the_yaml_file_which_wins_over_the_recipe(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("max_steps: 24\nseed: 3\nlearning_rate: 1e-4\n")
    from_file, _ = parse_train_args(["--recipe", "sarcasm-cpu", "--config", str(path)])
    # the recipe derives its warmup and its rows from the max_steps the file gives
    assert from_file == sarcasm_cpu_config("runs/sarcasm-cpu", max_steps=24, seed=3, learning_rate=1e-4)
    given, _ = parse_train_args(["--recipe", "sarcasm-cpu", "--config", str(path), "--seed", "5", "--max-steps", "12"])
    assert given == sarcasm_cpu_config("runs/sarcasm-cpu", max_steps=12, seed=5, learning_rate=1e-4)
    path.write_text("recipe: sarcasm-cpu\nmax_steps: 24\n")  # a file may name the recipe too
    assert parse_train_args(["--config", str(path)])[0] == sarcasm_cpu_config("runs/sarcasm-cpu", max_steps=24)


def test_a_list_option_takes_several_values_and_may_be_repeated():
    config, _ = parse_train_args(["affectgym/Sarcasm-v0", "--algo", "sft", "--demos", "a", "b", "--demos", "c"])
    assert config.demos == ["a", "b", "c"]


def test_a_true_or_unset_option_alone_means_true_and_takes_false():
    assert parse_train_args(["x", "--bf16"])[0].bf16 is True
    assert parse_train_args(["x", "--bf16", "false", "--gradient-checkpointing", "no"])[0].bf16 is False
    assert parse_train_args(["x"])[0].bf16 is None
    assert parse_train_args(["x", "--references", "--algo", "sft"])[0].references is True


def test_print_config_writes_yaml_that_loads_back(tmp_path, capsys):
    args = parse(["affectgym/Sarcasm-v0", "--max-steps", "3", "--print-config"])
    assert args.func(args) == 0
    path = tmp_path / "printed.yaml"
    path.write_text(capsys.readouterr().out)
    assert load_config(path) == TrainConfig(env_id="affectgym/Sarcasm-v0", max_steps=3)


@pytest.mark.parametrize("argv", [
    ["affectgym/Sarcasm-v0", "--learning-rate", "3e-5", "--env-kwargs", '{"rubric": "single"}', "--oversample", "pivot=2",
     "--bf16", "false", "--eval-episodes", "0", "--min-reward", "0.5", "--demos", "d", "--anchor-coef", "0.5"],
    ["affectgym/Sarcasm-v0", "--algo", "sft", "--demos", "a", "b", "--tool-turns-only", "--output-dir", "out"],
    ["affectgym/Sarcasm-v0", "--algo", "dpo", "--rounds", "2", "--pair-margin", "0.0", "--dpo-beta", "0.2"],
    ["affectgym/EmotionState-v0", "--algo", "ppo", "--timesteps", "2048"],
    ["--recipe", "sarcasm-cpu", "--max-steps", "12"],
], ids=["grpo", "sft", "dpo", "ppo", "recipe"])
def test_print_config_output_read_back_with_config_is_the_same_config(argv, tmp_path, capsys):
    args = parse([*argv, "--print-config"])
    assert args.func(args) == 0
    path = tmp_path / "printed.yaml"
    path.write_text(capsys.readouterr().out)
    assert config_from_args(parse(["--config", str(path)])) == config_from_args(args)


@pytest.mark.parametrize("switches", [[], ["--overwrite"], ["--resume"]])
def test_overwrite_and_resume_reach_the_trainer(switches, monkeypatch, tmp_path, capsys):
    from affectgym.train import sft

    seen = {}

    def fake_train_sft(config, **options):
        seen.update(options, config=config)
        return {"steps": 0}

    monkeypatch.setattr(sft, "train_sft", fake_train_sft)
    args = parse([TOY_ID, "--algo", "sft", "--references", "--output-dir", str(tmp_path / "run"), *switches])
    assert args.func(args) == 0
    assert (seen["overwrite"], seen["resume"]) == ("--overwrite" in switches, "--resume" in switches)
    assert seen["config"].output_dir == str(tmp_path / "run")


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


def test_a_vllm_server_on_another_machine_reaches_the_grpo_config_and_needs_server_mode(tmp_path):
    from affectgym.train.grpo import grpo_config

    config = TrainConfig(env_id="x", use_vllm=True, vllm_mode="server", vllm_server_base_url="http://10.0.0.2:8000",
                         bf16=False, output_dir=str(tmp_path))
    assert grpo_config(config, [1.0], gpu=True).vllm_server_base_url == "http://10.0.0.2:8000"
    with pytest.raises(ValueError, match="vllm_server_base_url needs use_vllm and vllm_mode server"):
        TrainConfig(env_id="x", vllm_server_base_url="http://10.0.0.2:8000")
    with pytest.raises(ValueError, match="must be http://HOST:PORT or https://HOST:PORT, got '10.0.0.2:8000'"):
        TrainConfig(env_id="x", use_vllm=True, vllm_mode="server", vllm_server_base_url="10.0.0.2:8000")
