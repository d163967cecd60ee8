"""Training a classic policy on EmotionState-v0 (SB3) and plotting episodes."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from affectgym.envs.emotion_state import EmotionStateEnv
from affectgym.envs.emotion_state.plot import plot_episode, rollout
from affectgym.train import commands
from affectgym.train.commands import config_from_args
from affectgym.train.config_parser import load_config
from affectgym.train.sb3 import read_monitor_logs, train_sb3


def test_short_ppo_run_beats_the_random_policy_by_a_clear_margin(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["train", "affectgym/EmotionState-v0", "--algo", "ppo", "--timesteps", "30000", "--seed", "0",
         "--output-dir", str(tmp_path), "--eval-episodes", "10"]
    )  # fmt: skip
    assert args.func(args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads(capsys.readouterr().out)
    assert load_config(tmp_path / "config.yaml") == config_from_args(args)
    # Random play scores about 39 per 60-step episode, commanding the target about 56.
    assert summary["mean_reward"] > summary["random_mean_reward"] + 4.0
    assert (tmp_path / "model.zip").exists() and (
        tmp_path / "learning_curve.png"
    ).stat().st_size > 10_000
    timesteps, returns = read_monitor_logs(tmp_path / "monitor")
    assert timesteps[-1] <= 30000 + 2048 and len(returns) >= 400  # PPO rounds up to full rollouts
    assert returns[-50:].mean() > returns[:50].mean()


@pytest.mark.slow
def test_longer_ppo_run_gets_most_of_the_way_to_the_target_tracker(tmp_path):
    result = train_sb3(timesteps=150_000, seed=1, output_dir=tmp_path, eval_episodes=20)
    assert result.mean_reward > result.random_mean_reward + 10.0


@pytest.mark.slow
def test_sac_runs_and_learns(tmp_path):
    result = train_sb3(
        algo="sac", timesteps=8_000, seed=0, output_dir=tmp_path, eval_episodes=5, n_envs=1
    )
    assert result.mean_reward > result.random_mean_reward


def test_stable_baselines_make_vec_env_builds_the_env():
    from stable_baselines3.common.env_util import make_vec_env

    from affectgym.train.sb3 import ensure_registered

    ensure_registered("affectgym/EmotionState-v0")
    venv = make_vec_env(
        "affectgym/EmotionState-v0", n_envs=2, seed=0
    )  # passes render_mode="rgb_array"
    assert venv.reset().shape == (2, 22)
    venv.close()


def test_unknown_algorithm_is_rejected_with_the_accepted_ones(tmp_path):
    with pytest.raises(ValueError, match="ppo"):
        train_sb3(algo="dqn", timesteps=10, output_dir=tmp_path)


def test_episode_plot_of_a_tracking_rollout(tmp_path):
    episode = rollout(EmotionStateEnv(), lambda obs: obs[7:14], seed=0, options={"arc": "argument"})
    assert episode["states"].shape == episode["targets"].shape == (61, 7)
    assert set(episode["components"]) == {"target_match", "smoothness", "intensity"}
    assert np.abs(episode["states"][-1] - episode["targets"][-1]).mean() < 0.05
    path = plot_episode(
        episode["states"], episode["targets"], tmp_path / "episode.png", title="argument"
    )
    assert path.stat().st_size > 10_000
    with pytest.raises(ValueError, match="shape"):
        plot_episode(episode["states"][:, :3], episode["targets"], tmp_path / "bad.png")
