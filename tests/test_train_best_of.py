"""``--algo sft --best-of N``: the policy's own best reply to each train prompt, by the env's score, learned."""

from __future__ import annotations

import json

import pytest
from length_toy import LENGTH_ID
from tiny_models import tiny_causal_lm

from affectgym.train.config import TrainConfig
from affectgym.train.demos import DemonstrationError
from affectgym.train.flatten import make_env
from affectgym.train.sft import train_sft


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("models"))


def best_of_config(model, output_dir, **overrides):
    options = dict(env_id=LENGTH_ID, algo="sft", model=str(model), best_of=4, n_train=4, max_completion_length=12,
                   temperature=1.5, max_steps=1, batch_size=2, lora_r=4, eval_episodes=0, output_dir=str(output_dir))
    return TrainConfig(**{**options, **overrides})


def test_each_prompt_teaches_its_best_scored_sample_and_every_sample_is_kept_on_disk(tiny_model, tmp_path):
    summary = train_sft(best_of_config(tiny_model, tmp_path / "run"))
    run = tmp_path / "run"
    records = [json.loads(line) for line in (run / "best_of.jsonl").read_text().splitlines()]
    demonstrations = [json.loads(line) for line in (run / "demonstrations.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(len(r["replies"]) == 4 for r in records)
    env = make_env(LENGTH_ID, {"split": "train"})
    for record, row in zip(records, demonstrations, strict=True):
        scenario = env.get_scenario(record["scenario_id"])
        for reply in record["replies"]:
            assert reply["score"] == pytest.approx(env.score(scenario, reply["text"], env.flat_trace(scenario)).total)
        best = max(record["replies"], key=lambda reply: reply["score"])
        assert row["messages"] == [*record["prompt"], {"role": "assistant", "content": best["text"]}]
        assert row["source"] == "best_of" and row["scenario_id"] == record["scenario_id"]
    assert summary["demonstrations"]["best_of_kept"] == 4 and summary["demonstrations"]["best_of_prompts"] == 4


def test_a_best_sample_below_min_reward_is_not_learned_and_none_left_is_an_error(tiny_model, tmp_path):
    run = tmp_path / "run"
    threshold = 0.5
    summary = train_sft(best_of_config(tiny_model, run, min_reward=threshold))
    records = [json.loads(line) for line in (run / "best_of.jsonl").read_text().splitlines()]
    reaching = sum(max(reply["score"] for reply in record["replies"]) >= threshold for record in records)
    assert summary["demonstrations"]["best_of_kept"] == reaching
    assert summary["demonstrations"]["best_of_below_min_reward"] == len(records) - reaching
    with pytest.raises(DemonstrationError, match="no demonstration to learn from.*raise --best-of"):
        train_sft(best_of_config(tiny_model, tmp_path / "none", min_reward=1e9))


def test_a_resumed_run_reads_its_samples_back_instead_of_sampling_again(tiny_model, tmp_path):
    config = best_of_config(tiny_model, tmp_path / "run")
    train_sft(config)
    samples = (tmp_path / "run" / "best_of.jsonl").read_text()
    (tmp_path / "run" / "log_history.json").unlink()  # interrupted after sampling
    train_sft(config, resume=True)
    assert (tmp_path / "run" / "best_of.jsonl").read_text() == samples


def test_sampling_options_without_best_of_are_refused_by_name():
    with pytest.raises(ValueError, match=r"samples only with --best-of N; drop temperature"):
        TrainConfig(env_id=LENGTH_ID, algo="sft", references=True, temperature=0.7)
    with pytest.raises(ValueError, match="best_of must be an integer >= 0"):
        TrainConfig(env_id=LENGTH_ID, algo="sft", references=True, best_of=-1)
    with pytest.raises(ValueError, match=r"--best-of \(4\) applies only to --algo sft"):
        TrainConfig(env_id=LENGTH_ID, algo="dpo", best_of=4)
    assert TrainConfig(env_id=LENGTH_ID, algo="sft", best_of=4).best_of == 4, "sampled replies alone are enough"


def test_the_emotion_style_recipe_learns_best_of_8_and_its_control_scores_for_a_shuffled_target(tiny_model, tmp_path):
    from affectgym.train.recipes import emotion_style_best_of_config

    trained = emotion_style_best_of_config(tmp_path / "trained", model=str(tiny_model))
    control = emotion_style_best_of_config(tmp_path / "control", model=str(tiny_model), control=True)
    assert (trained.algo, trained.best_of, trained.min_reward) == ("sft", 8, 0.6)
    assert trained.env_kwargs["rubric"] == "default" and control.env_kwargs["rubric"] == "shuffled-target"
    summary = train_sft(emotion_style_best_of_config(tmp_path / "run", model=str(tiny_model), n_train=2, best_of=2,
                                                     max_completion_length=8, max_steps=1, lora_r=4, min_reward=None))
    assert summary["demonstrations"]["best_of_kept"] == 2
