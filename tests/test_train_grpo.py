"""Two-step GRPO runs (flat and multi-turn) of a tiny model built from a config."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
import toy_env
from tiny_models import teach_tiny_lm, tiny_causal_lm

import affectgym
from affectgym.train.config import TrainConfig
from affectgym.train.grpo import train

TOY_ID = "affectgym-test/TrainToyMood-v0"
if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point=toy_env.ToyMoodEnv)

REAL_IDS = ["affectgym/Sarcasm-v0", "affectgym/EmotionStyle-v0", "affectgym/EmpatheticDialogue-v0"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def tool_calling_model(tmp_path_factory):
    """A tiny model taught to open every episode with a read_note call (as TRL renders the tools)."""
    from transformers.utils import get_json_schema

    from affectgym.train.environment import environment_factory

    directory = tiny_causal_lm(tmp_path_factory.mktemp("models"), name="tool-lm")
    adapter = environment_factory(TOY_ID)()
    tools = [get_json_schema(adapter.read_note)]
    env = toy_env.ToyMoodEnv(split="train")
    call = '<tool_call>\n{"name": "read_note", "arguments": {}}\n</tool_call>'
    examples = [
        ([{"role": "system", "content": env.system_prompt(note)}, {"role": "user", "content": env.first_observation(note)}], call)
        for note in toy_env.NOTES[:1]
    ]
    return teach_tiny_lm(directory, examples, tools=tools, steps=100)


def tiny_config(model, env_id, mode, output_dir, **overrides):
    options = dict(
        env_id=env_id, model=str(model), mode=mode, max_steps=2, num_generations=2, batch_size=4,
        max_completion_length=24, lora_r=4, eval_episodes=0, output_dir=str(output_dir),
    )
    return TrainConfig(**{**options, **overrides})


def registered(env_id: str):
    return pytest.mark.skipif(
        env_id not in affectgym.list_envs(),
        reason=f"{env_id} is not registered in affectgym.envs.registration.BUILTIN_ENVS yet",
    )


def assert_run_outputs(summary, components):
    history = json.loads(open(summary["log_history"]).read())
    logged = [row for row in history if "reward" in row]
    assert summary["steps"] == 2 and len(logged) == 2
    for name in components:
        assert f"rewards/{name}/mean" in logged[0]
    assert any(path.endswith("reward_total.png") for path in summary["figures"])
    assert (json.loads(open(summary["adapter_dir"] + "/adapter_config.json").read())["r"]) == 4


@pytest.mark.parametrize("mode", ["flat", "multiturn"])
def test_two_step_grpo_run_on_the_toy_env(tiny_model, tmp_path, mode):
    summary = train(tiny_config(tiny_model, TOY_ID, mode, tmp_path / mode))
    components = ["correct", "read_first", "invalid_actions"] + (["rubric_total"] if mode == "multiturn" else [])
    assert_run_outputs(summary, components)


def test_multiturn_rollouts_call_the_env_tools_and_are_scored_on_their_final_answer(tool_calling_model, tmp_path):
    summary = train(tiny_config(tool_calling_model, TOY_ID, "multiturn", tmp_path / "mt", temperature=0.3,
                                max_completion_length=48))
    history = [row for row in json.loads(open(summary["log_history"]).read()) if "reward" in row]
    assert max(row["tools/call_frequency"] for row in history) > 0
    assert max(row["env/tool_calls"] for row in history) > 0
    assert max(row["rewards/read_first/mean"] for row in history) > 0
    for row in history:  # the components at weight 0 add up to the episode total (up to the mean)
        parts = 0.8 * row["rewards/correct/mean"] + 0.2 * row["rewards/read_first/mean"] - 0.05 * row["rewards/invalid_actions/mean"]
        assert row["rewards/rubric_total/mean"] == pytest.approx(parts, abs=1e-5)
        assert row["reward"] == pytest.approx(row["rewards/rubric_total/mean"], abs=1e-5)


@pytest.mark.parametrize("env_id", [pytest.param(i, marks=registered(i)) for i in REAL_IDS])
@pytest.mark.parametrize("mode", ["flat", "multiturn"])
def test_two_step_grpo_run_on_a_real_env(tiny_model, tmp_path, env_id, mode):
    from affectgym.train.flatten import make_env

    components = list(make_env(env_id, {"split": "train"}).rubric.weights)
    summary = train(tiny_config(tiny_model, env_id, mode, tmp_path / mode, max_completion_length=16, n_train=4))
    assert_run_outputs(summary, components)


@pytest.mark.parametrize("mode", ["flat", "multiturn"])
def test_held_out_evaluation_compares_base_and_trained_through_the_eval_runner(tiny_model, tmp_path, mode):
    summary = train(tiny_config(tiny_model, TOY_ID, mode, tmp_path / mode, eval_episodes=2, max_completion_length=8))
    comparison = json.loads((tmp_path / mode / "eval" / "comparison.json").read_text())
    assert summary["eval"]["delta_reward"] == comparison["delta_reward"]
    for side in ("base", "trained"):
        assert comparison[side]["episodes"] == 2
        assert (tmp_path / mode / "eval" / side / "results.jsonl").is_file()
    assert (tmp_path / mode / "eval" / "comparison.png").is_file()


def test_demo_job_warm_starts_trains_flat_and_plays_held_out_episodes_with_its_own_tool_calls(tiny_model, tmp_path, capsys):
    from affectgym.train.demo import run_demo

    summary = run_demo(tmp_path / "demo", model=str(tiny_model), sft_steps=1, grpo_steps=1, eval_episodes=2)
    printed = capsys.readouterr().out
    assert "played multi-step (the model calls the tools" in printed and "trained here (1 SFT, 1 anchored GRPO steps)" in printed
    assert "[ASSISTANT]" in printed and "[prediction " in printed  # the one episode, as the model played it
    assert summary["heldout"]["episodes"] == 2 and (tmp_path / "demo" / "demo.json").is_file()
    assert (tmp_path / "demo" / "eval-trained" / "results.jsonl").is_file()


def test_flat_run_with_last_layer_lora_writes_a_validation_curve_scored_by_the_env(tiny_model, tmp_path):
    kwargs = {"task_format": {"answer": "word", "flat_prompt": "compact"}, "rubric": "label"}
    config = tiny_config(
        tiny_model, "affectgym/Sarcasm-v0", "flat", tmp_path, max_completion_length=4, lora_layers=1,
        eval_every_steps=1, env_kwargs=kwargs,
    )
    train(config)
    curve = [json.loads(line) for line in (tmp_path / "heldout.jsonl").read_text().splitlines()]
    assert [row["step"] for row in curve] == [0, 1, 2]
    validation = affectgym.make("affectgym/Sarcasm-v0", split="validation", **kwargs).unwrapped.scenarios
    for row in curve:  # settings are chosen on the curve, so it never plays eval
        assert row["split"] == "validation" and row["episodes"] == len(validation)
        assert set(row["correct"]) == {clip.id for clip in validation}
        assert sum(row["predictions"].values()) == len(validation)
        assert 0.0 <= row["accuracy"] <= row["answered_rate"] <= 1.0 and "pivot_accuracy" in row
    adapter = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert adapter["layers_to_transform"] == [1]  # the tiny model's last of 2 layers


def test_heldout_curve_of_a_rerun_into_the_same_folder_starts_afresh(tmp_path):
    from types import SimpleNamespace

    from affectgym.train.heldout import heldout_callback

    class CountingEvaluator:
        calls = 0

        def evaluate(self, model):
            self.calls += 1
            return {"accuracy": 0.5, "call": self.calls}

    path = tmp_path / "heldout.jsonl"
    for _ in range(2):  # two runs of two steps, one folder
        callback = heldout_callback(CountingEvaluator(), 1, path)
        callback.on_train_begin(None, SimpleNamespace(global_step=0, max_steps=2), None)
        for step in (1, 2):
            callback.on_step_end(None, SimpleNamespace(global_step=step, max_steps=2), None)
    assert [(row["step"], row["call"]) for row in map(json.loads, path.read_text().splitlines())] == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("mode", ["flat", "multiturn"])
def test_a_one_step_run_builds_its_training_env_once_and_one_per_rollout_slot(tiny_model, tmp_path, mode, monkeypatch):
    built: list[str] = []
    original = toy_env.ToyMoodEnv.__init__

    def counting(self, *args, **kwargs):
        built.append(kwargs.get("split", "train"))
        original(self, *args, **kwargs)

    monkeypatch.setattr(toy_env.ToyMoodEnv, "__init__", counting)
    from affectgym.train.flatten import _cached_env

    _cached_env.cache_clear()  # the process's shared env is built by this run
    config = tiny_config(tiny_model, TOY_ID, mode, tmp_path / mode, max_steps=1, max_completion_length=8, eval_episodes=2)
    train(config)
    rollout_slots = config.batch_size if mode == "multiturn" else 0  # TRL's environment_factory: one env per rollout
    assert built.count("train") == 1 + rollout_slots, "the scoring env is shared by the dataset, the rewards and the tools"
    assert built.count("eval") == 2 * config.eval_episodes, "base and trained: one env per concurrent episode"


def test_heldout_evaluation_plays_the_validation_or_the_eval_split_never_train():
    from affectgym.train.heldout import HeldOutEvaluator

    with pytest.raises(ValueError, match="plays 'validation' or 'eval', got split='train'"):
        HeldOutEvaluator("affectgym/Sarcasm-v0", {}, tokenizer=None, split="train")
    with pytest.raises(ValueError, match="heldout_split must be one of 'validation', 'eval', got 'train'"):
        TrainConfig(env_id="affectgym/Sarcasm-v0", heldout_split="train")
    assert TrainConfig(env_id="affectgym/Sarcasm-v0").heldout_split == "validation"


def test_multiturn_rollouts_from_the_rollouts_caches_train_on_trls_tokens_and_rewards(tool_calling_model, tmp_path):
    import torch

    from affectgym.train.grpo import build_trainer

    outputs, reused = [], []
    for share in (True, False):
        trainer = build_trainer(tiny_config(tool_calling_model, TOY_ID, "multiturn", tmp_path / str(share),
                                            share_prompts=share, lora_dropout=0.0, max_completion_length=96), gpu=False)
        trainer.generation_config.do_sample = False
        inputs = [trainer.train_dataset[index] for index in (0, 0, 1, 1)]
        outputs.append(trainer._generate_and_score_completions(inputs))
        reused.append(trainer._metrics["train"].get("rollout_cache/reused_fraction", []))
    cached, reference = outputs
    assert (reference["tool_mask"] == 0).any(), "the rollouts called a tool, so a later turn was generated"
    for key in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "tool_mask", "advantages"):
        assert torch.equal(cached[key], reference[key]), key
    assert reused[0] and min(reused[0]) > 0.5 and not reused[1]
