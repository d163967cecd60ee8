"""``--algo dpo``: pairs of the policy's own replies ranked by the env's score, trained with TRL's DPOTrainer, in rounds."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
import toy_env
from length_toy import LENGTH_ID
from tiny_models import tiny_causal_lm

from affectgym.rewards.rubric import Unscored
from affectgym.train.config import TrainConfig
from affectgym.train.dpo import PairsError, preference_pairs, read_pairs, train_dpo
from affectgym.train.flatten import make_env
from affectgym.train.run_dir import OutputDirInUseError

TOY_ID = "affectgym-test/DpoToyMood-v0"
if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point=toy_env.ToyMoodEnv)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("models"))


def dpo_config(model, output_dir, **overrides):
    options = dict(env_id=TOY_ID, algo="dpo", model=str(model), max_steps=2, batch_size=2, samples_per_prompt=4,
                   max_completion_length=8, lora_r=4, eval_episodes=0, pair_margin=0.0, output_dir=str(output_dir))
    return TrainConfig(**{**options, **overrides})


def test_a_pair_is_the_best_and_the_worst_reply_by_the_env_score_when_they_differ_by_the_margin():
    env = make_env(TOY_ID, {"split": "train"})
    happy, sad = (next(s for s in env.scenarios if s.label == label) for label in ("happy", "sad"))
    prompts = [env.flat_prompt(happy), env.flat_prompt(sad)]
    replies = [["<answer>sad</answer>", "<answer>happy</answer>", "no idea"], ["<answer>sad</answer>", "<answer>sad</answer>"]]
    pairs = preference_pairs(env, [happy, sad], prompts, replies, margin=0.5)
    assert [(p["scenario_id"], p["chosen"], p["rejected"]) for p in pairs] == [(happy.id, "<answer>happy</answer>", "<answer>sad</answer>")]
    pair = pairs[0]
    assert pair["chosen_score"] == env.score(happy, pair["chosen"], env.flat_trace(happy)).total > pair["rejected_score"]
    assert pair["chosen_score"] - pair["rejected_score"] >= 0.5 and pair["prompt"] == prompts[0]
    assert preference_pairs(env, [happy], prompts[:1], replies[:1], margin=10.0) == [], "a pair below the margin is dropped"


def test_a_reply_left_unscored_is_never_in_a_pair():
    env = make_env(TOY_ID, {"split": "train"})
    happy = next(s for s in env.scenarios if s.label == "happy")

    class Outage:  # the toy env's rubric with a judge that fails on the word "wrong"
        def __getattr__(self, name):
            return getattr(env, name)

        def score_batch(self, scenarios, replies, traces):
            results = env.score_batch(scenarios, replies, traces)
            return [type(r)(r.total, r.components, {"judge": "down"}) if "wrong" in text else r
                    for r, text in zip(results, replies, strict=True)]

    pairs = preference_pairs(Outage(), [happy], [env.flat_prompt(happy)],
                             [["<answer>happy</answer>", "<answer>sad</answer> wrong", "<answer>sad</answer>"]], margin=0.1)
    assert pairs[0]["rejected"] == "<answer>sad</answer>" and Unscored  # the unscored reply is left out


def test_offline_pairs_are_read_and_a_bad_row_is_named_with_its_line(tmp_path):
    good = tmp_path / "pairs.jsonl"
    good.write_text(json.dumps({"prompt": "How do you feel?", "chosen": "Great!", "rejected": "Meh."}) + "\n", encoding="utf-8")
    assert read_pairs([good])[0]["prompt"] == [{"role": "user", "content": "How do you feel?"}]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "Hi", "chosen": "Hello"}) + "\n", encoding="utf-8")
    with pytest.raises(PairsError, match=r"bad.jsonl:1: missing \['rejected'\]"):
        read_pairs([bad])


def test_two_rounds_of_dpo_write_their_pairs_and_adapters_and_a_resumed_run_skips_a_finished_round(tiny_model, tmp_path):
    config = dpo_config(tiny_model, tmp_path / "run", env_id=LENGTH_ID, rounds=2, temperature=1.5)
    summary = train_dpo(config)
    run = tmp_path / "run"
    assert [r["round"] for r in summary["rounds"]] == [0, 1] and all(r["pairs"] > 0 for r in summary["rounds"])
    for number in (0, 1):
        rows = [json.loads(line) for line in (run / "pairs" / f"round-{number}.jsonl").read_text().splitlines()]
        assert all(row["chosen_score"] > row["rejected_score"] for row in rows)
        assert (run / "rounds" / str(number) / "adapter" / "adapter_config.json").is_file()
    assert (run / "adapter" / "adapter_model.safetensors").is_file()
    history = json.loads((run / "log_history.json").read_text())
    assert {row["round"] for row in history} == {0, 1} and any("loss" in row for row in history)

    (run / "rounds" / "1" / "log_history.json").unlink()  # round 1 interrupted after its pairs were written
    pairs_before = (run / "pairs" / "round-1.jsonl").read_text()
    first_adapter = (run / "rounds" / "0" / "adapter" / "adapter_model.safetensors").read_bytes()
    resumed = train_dpo(config, resume=True)
    assert (run / "rounds" / "0" / "adapter" / "adapter_model.safetensors").read_bytes() == first_adapter
    assert (run / "pairs" / "round-1.jsonl").read_text() == pairs_before, "the round trains on its written pairs"
    assert [r["pairs"] for r in resumed["rounds"]] == [r["pairs"] for r in summary["rounds"]]


def test_a_finished_run_resumed_with_more_rounds_keeps_its_rounds_and_adds_the_rest(tiny_model, tmp_path):
    run = tmp_path / "run"
    shorter = train_dpo(dpo_config(tiny_model, run, env_id=LENGTH_ID, rounds=1, temperature=1.5))
    first_pairs = (run / "pairs" / "round-0.jsonl").read_text()
    first_adapter = (run / "rounds" / "0" / "adapter" / "adapter_model.safetensors").read_bytes()

    longer = train_dpo(dpo_config(tiny_model, run, env_id=LENGTH_ID, rounds=2, temperature=1.5), resume=True)

    assert [r["round"] for r in longer["rounds"]] == [0, 1] and longer["train_s"] > shorter["train_s"] > 0
    assert (run / "pairs" / "round-0.jsonl").read_text() == first_pairs
    assert (run / "rounds" / "0" / "adapter" / "adapter_model.safetensors").read_bytes() == first_adapter
    assert (run / "adapter" / "adapter_model.safetensors").read_bytes() == (
        run / "rounds" / "1" / "adapter" / "adapter_model.safetensors").read_bytes()
    assert "rounds: 2" in (run / "config.yaml").read_text()
    with pytest.raises(OutputDirInUseError, match=r"-rounds: 2; \+rounds: 1"):
        train_dpo(dpo_config(tiny_model, run, env_id=LENGTH_ID, rounds=1, temperature=1.5), resume=True)


def test_dpo_options_are_refused_under_another_algo_and_bad_values_named():
    with pytest.raises(ValueError, match=r"--samples-per-prompt \(8\) applies only to --algo dpo, not to --algo grpo"):
        TrainConfig(env_id=TOY_ID, algo="grpo", samples_per_prompt=8)
    with pytest.raises(ValueError, match="samples_per_prompt >= 2"):
        TrainConfig(env_id=TOY_ID, algo="dpo", samples_per_prompt=1)
    with pytest.raises(ValueError, match="offline --pairs train one round"):
        TrainConfig(env_id=TOY_ID, algo="dpo", pairs=["p.jsonl"], rounds=2)


@pytest.mark.parametrize("env_id", ["affectgym/EmotionStyle-v0", "affectgym/EmpatheticDialogue-v0"])
def test_one_round_of_dpo_on_a_real_env_ranks_its_pairs_by_the_env_score(tiny_model, tmp_path, env_id):
    config = dpo_config(tiny_model, tmp_path / "run", env_id=env_id, n_train=4, max_completion_length=16, temperature=1.5,
                        max_steps=1)
    summary = train_dpo(config)
    env = make_env(env_id, {"split": "train"})
    rows = [json.loads(line) for line in (tmp_path / "run" / "pairs" / "round-0.jsonl").read_text().splitlines()]
    assert summary["rounds"][0]["pairs"] == len(rows) > 0
    for row in rows:
        scenario = env.get_scenario(row["scenario_id"])
        assert row["chosen_score"] == pytest.approx(env.score(scenario, row["chosen"], env.flat_trace(scenario)).total)
        assert row["chosen_score"] > row["rejected_score"]


def test_the_dialogue_recipes_chain_sft_on_the_references_then_dpo_from_its_adapter(tiny_model, tmp_path):
    from affectgym.train.recipes import dialogue_dpo_config, dialogue_reference_sft_config
    from affectgym.train.sft import train_sft

    sft = train_sft(dialogue_reference_sft_config(tmp_path / "sft", model=str(tiny_model), max_steps=1, lora_r=4,
                                                  lora_layers=1))
    assert sft["demonstrations"]["references"] > 0
    config = dialogue_dpo_config(tmp_path / "dpo", sft["adapter_dir"], model=str(tiny_model), rounds=1, max_steps=1,
                                 n_train=4, max_completion_length=16, temperature=1.5, pair_margin=0.0)
    summary = train_dpo(config)
    assert summary["rounds"][0]["pairs"] > 0
    assert (tmp_path / "dpo" / "adapter" / "adapter_model.safetensors").is_file()
