"""Training runs under attack: two trainers in one folder, resumed runs, torn files, bad options and adapters.

Each test is one reproduction of issue 43, run on the tiny models of :mod:`tiny_models` and
the toy envs the training tests use.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_models import tiny_causal_lm

from affectgym.eval.results import RunFolderLocked
from affectgym.train import commands

REPO = Path(__file__).resolve().parents[1]
DIALOGUE_ID = "affectgym/EmpatheticDialogue-v0"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("models"))


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="affectgym")
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["train", *argv])
    return args.func(args)


def sft_argv(model: Path, run: Path, *extra: str) -> list[str]:
    return [DIALOGUE_ID, "--algo", "sft", "--references", "--model", str(model), "--lora-r", "4", "--batch-size", "1",
            "--eval-episodes", "0", "--save-steps", "0", "--output-dir", str(run), *extra]


def wait_for_holder(lock: Path, process: subprocess.Popen, timeout_s: float = 300.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the first trainer ended (exit {process.returncode}): {process.stderr.read()}")
        try:
            return json.loads(lock.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            time.sleep(0.05)
    pytest.fail(f"the first trainer held no {lock} within {timeout_s} s")


def start_long_trainer(model: Path, run: Path) -> subprocess.Popen:
    """``affectgym train`` into ``run`` in a subprocess, with more steps than a test waits for."""
    return subprocess.Popen(
        [sys.executable, "-m", "affectgym.cli", "train", *sft_argv(model, run, "--max-steps", "100000", "--seed", "0")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )


def test_second_trainer_into_a_busy_output_dir_is_refused_naming_the_first_pid(tiny_model, tmp_path):
    run = tmp_path / "run"
    first = start_long_trainer(tiny_model, run)
    try:
        assert wait_for_holder(run / ".lock", first)["pid"] == first.pid
        with pytest.raises(RunFolderLocked, match=rf"being written by another process \(pid {first.pid} .*--output-dir"):
            run_cli(sft_argv(tiny_model, run, "--max-steps", "1", "--seed", "1"))
        assert first.poll() is None, "the first trainer was still training when the second was refused"
    finally:
        first.kill()
        first.wait()
    config = run / "config.yaml"
    assert not config.exists() or "seed: 1" not in config.read_text(), "the refused trainer wrote nothing"


def dpo_config(model: Path, run: Path, **overrides):
    from length_toy import LENGTH_ID

    from affectgym.train.config import TrainConfig

    options = dict(env_id=LENGTH_ID, algo="dpo", model=str(model), max_steps=2, batch_size=2, samples_per_prompt=4,
                   max_completion_length=8, eval_max_new_tokens=8, lora_r=4, eval_episodes=0, pair_margin=0.0,
                   temperature=1.5, output_dir=str(run))
    return TrainConfig(**{**options, **overrides})


def test_a_dpo_run_resumed_with_more_rounds_plays_its_trained_side_again(tiny_model, tmp_path):
    from affectgym.train.dpo import train_dpo
    from affectgym.train.run import adapter_digest

    run = tmp_path / "run"
    shorter = train_dpo(dpo_config(tiny_model, run, rounds=1, eval_episodes=2))
    played_first = (run / "eval" / "trained" / "results.jsonl").stat().st_mtime_ns

    longer = train_dpo(dpo_config(tiny_model, run, rounds=2, eval_episodes=2), resume=True)

    assert adapter_digest(run / "adapter") != adapter_digest(run / "rounds" / "0" / "adapter"), "round 1 trained"
    assert (run / "eval" / "trained" / "results.jsonl").stat().st_mtime_ns != played_first, "the new adapter was played"
    comparison = json.loads((run / "eval" / "comparison.json").read_text())
    assert comparison["trained"]["adapter_sha256"] == adapter_digest(run / "adapter")
    assert shorter["eval"]["trained"]["adapter_sha256"] != longer["eval"]["trained"]["adapter_sha256"]
    assert json.loads((run / "summary.json").read_text())["eval"]["trained"] == comparison["trained"]
    assert longer["eval"]["trained"]["episodes"] == 2

    played_second = (run / "eval" / "trained" / "results.jsonl").stat().st_mtime_ns
    again = train_dpo(dpo_config(tiny_model, run, rounds=2, eval_episodes=2), resume=True)  # the same adapter: kept
    assert (run / "eval" / "trained" / "results.jsonl").stat().st_mtime_ns == played_second
    assert again["eval"]["trained"] == longer["eval"]["trained"]


def test_a_torn_dpo_pairs_file_is_named_and_its_pairs_sampled_again_on_resume(tiny_model, tmp_path, caplog):
    from affectgym.train.dpo import train_dpo

    run = tmp_path / "run"
    config = dpo_config(tiny_model, run, rounds=1)
    train_dpo(config)
    pairs_file = run / "pairs" / "round-0.jsonl"
    text = pairs_file.read_text(encoding="utf-8")
    pairs_file.write_text(text[: len(text) - 40], encoding="utf-8")  # a run killed while writing its pairs
    (run / "rounds" / "0" / "log_history.json").unlink()

    with caplog.at_level("WARNING", logger="affectgym.train.dpo"):
        resumed = train_dpo(config, resume=True)

    assert f"{pairs_file}:" in caplog.text and "not JSON" in caplog.text and "sampling the round's pairs again" in caplog.text
    rows = [json.loads(line) for line in pairs_file.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == resumed["rounds"][0]["pairs"] > 0 and pairs_file.read_text(encoding="utf-8").endswith("\n")
    assert sorted(path.name for path in pairs_file.parent.iterdir()) == ["round-0.jsonl"], "no temporary file is left"


SARCASM_ID = "affectgym/Sarcasm-v0"
SARCASM_FORM = {"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "rubric": "label", "max_turns": 3}


def protocol_episodes(out: Path, split: str, n: int) -> Path:
    from affectgym.eval import EvalConfig, run_eval

    run_eval(EvalConfig(env_id=SARCASM_ID, agent="protocol", out=out, split=split, n=n, env_kwargs=SARCASM_FORM,
                        progress=False))
    return out


def test_demonstrations_whose_split_cannot_be_established_or_whose_scenarios_are_held_out_are_refused(tmp_path, caplog):
    from affectgym.train.demos import DemonstrationError, episode_demonstrations

    held_out = protocol_episodes(tmp_path / "eval-demos", "eval", 3)
    (held_out / "metadata.json").unlink()
    with pytest.raises(DemonstrationError, match="no metadata.json beside .* split its episodes played cannot be established"):
        episode_demonstrations([held_out], SARCASM_ID)

    copied = protocol_episodes(tmp_path / "train-demos", "train", 3)
    (copied / "results.jsonl").write_bytes((held_out / "results.jsonl").read_bytes())  # eval rows under train metadata
    with pytest.raises(DemonstrationError, match=r"3 scenario\(s\) of .*results.jsonl are not in the train split"):
        episode_demonstrations([copied], SARCASM_ID)

    torn = protocol_episodes(tmp_path / "torn-demos", "train", 3)
    text = (torn / "results.jsonl").read_text(encoding="utf-8")
    (torn / "results.jsonl").write_text(text[: len(text) - 30], encoding="utf-8")  # the last line cut
    with caplog.at_level("WARNING", logger="affectgym.train.demos"):
        rows, counts = episode_demonstrations([torn], SARCASM_ID)
    assert counts["read"] == len(rows) == 2
    assert "1 line(s) are no complete episode record (torn or corrupt)" in caplog.text and str(torn) in caplog.text


def save_fresh_adapter(model: Path, folder: Path) -> Path:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(model))
    get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")).save_pretrained(str(folder))
    return folder


def test_a_bad_init_adapter_is_named_before_anything_loads_and_the_run_never_claims_its_folder(tiny_model, tmp_path):
    import shutil

    from affectgym.train.dpo import train_dpo
    from affectgym.train.policy import check_policy

    other_model = tiny_causal_lm(tmp_path / "other", hidden_size=32, name="other-lm")
    foreign = save_fresh_adapter(other_model, tmp_path / "foreign-adapter")
    own = save_fresh_adapter(tiny_model, tmp_path / "own-adapter")
    mistyped = shutil.copytree(own, tmp_path / "mistyped-adapter")
    settings = json.loads((mistyped / "adapter_config.json").read_text())
    (mistyped / "adapter_config.json").write_text(json.dumps({**settings, "r": "x"}))
    torn = shutil.copytree(own, tmp_path / "torn-adapter")
    weights = (torn / "adapter_model.safetensors").read_bytes()
    (torn / "adapter_model.safetensors").write_bytes(weights[: len(weights) // 2])
    run = tmp_path / "run"
    cases = [
        (tmp_path / "no-such-adapter", FileNotFoundError, r"--init-adapter '.*no-such-adapter': no such folder"),
        (tmp_path, FileNotFoundError, "no adapter_config.json in that folder"),
        (mistyped, ValueError, r"adapter_config.json: r must be a positive integer, got 'x'"),
        (torn, ValueError, r"adapter_model.safetensors is torn or not a safetensors file"),
        (foreign, ValueError, rf"was trained on '{other_model}', not on --model '{tiny_model}'"),
    ]
    for adapter, error, named in cases:
        config = dpo_config(tiny_model, run, init_adapter=str(adapter))
        with pytest.raises(error, match=named):
            check_policy(config)  # reads files only: no weights load
        with pytest.raises(error, match=named):
            train_dpo(config)
        assert not (run / "config.yaml").exists(), f"the refused run ({adapter.name}) claimed its folder"

    summary = train_dpo(dpo_config(tiny_model, run, init_adapter=str(own)))  # the corrected command, no --overwrite
    assert summary["rounds"][0]["pairs"] > 0 and "init_adapter" in (run / "config.yaml").read_text()


def test_an_overwritten_dpo_run_leaves_no_round_or_pairs_of_the_earlier_run(tmp_path):
    from affectgym.train.run_dir import claim_output_dir

    run = tmp_path / "run"
    (run / "rounds" / "0").mkdir(parents=True)
    (run / "rounds" / "0" / "log_history.json").write_text("[]")
    (run / "pairs").mkdir()
    (run / "best_of.jsonl").write_text("")
    claim_output_dir(run, overwrite=True)
    assert list(run.iterdir()) == [], "a stale round would be skipped as finished by the new run"


def run_eval_cli(argv: list[str]) -> int:
    from affectgym.cli import build_parser

    args = build_parser().parse_args(["eval", *argv])
    return args.func(args)


def test_eval_from_an_incomplete_training_run_is_refused_before_any_model_loads_naming_the_file(tiny_model, tmp_path):
    from affectgym.train.config import TrainConfig, config_to_yaml

    run = tmp_path / "run"
    (run / "adapter").mkdir(parents=True)
    config = TrainConfig(env_id=SARCASM_ID, model=str(tmp_path / "never-loaded"), env_kwargs=SARCASM_FORM, eval_episodes=2)
    (run / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")
    replay = ["--from-train", str(run), "--no-progress"]

    with pytest.raises(ValueError, match=r"no adapter_config.json .* in .*adapter: the run did not save it"):
        run_eval_cli(replay)
    adapter = save_fresh_adapter(tiny_model, run / "adapter")
    weights = (adapter / "adapter_model.safetensors").read_bytes()
    (adapter / "adapter_model.safetensors").write_bytes(weights[: len(weights) - 100])  # killed while saving
    with pytest.raises(ValueError, match=r"adapter_model.safetensors is torn or not a safetensors file"):
        run_eval_cli(replay)

    # a baseline on the run's episodes takes none of the decoding options the run's own model is replayed with
    assert run_eval_cli([*replay, "--agent", "majority", "--out", str(tmp_path / "majority")]) == 0
    assert len((tmp_path / "majority" / "results.jsonl").read_text().splitlines()) == 2

    (run / "config.yaml").write_text("env_id: [unclosed\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"--from-train '{run}': {run / 'config.yaml'}: not a YAML file"):
        run_eval_cli(replay)
    (run / "config.yaml").write_text(f"env_id: {SARCASM_ID}\nmax_steps: many\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{run / 'config.yaml'}: invalid training config: max_steps must be an integer"):
        run_eval_cli(replay)


@pytest.mark.parametrize(("options", "named"), [
    (["--env-kwargs", '{"split": "eval"}'], r"env_kwargs may not set split 'eval': training plays the train split"),
    (["--lora-layers", "999"], r"lora_layers \(999\) exceeds the 2 layers of '.*'; use 1 to 2, or 0 \(every layer\)"),
    (["--eval-every-steps", "20", "--max-steps", "10"], r"eval_every_steps \(20\) is more than max_steps \(10\)"),
    (["--oversample", "nosuchflag=3"], r"oversample flag\(s\) \['nosuchflag'\] are not boolean flags .* flags: pivot"),
    (["--lora-target-modules", "q_proj,nosuch_proj"],
     r"lora_target_modules \['nosuch_proj'\] name no module of '.*'; its linear modules: .*q_proj"),
])
def test_options_the_run_would_refuse_are_refused_by_print_config(tiny_model, options, named, capsys):
    with pytest.raises(ValueError, match=named):
        run_cli([SARCASM_ID, "--model", str(tiny_model), *options, "--print-config"])
    assert capsys.readouterr().out == "", "no config is printed for a run that would be refused"


def test_more_lora_layers_than_a_hub_model_has_are_named_before_training():
    from affectgym.train.config import TrainConfig
    from affectgym.train.policy import peft_config

    with pytest.raises(ValueError, match=r"lora_layers \(999\) exceeds the model's 30 layers; use 1 to 30"):
        peft_config(TrainConfig(env_id=SARCASM_ID, lora_layers=999), "llama", 30)


def test_a_recipe_on_another_env_names_the_env_it_trains():
    with pytest.raises(ValueError, match=r"--recipe sarcasm-cpu: this recipe trains affectgym/Sarcasm-v0, not affectgym/EmotionStyle-v0"):
        run_cli(["affectgym/EmotionStyle-v0", "--recipe", "sarcasm-cpu", "--print-config"])


def test_a_recipe_under_another_algo_names_only_the_options_the_user_typed():
    with pytest.raises(ValueError) as refused:
        run_cli(["--recipe", "sarcasm-cpu", "--algo", "ppo", "--print-config"])
    message = str(refused.value)
    assert "--recipe sarcasm-cpu is an --algo grpo recipe; drop --algo ppo" in message
    assert not any(option in message for option in ("--num-generations", "--lora", "--group-batches", "--max-steps"))


def test_a_trainer_killed_with_sigkill_leaves_no_lock_and_its_run_resumes(tiny_model, tmp_path):
    run = tmp_path / "run"
    first = start_long_trainer(tiny_model, run)
    try:
        assert wait_for_holder(run / ".lock", first)["pid"] == first.pid
    finally:
        first.send_signal(signal.SIGKILL)  # kill -9: no handler runs, the lock file stays on disk
        first.wait()
    assert first.returncode == -signal.SIGKILL
    assert run_cli(sft_argv(tiny_model, run, "--max-steps", "1", "--seed", "0", "--resume")) == 0
    assert (run / "adapter").is_dir() and not (run / ".lock").exists()
