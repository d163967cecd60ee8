"""The public API behind the CLI's errors and conventions: the agent-env check, check_env's
report, offline hub errors, render modes, and the results dataset --push-to-hub uploads."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from toy_env import ToyMoodEnv

import affectgym
from affectgym.agents.base import Agent
from affectgym.agents.registry import agent_env_problem, check_agent_supports, register_agent
from affectgym.envs.checker import check_env
from affectgym.envs.spaces import env_kind
from affectgym.eval import EvalConfig, run_eval
from affectgym.eval.push import push_results_to_hub, results_dataset


# --------------------------------------------------------------------------- agents declare the envs they play
class NumericOnlyAgent(Agent):
    """A policy agent: what an agent of numeric envs declares."""

    env_kinds = ("numeric",)


def test_an_agent_class_declares_its_env_kinds_and_the_check_reads_them():
    register_agent("numeric-only-test", lambda **kw: NumericOnlyAgent(), agent_class=NumericOnlyAgent)
    numeric = affectgym.make("affectgym/EmotionState-v0")
    text = affectgym.make("affectgym/Sarcasm-v0")
    assert (env_kind(numeric), env_kind(text)) == ("numeric", "text")
    assert agent_env_problem("numeric-only-test", numeric) is None
    assert agent_env_problem("numeric-only-test", text) == (
        "it plays numeric envs and this env is text (text observations and actions)"
    )
    with pytest.raises(ValueError, match=r"agent 'smollm2-135m' cannot play affectgym/EmotionState-v0: it plays text envs "
                                         r"and this env is numeric \(Box observations and actions\); agents that can: .*numeric-only-test"):
        check_agent_supports("smollm2-135m", numeric)
    check_agent_supports("majority", text)


def test_an_agent_registered_as_its_class_is_checked_too():
    register_agent("numeric-class-test", NumericOnlyAgent)
    assert "plays numeric envs" in agent_env_problem("numeric-class-test", ToyMoodEnv())


def test_the_runner_checks_the_agent_before_anything_is_written(tmp_path):
    config = EvalConfig(env_id="affectgym/EmotionStyle-v0", agent="random", out=tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match="agent 'random' cannot play affectgym/EmotionStyle-v0"):
        run_eval(config)
    assert not (tmp_path / "run").exists()


def test_env_kwargs_may_not_set_the_split():
    with pytest.raises(ValueError, match=r"env_kwargs sets split='all'.*pass --split all instead"):
        EvalConfig(env_id="affectgym/Sarcasm-v0", agent="majority", out="x", env_kwargs={"split": "all"})


# --------------------------------------------------------------------------- check_env says what is missing or vacuous
class NoReferenceEnv(ToyMoodEnv):
    def reference_answer(self, scenario):
        raise NotImplementedError


class NoCanaryEnv(ToyMoodEnv):
    def canaries(self, scenario):
        return {}


class UnboundedObservationEnv(gym.Env):
    """A numeric env whose unbounded observation space gymnasium's checker warns about."""

    observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


def test_check_env_names_a_missing_reference_answer():
    report = check_env(NoReferenceEnv(), fuzz_actions=20, raise_on_problem=False)
    (problem,) = report.problems
    assert problem.startswith("canaries: ") and "does not implement reference_answer(scenario)" in problem
    assert "return (final_text, trace)" in problem


def test_check_env_warns_when_no_canary_was_checked():
    report = check_env(NoCanaryEnv(), fuzz_actions=20)
    assert not report.problems and report.canaries_checked == 0
    assert any(w.startswith("canaries: 0 checked, so no reward hack was tried") for w in report.warnings)
    assert "OK, 1 warning(s)" in str(report) and "  ! canaries: 0 checked" in str(report)


def test_check_env_shows_gymnasium_checker_warnings():
    report = check_env(UnboundedObservationEnv())
    assert any(w.startswith("gymnasium check_env: ") and "infinity" in w for w in report.warnings), report.warnings
    assert "warning(s)" in str(report)


