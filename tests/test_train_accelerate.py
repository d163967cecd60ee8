"""Multi-process GRPO: ``accelerate launch`` runs ``affectgym train`` in two CPU processes.

``accelerate launch --cpu --num_processes 2`` starts a single process (accelerate's simple
launcher spreads CPU processes only through MPI, ``--mpirun_hostfile``), so two CPU processes
are launched as on GPUs, ``--multi_gpu --num_processes 2``: torch's launcher starts them and,
with no GPU, the trainer's ``use_cpu`` joins them in a gloo process group.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import toy_env
from test_cli import toy_plugin
from tiny_models import teach_tiny_lm, tiny_causal_lm

from affectgym.train.config import TrainConfig

#: The id ``toy_plugin`` registers in the launched processes (the plug-in guide's ToyMoodEnv).
PLUGIN_ID = "toyplugin/ToyMood-v0"
if PLUGIN_ID not in gym.registry:  # the one-process run trains here, on the same env
    gym.register(id=PLUGIN_ID, entry_point=toy_env.ToyMoodEnv)
#: What the taught model answers to every prompt: right on happy notes, wrong on sad ones.
ANSWER = "<answer>happy</answer>"
#: Options of both runs; the two-process run takes half the batch per process (same global batch).
OPTIONS = dict(max_steps=2, num_generations=2, max_completion_length=16, lora_r=4, eval_episodes=0, temperature=0.1)


def always_happy_model(parent: Path, mode: str) -> Path:
    """A tiny model taught to answer ANSWER to every training prompt of ``mode`` (as TRL renders it)."""
    from transformers.utils import get_json_schema

    from affectgym.train.environment import environment_factory
    from affectgym.train.flatten import to_dataset

    multiturn = mode == "multiturn"
    rows = to_dataset(PLUGIN_ID, split="train", prompt_form="interactive" if multiturn else "flat")
    tools = [get_json_schema(environment_factory(PLUGIN_ID)().read_note)] if multiturn else None
    directory = tiny_causal_lm(parent, name=f"happy-{mode}")
    return teach_tiny_lm(directory, [(row["prompt"], ANSWER) for row in rows], tools=tools, steps=60)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accelerate_train(tmp_path: Path, model: Path, mode: str, output_dir: Path) -> subprocess.CompletedProcess:
    """``accelerate launch --multi_gpu --num_processes 2 -m affectgym.cli train PLUGIN_ID ...``, batch 2 per process."""
    env = toy_plugin(tmp_path)
    variables = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), env["PYTHONPATH"]]),
        "HF_HOME": str(tmp_path / "hf"),  # no accelerate config of this machine's user
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",  # two processes on two cores
    }
    options = {**OPTIONS, "batch_size": 2, "mode": mode, "model": str(model), "output_dir": str(output_dir)}
    argv = [f"--{name.replace('_', '-')}={value}" for name, value in options.items()]
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
        "--main_process_port", str(free_port()), "-m", "affectgym.cli", "train", PLUGIN_ID, *argv,
    ]
    return subprocess.run(command, capture_output=True, text=True, env=variables, timeout=1800)


def rollouts(folder: Path) -> dict[int, list[dict]]:
    """Rows of ``folder/rollouts/rank<N>.jsonl`` by process index N."""
    return {
        int(path.stem.removeprefix("rank")): [json.loads(line) for line in path.read_text().splitlines()]
        for path in sorted((folder / "rollouts").glob("rank*.jsonl"))
    }


def scored(row: dict) -> tuple:
    return row["step"], row["scenario_id"], row["reply"], row["reward"], json.dumps(row["components"], sort_keys=True)


def logged_rewards(folder: Path) -> list[dict[str, float]]:
    history = json.loads((folder / "log_history.json").read_text())
    return [
        {key: value for key, value in row.items() if key == "reward" or key.startswith("rewards/")}
        for row in history if "reward" in row
    ]


def test_reward_functions_write_each_scored_rollout_once_to_the_process_rollouts_file(tmp_path):
    from types import SimpleNamespace

    from affectgym.train.flatten import to_dataset
    from affectgym.train.rewards import reward_functions

    dataset = to_dataset(PLUGIN_ID, n=2)
    columns = {name: dataset[name] for name in ("scenario_id", "env_id", "env_kwargs")}
    (tmp_path / "rank0.jsonl").write_text('{"step": 0, "reply": "before a resume"}\n')  # kept: a resumed run appends
    funcs, weights = reward_functions(PLUGIN_ID, rollouts_dir=tmp_path)
    for step, reply in ((0, ANSWER), (1, "no answer")):
        for func in funcs:  # every component function of a batch: one line per sample
            func(prompts=dataset["prompt"], completions=[reply] * 2, trainer_state=SimpleNamespace(global_step=step),
                 **columns)
    earlier, *rows = [json.loads(line) for line in (tmp_path / "rank0.jsonl").read_text().splitlines()]
    assert earlier["reply"] == "before a resume"
    assert [(row["step"], row["scenario_id"], row["reply"]) for row in rows] == [
        (1, dataset["scenario_id"][0], ANSWER), (1, dataset["scenario_id"][1], ANSWER),
        (2, dataset["scenario_id"][0], "no answer"), (2, dataset["scenario_id"][1], "no answer"),
    ]
    for row in rows:
        assert row["process_index"] == 0 and row["env_id"] == PLUGIN_ID
        total = sum(weights[i] * row["components"][f.__name__] for i, f in enumerate(funcs))
        assert row["reward"] == pytest.approx(total)


def test_the_zero2_example_is_a_deepspeed_config_accelerate_reads():
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DistributedType

    config = load_config_from_file(str(Path(__file__).parents[1] / "examples" / "accelerate" / "zero2.yaml"))
    assert config.distributed_type == DistributedType.DEEPSPEED and config.deepspeed_config["zero_stage"] == 2
    assert (config.mixed_precision, config.use_cpu) == ("bf16", False)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["flat", "multiturn"])
def test_two_process_accelerate_run_shards_each_batch_and_logs_the_rewards_of_a_one_process_run(tmp_path, mode):
    """Two processes under ``accelerate launch`` score the batches one process scores, split between them.

    The policy is a tiny model taught to answer ``<answer>happy</answer>`` to every training
    prompt, sampled at temperature 0.1, so its reply does not depend on the sampling and the
    reward of a rollout is a function of its scenario (happy notes score, sad ones do not).
    Both runs have the same seed and the same global batch (one process with 4 completions,
    two processes with 2 each), so TRL's sampler draws the same scenarios for each step.
    "Match" means: the multiset of (step, scenario_id, reply, reward, components) of the
    scored rollouts of both processes together equals the one-process run's, and every logged
    reward mean (``reward``, ``rewards/<component>/mean``) of each step is equal to 1e-6.

    Takes about 35 s of CPU time per mode, most of it starting the processes; here, at nice 19
    on 2 cores busy with a training benchmark, 25 minutes of wall time per mode (51 min for
    both); a two-process multiturn launch alone took 53 s when the cores were less busy.
    """
    from affectgym.train.grpo import train

    model = always_happy_model(tmp_path / "models", mode)
    one, two = tmp_path / "one", tmp_path / "two"
    train(TrainConfig(env_id=PLUGIN_ID, model=str(model), mode=mode, batch_size=4, output_dir=str(one), **OPTIONS))

    result = accelerate_train(tmp_path, model, mode, two)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.count('"output_dir"') == 1  # the main process alone prints the summary
    summary = json.loads((two / "summary.json").read_text())
    assert summary["steps"] == 2 and (two / "adapter" / "adapter_config.json").is_file()
    assert (two / "config.yaml").is_file() and any(Path(p).name == "reward_total.png" for p in summary["figures"])

    per_process = rollouts(two)
    assert sorted(per_process) == [0, 1]  # each process scored with its own env and reward functions
    for index, rows in per_process.items():
        assert {row["process_index"] for row in rows} == {index} and {row["step"] for row in rows} == {1, 2}
    for step in (1, 2):
        shards = [{row["scenario_id"] for row in rows if row["step"] == step} for rows in per_process.values()]
        assert not shards[0] & shards[1], f"step {step}: a scenario was scored by both processes"

    single = rollouts(one)[0]
    both = per_process[0] + per_process[1]
    assert {row["reply"] for row in single} == {ANSWER}
    assert {round(row["reward"], 6) for row in single} == ({1.0, 0.2} if mode == "flat" else {0.8, 0.0})  # both labels
    assert sorted(map(scored, both)) == sorted(map(scored, single))
    for two_row, one_row in zip(logged_rewards(two), logged_rewards(one), strict=True):
        assert two_row.keys() == one_row.keys()
        for key, value in one_row.items():
            assert two_row[key] == pytest.approx(value, abs=1e-6), key
