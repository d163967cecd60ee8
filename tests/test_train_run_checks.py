"""A training run is refused before anything loads when its options or its folder are wrong, in one named message."""

from __future__ import annotations

import argparse

import pytest
from tiny_models import tiny_causal_lm

from affectgym.train import commands
from affectgym.train.config import TrainConfig, config_to_yaml
from affectgym.train.config_parser import load_config
from affectgym.train.grpo import train
from affectgym.train.policy import check_policy
from affectgym.train.recipes import RECIPES, recipe_config, recipe_needs, sarcasm_cpu_config
from affectgym.train.run_dir import OutputDirInUseError, claim_output_dir

ENV_ID = "affectgym/Sarcasm-v0"


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="affectgym")
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["train", *argv])
    return args.func(args)


@pytest.mark.parametrize(("options", "named"), [
    ({"learning_rate": -1e-5}, "learning_rate must be a finite number >= 0 (0 = the policy stays as it is), got -1e-05"),
    ({"learning_rate": float("nan")}, "learning_rate must be a finite number >= 0 (0 = the policy stays as it is), got nan"),
    ({"temperature": 0.0}, "temperature must be a finite number > 0"),
    ({"lora_dropout": 2.0}, "lora_dropout must be in [0, 1), got 2.0"),
    ({"logging_steps": 0}, "logging_steps must be a positive integer, got 0"),
    ({"report_to": "nosuchtracker"}, "report_to must be none, all or a comma-separated list of"),
    ({"seed": -1}, "seed must be an integer in [0, 2**32), got -1"),
    ({"max_steps": "10"}, "max_steps must be an integer, got '10'"),
    ({"lora_r": "sixteen"}, "lora_r must be an integer, got 'sixteen'"),
    ({"learning_rate": "fast"}, "learning_rate must be a number, got 'fast'"),
    ({"group_batches": "yes"}, "group_batches must be true or false, got 'yes'"),
    ({"oversample": {"pivot": 0}}, "oversample['pivot'] must be an integer >= 1, got 0"),
    ({"mode": "batch"}, "mode must be one of 'flat', 'multiturn', got 'batch'"),
])
def test_each_invalid_option_is_refused_naming_the_field_and_what_is_accepted(options, named):
    with pytest.raises(ValueError, match="invalid training config") as error:
        TrainConfig(env_id=ENV_ID, **options)
    assert named in str(error.value)


def test_a_learning_rate_of_zero_is_accepted_the_policy_then_stays_as_it_is():
    # benchmarks/bench_train.py times the reward path with learning_rate=0, so both trainers generate alike.
    assert TrainConfig(env_id=ENV_ID, learning_rate=0.0).learning_rate == 0.0


