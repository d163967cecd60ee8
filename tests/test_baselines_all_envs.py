"""Every registered env has an LLM-free baseline, and the runner plays numeric envs too."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import affectgym
from affectgym.agents.base import Agent
from affectgym.agents.baselines import recommended_baseline
from affectgym.agents.policies import ControllerPolicy, RandomPolicy, SB3Policy
from affectgym.agents.registry import (
    ENV_KIND_WORDS,
    agent_env_problem,
    check_agent_supports,
    make_agent,
)
from affectgym.agents.text_baselines import (
    DialogueTemplateAgent,
    StateControllerAgent,
    StyleLexiconAgent,
)
from affectgym.envs.spaces import env_kind
from affectgym.eval import EvalConfig, run_eval

BUILTIN_IDS = list(affectgym.list_envs())


def test_there_are_six_registered_envs_and_each_recommends_a_baseline():
    assert len(BUILTIN_IDS) == 6
    assert all(recommended_baseline(env_id) for env_id in BUILTIN_IDS)


@pytest.mark.parametrize("env_id", BUILTIN_IDS)
def test_affectgym_eval_with_the_baseline_agent_works_for_every_registered_env(env_id, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "affectgym.cli", "eval", env_id, "--agent", "baseline", "-n", "4", "--out", str(tmp_path), "--no-progress"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert summary["errors"]["count"] == 0 and records and all(r["error"] is None for r in records)
    assert summary["reward"]["mean"] > 0
    assert metadata["agent_spec"] == "baseline" and metadata["agent"]["name"] == recommended_baseline(env_id)


def test_every_agent_class_declares_the_env_kinds_it_plays():
    from affectgym.agents import baselines, policies

    classes = [c for module in (baselines, policies) for c in vars(module).values() if isinstance(c, type) and issubclass(c, Agent)]
    assert all(set(c.env_kinds) <= set(ENV_KIND_WORDS) and c.env_kinds for c in classes)
    assert ControllerPolicy.env_kinds == RandomPolicy.env_kinds == SB3Policy.env_kinds == ("numeric",)
    assert StyleLexiconAgent.env_kinds == DialogueTemplateAgent.env_kinds == StateControllerAgent.env_kinds == ("text",)


def test_random_and_controller_pick_the_policy_that_fits_the_env_kind():
    assert isinstance(make_agent("random", env_id="affectgym/EmotionState-v0"), RandomPolicy)
    assert isinstance(make_agent("controller", env_id="affectgym/EmotionState-v0"), ControllerPolicy)
    assert isinstance(make_agent("controller", env_id="affectgym/EmotionStateText-v0"), StateControllerAgent)


def test_random_on_an_env_without_labels_says_what_it_plays():
    with pytest.raises(ValueError, match="label_set is empty.*--agent baseline"):
        make_agent("random", env_id="affectgym/EmotionStyle-v0", env_kwargs={"classifier": "nade"})


@pytest.mark.parametrize("env_id", BUILTIN_IDS)
def test_the_agent_check_accepts_the_baseline_and_the_recommended_agent_of_every_env(env_id):
    env = affectgym.make(env_id)
    check_agent_supports("baseline", env)
    check_agent_supports(recommended_baseline(env_id), env)


@pytest.mark.parametrize(
    ("spec", "env_id", "problem"),
    [
        ("style-lexicon", "affectgym/Sarcasm-v0", "it reads EmotionStyle-v0's prompt"),
        ("dialogue-template", "affectgym/EmotionStyle-v0", "the env is a EmotionStyleEnv, not a DialogueEnv"),
        ("controller", "affectgym/EmpatheticDialogue-v0", "EmotionStateText-v0's state and target"),
        ("controller", "affectgym/EmotionStyle-v0", "not a EmotionStateTextEnv"),
        ("random", "affectgym/EmotionStateText-v0", "label_set is empty"),
        ("sb3:model.zip", "affectgym/Sarcasm-v0", "it plays numeric envs and this env is text"),
        ("style-lexicon", "affectgym/EmotionState-v0", "it plays text envs and this env is numeric"),
    ],
)
def test_the_agent_check_refuses_a_new_baseline_on_an_env_it_cannot_play(spec, env_id, problem):
    env = affectgym.make(env_id)
    assert problem in agent_env_problem(spec, env)
    with pytest.raises(ValueError, match=f"agent '{spec}' cannot play {env_id}: .*; agents that can: .*baseline"):
        check_agent_supports(spec, env)


def test_the_agent_check_lists_the_policies_that_play_the_numeric_env():
    env = gym.make("affectgym/EmotionState-v0")
    for spec in ("baseline", "controller", "random", "sb3:runs/es/model.zip"):
        check_agent_supports(spec, env)
    with pytest.raises(ValueError, match=r"agents that can: baseline, controller, random, sb3:<path/model.zip>$"):
        check_agent_supports("majority", env)


def test_the_runner_plays_a_numeric_env_and_writes_the_same_files(tmp_path):
    config = EvalConfig(env_id="affectgym/EmotionState-v0", agent="controller", out=tmp_path, split="train", n=3,
                        env_kwargs={"max_episode_steps": 10}, progress=False)
    summary = run_eval(config, fsync=False).summary
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert {p.name for p in tmp_path.iterdir()} >= {"results.jsonl", "summary.json", "metadata.json"}
    assert len(records) == 3 and all(r["truncated"] and r["turns"] == 10 and r["error"] is None for r in records)
    assert all(r["reward"] == pytest.approx(sum(r["step_rewards"])) for r in records)
    assert set(summary["reward_components"]) == {"target_match", "smoothness", "intensity"}
    random_summary = run_eval(EvalConfig(**{**vars(config), "agent": "random", "out": tmp_path / "random"}), fsync=False).summary
    assert summary["reward"]["mean"] > random_summary["reward"]["mean"]


def test_an_sb3_model_file_is_an_agent_for_the_numeric_env(tmp_path):
    from stable_baselines3 import PPO

    env = gym.make("affectgym/EmotionState-v0")
    PPO("MlpPolicy", env, n_steps=8, batch_size=8, seed=0, device="cpu").save(tmp_path / "model.zip")
    agent = make_agent(f"sb3:{tmp_path / 'model.zip'}")
    observation, info = env.reset(seed=0)
    action = agent.act(observation, info)
    assert isinstance(agent, SB3Policy) and agent.algo == "ppo" and np.asarray(action).shape == (7,)
    with pytest.raises(FileNotFoundError, match="no such model file"):
        make_agent(f"sb3:{tmp_path / 'missing.zip'}")


def test_env_kind_is_text_for_affect_envs_and_numeric_for_box_envs():
    assert env_kind(gym.make("affectgym/EmotionState-v0")) == "numeric"
    assert env_kind(affectgym.make("affectgym/EmotionStateText-v0")) == "text"


def test_the_text_baselines_answer_in_the_envs_format():
    style = StyleLexiconAgent().act("EMOTION: anger\n\nExplain why traffic lights are slow.", {})
    assert "anger" not in style.lower() and "traffic" in style.lower()
    env = affectgym.make("affectgym/EmpatheticDialogue-v0", split="eval")
    observation, info = env.reset(seed=0)
    _, reward, *_ , info = env.step(DialogueTemplateAgent().act(observation, info))
    assert info["reward_components"]["structure"] == 1.0 and info["reward_components"]["tags"] == 1.0
    env = affectgym.make("affectgym/EmotionStateText-v0")
    observation, info = env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(StateControllerAgent().act(observation, info))
    assert reward > 0 and "invalid_actions" not in info["reward_components"]