# --------------------------------------------------------------------------- offline hub
def test_emotion_classifier_fails_at_once_with_a_clear_message_when_hf_hub_offline(monkeypatch):
    from affectgym.hub import in_hub_cache
    from affectgym.rewards.classifier import DEFAULT_EMOTION_MODEL, EmotionClassifier

    if in_hub_cache(DEFAULT_EMOTION_MODEL):
        pytest.skip(f"{DEFAULT_EMOTION_MODEL} is in this machine's hub cache, so it loads offline")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match=r"not in the local hub cache, and the Hugging Face hub is unreachable "
                                      r"\(HF_HUB_OFFLINE is set\)\. Without hub access.*backend='nade'"):
        EmotionClassifier().scores(["what a lovely day"])


# --------------------------------------------------------------------------- render modes
def test_human_render_of_a_text_env_prints_each_new_message_once(capsys):
    env = gym.make("affectgym/EmotionStyle-v0", render_mode="human")
    env.reset(seed=0)
    first = capsys.readouterr().out
    assert first.startswith("[SYSTEM]") and "[USER]" in first
    env.step("A calm, warm note about the rent.")
    second = capsys.readouterr().out
    assert second.startswith("[ASSISTANT]\nA calm, warm note about the rent.") and "[SYSTEM]" not in second
    assert env.render() is None and capsys.readouterr().out == ""


def test_text_envs_name_their_render_modes_when_given_another():
    with pytest.raises(ValueError, match="render_mode must be None or one of 'ansi', 'human', got 'rgb_array'"):
        ToyMoodEnv(render_mode="rgb_array")


def test_emotion_state_rgb_array_frames_show_the_episode_so_far():
    env = gym.make("affectgym/EmotionState-v0", render_mode="rgb_array")
    observation, _ = env.reset(seed=0)
    first = env.render()
    for _ in range(5):
        observation, *_ = env.step(observation[7:14])
    frame = env.render()
    assert frame.shape == first.shape == (320, 640, 3) and frame.dtype == np.uint8
    assert not np.array_equal(frame, first) and frame.std() > 10  # a drawn figure, not a blank canvas


def test_emotion_state_episodes_record_as_video(tmp_path):
    pytest.importorskip("moviepy", reason="gymnasium's RecordVideo writes videos with moviepy")
    from gymnasium.wrappers import RecordVideo

    env = RecordVideo(affectgym.make("affectgym/EmotionState-v0", render_mode="rgb_array", max_episode_steps=5), str(tmp_path))
    observation, _ = env.reset(seed=0)
    done = False
    while not done:
        observation, _, terminated, truncated, _ = env.step(observation[7:14])
        done = terminated or truncated
    env.close()
    assert list(tmp_path.glob("*.mp4"))


# --------------------------------------------------------------------------- the results as a dataset
def test_push_to_hub_uploads_one_row_per_episode_under_the_repo_id(tmp_path):
    pytest.importorskip("datasets")
    from affectgym.agents.base import FunctionAgent

    config = EvalConfig(env_id="affectgym/Sarcasm-v0", agent="always-sincere", out=tmp_path / "run", n=3, progress=False)
    run_eval(config, agent=FunctionAgent(lambda o, i: '<final>{"label": "sincere", "confidence": 0.6}</final>'))
    calls = []
    url = push_results_to_hub(tmp_path / "run", "my-org/sarcasm-evals", upload=lambda data, repo: calls.append((data, repo)))
    assert url == "https://huggingface.co/datasets/my-org/sarcasm-evals"
    ((dataset, repo_id),) = calls
    assert repo_id == "my-org/sarcasm-evals" and len(dataset) == 3
    assert set(dataset["env_id"]) == {"affectgym/Sarcasm-v0"} and set(dataset["agent"]) == {"always-sincere"}
    row = dataset[0]
    assert isinstance(row["reward"], float) and json.loads(row["messages"])[0]["role"] == "system"
    assert json.loads(row["outcome"])["prediction"] == "sincere"
    assert results_dataset(tmp_path / "run").column_names == dataset.column_names