def test_yaml_numbers_in_exponent_form_are_numbers(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(f"env_id: {ENV_ID}\nlearning_rate: 1e-5\nbeta: 2E-2\nmax_steps: 7\n", encoding="utf-8")
    config = load_config(path)
    assert (config.learning_rate, config.beta, config.max_steps) == (1e-5, 0.02, 7)


def test_a_second_run_into_a_used_output_dir_is_refused_naming_what_is_there(tmp_path):
    run = tmp_path / "run"
    claim_output_dir(run)
    (run / "config.yaml").write_text("seed: 0\n", encoding="utf-8")
    (run / "adapter").mkdir()
    (run / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(OutputDirInUseError, match=r"already holds a run \(config.yaml, adapter\).*--overwrite"):
        claim_output_dir(run)
    claim_output_dir(run, overwrite=True)
    assert sorted(p.name for p in run.iterdir()) == ["notes.txt"]  # the run's files went, the user's stayed


def test_the_cli_refuses_a_used_output_dir_before_loading_the_model(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text("{}", encoding="utf-8")
    missing_model = str(tmp_path / "no-such-model")
    with pytest.raises(OutputDirInUseError, match="summary.json"):
        run_cli([ENV_ID, "--model", missing_model, "--output-dir", str(run), "--max-steps", "1"])
    with pytest.raises(FileNotFoundError, match="no such folder"):  # past the folder check, stopped at the model's
        run_cli([ENV_ID, "--model", missing_model, "--output-dir", str(run), "--max-steps", "1", "--overwrite"])
    assert not (run / "summary.json").exists()


def test_a_missing_model_folder_and_an_impossible_lora_rank_are_named_before_loading(tmp_path):
    with pytest.raises(FileNotFoundError, match="--model './nowhere/model': no such folder"):
        check_policy(TrainConfig(env_id=ENV_ID, model="./nowhere/model"))
    tiny = tiny_causal_lm(tmp_path)  # hidden size 64
    with pytest.raises(ValueError, match=r"lora_r \(100000\) exceeds the hidden size .* \(64\)"):
        train(TrainConfig(env_id=ENV_ID, model=str(tiny), lora_r=100000, output_dir=str(tmp_path / "run")))


def test_an_oversample_flag_the_scenarios_lack_is_refused_with_the_flags_they_have(tmp_path):
    from affectgym.train.flatten import to_dataset

    with pytest.raises(ValueError, match=r"\['nosuchflag'\] are not boolean flags .* flags: pivot"):
        to_dataset(ENV_ID, split="train", oversample={"nosuchflag": 3})


def test_named_recipes_are_listed_and_start_a_cli_config(tmp_path, capsys):
    assert run_cli(["--list-recipes"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in RECIPES)
    out = str(tmp_path / "cpu")
    assert run_cli(["--recipe", "sarcasm-cpu", "--max-steps", "12", "--output-dir", out, "--print-config"]) == 0
    assert capsys.readouterr().out == config_to_yaml(sarcasm_cpu_config(out, max_steps=12))
    with pytest.raises(ValueError, match="--recipe sarcasm-chat-grpo needs --init-adapter"):
        recipe_config("sarcasm-chat-grpo", {})
    with pytest.raises(SystemExit):
        run_cli(["--recipe", "no-such-recipe"])


@pytest.mark.parametrize("name", sorted(name for name in RECIPES if not recipe_needs(name)))
def test_every_recipe_that_needs_nothing_builds_a_valid_config_of_its_own_env(name, tmp_path):
    config = recipe_config(name, {"output_dir": str(tmp_path / name)})
    assert config.output_dir == str(tmp_path / name) and config.env_id.startswith("affectgym/")


def test_the_emotion_style_recipes_score_with_the_calibrated_classifier_where_asked():
    from affectgym.train.recipes import CALIBRATED_NEUTRAL_WEIGHT

    dpo = recipe_config("emotion-style-dpo")
    assert dpo.algo == "dpo" and dpo.env_kwargs["classifier_options"] == {"neutral_weight": CALIBRATED_NEUTRAL_WEIGHT}
    assert "classifier_options" not in recipe_config("emotion-style-grpo").env_kwargs


class Interrupt(Exception):
    """Stands for the kill of a run: nothing after it runs."""


def interrupt_at(step: int):
    from transformers import TrainerCallback

    class KillAt(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == step:
                raise Interrupt(f"killed at step {step}")

    return KillAt()


def adapter_weights(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter" / "adapter_model.safetensors"))


@pytest.mark.parametrize("algo", ["grpo", "sft"])
def test_a_run_killed_mid_way_resumes_from_its_checkpoint_to_the_uninterrupted_runs_adapter(algo, tmp_path):
    import json

    from affectgym.eval import EvalConfig, run_eval
    from affectgym.train.sft import train_sft

    form = {"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "rubric": "label", "max_turns": 3}
    tiny = tiny_causal_lm(tmp_path)
    options = {"env_id": ENV_ID, "model": str(tiny), "max_steps": 4, "save_steps": 2, "learning_rate": 1e-2,
               "lora_r": 4, "eval_episodes": 2, "eval_max_new_tokens": 4, "env_kwargs": form, "seed": 3}
    if algo == "grpo":
        run, options = train, {**options, "num_generations": 4, "batch_size": 8, "max_completion_length": 2,
                               "eval_every_steps": 2}
    else:
        demos = tmp_path / "demos"
        run_eval(EvalConfig(env_id=ENV_ID, agent="protocol", out=demos, split="train", n=8, env_kwargs=form, progress=False))
        run, options = train_sft, {**options, "algo": "sft", "demos": [str(demos)], "batch_size": 2}
    whole = run(TrainConfig(**options, output_dir=str(tmp_path / "whole")))
    config = TrainConfig(**options, output_dir=str(tmp_path / "killed"))
    with pytest.raises(Interrupt):
        run(config, callbacks=[interrupt_at(3)])
    folder = tmp_path / "killed"
    assert (folder / "trainer" / "checkpoint-2").is_dir() and not (folder / "log_history.json").exists()
    with pytest.raises(OutputDirInUseError, match="--overwrite"):
        run(config)
    resumed = run(config, resume=True)
    for name, tensor in adapter_weights(tmp_path / "whole").items():
        assert tensor.allclose(adapter_weights(folder)[name], atol=1e-6), name
    assert resumed["steps"] == whole["steps"] == 4
    assert json.loads((folder / "summary.json").read_text())["eval"]["trained"]["accuracy"] == whole["eval"]["trained"]["accuracy"]
    if algo == "grpo":  # one curve, each step once
        assert [json.loads(line)["step"] for line in (folder / "heldout.jsonl").read_text().splitlines()] == [0, 2, 4]
        steps = [json.loads(line)["step"] for line in (folder / "rollouts" / "rank0.jsonl").read_text().splitlines()]
        assert sorted(set(steps)) == [1, 2, 3, 4] and len(steps) == 4 * 8
    again = run(config, resume=True)  # finished: nothing retrains, the evaluation is read back
    assert again["eval"]["trained"]["accuracy"] == whole["eval"]["trained"]["accuracy"]


def test_a_resumed_run_whose_config_differs_only_in_its_help_comments_is_the_same_run(tmp_path):
    config = TrainConfig(env_id=ENV_ID, max_steps=4, output_dir=str(tmp_path / "run"))
    claim_output_dir(config.output_dir)
    reworded = config_to_yaml(config).replace("# optimizer steps\n", "# optimizer steps (reworded)\n")
    assert reworded != config_to_yaml(config)
    (tmp_path / "run" / "config.yaml").write_text(reworded, encoding="utf-8")
    assert claim_output_dir(config.output_dir, resume_config=config_to_yaml(config)) == tmp_path / "run"


def test_resuming_with_other_options_is_refused_naming_them(tmp_path):
    config = TrainConfig(env_id=ENV_ID, max_steps=4, output_dir=str(tmp_path / "run"))
    claim_output_dir(config.output_dir)
    (tmp_path / "run" / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")
    changed = TrainConfig(env_id=ENV_ID, max_steps=8, output_dir=str(tmp_path / "run"))
    with pytest.raises(OutputDirInUseError, match=r"started with other options \(-max_steps: 4; \+max_steps: 8\)"):
        claim_output_dir(changed.output_dir, resume_config=config_to_yaml(changed))
