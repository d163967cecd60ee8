"""Specification of affectgym/EmotionState-v0 (numeric env, equations, vector env)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import affectgym
from affectgym.envs.emotion_state import (
    ANGER,
    DEFAULT_MAX_EPISODE_STEPS,
    DISGUST,
    EMOTIONS,
    JOY,
    NEUTRAL,
    SADNESS,
    EmotionBatch,
    EmotionRewardWeights,
    EmotionStateConfig,
    EmotionStateEnv,
    EmotionStateVectorEnv,
    exclusion_rules,
    load_arcs,
    load_transition_prior,
    next_state,
    reward_components,
    step_reward,
    step_rows,
)

ENV_ID = "affectgym/EmotionState-v0"


def _episode_return(env: EmotionStateEnv, policy, seed: int, arc: str | None = None) -> float:
    obs, _ = env.reset(seed=seed, options={"arc": arc} if arc else None)
    total, done = 0.0, False
    rng = np.random.default_rng(seed)
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs, rng))
        total += reward
        done = terminated or truncated
    return total


def track_target(obs, rng):
    return obs[7:14]


def random_policy(obs, rng):
    return rng.uniform(0, 1, 7).astype(np.float32)


def hold_still(obs, rng):
    return obs[0:7]


def all_loud(obs, rng):
    return np.ones(7, dtype=np.float32)


def test_env_passes_gymnasium_check_env_including_determinism():
    check_env(EmotionStateEnv())
    check_env(EmotionStateEnv(include_time=False, reward_weights={"diversity": 0.1}))


def test_gym_make_and_make_vec_with_sixteen_envs_run():
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    for mode in (None, "sync", "vector_entry_point"):
        envs = gym.make_vec(ENV_ID, num_envs=16, vectorization_mode=mode)
        obs, _ = envs.reset(seed=0)
        assert obs.shape == (16, 22)
        for _ in range(70):  # crosses the 60-step limit: autoreset must work
            obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
            assert envs.observation_space.contains(obs)
            assert np.all((reward >= 0) & (reward <= 1))
        envs.close()


def test_gym_make_keywords_and_a_config_build_the_same_single_and_vector_env():
    options = {"alpha": 0.3, "reward_weights": {"diversity": 0.1}, "arc_names": ["argument"]}
    config = EmotionStateConfig(**options)
    made = gym.make(ENV_ID, **options).unwrapped
    assert made.core.config == EmotionStateEnv(config).core.config == config
    assert EmotionStateVectorEnv(2, config).core.config == config
    with pytest.raises(TypeError, match="accepted: alpha"):
        gym.make(ENV_ID, alhpa=0.3)


def test_observation_layout_is_state_target_previous_state_time():
    env = EmotionStateEnv()
    obs, info = env.reset(seed=0, options={"arc": "good_news"})
    calm = load_arcs()["good_news"].segments[0][1]
    np.testing.assert_allclose(obs[7:14], calm, atol=1e-6)
    np.testing.assert_allclose(obs[0:7], obs[14:21])
    assert np.all(np.abs(obs[0:7] - calm) <= 0.05 + 1e-6)
    assert obs[21] == 1.0 and info["target_name"] == "calm"
    before = obs[0:7].copy()
    obs, *_ = env.step(np.ones(7, dtype=np.float32))
    np.testing.assert_allclose(obs[14:21], before)
    assert obs[21] == pytest.approx(1 - 1 / 60)


def test_arc_targets_change_on_schedule_and_episode_truncates_at_limit():
    env = EmotionStateEnv(max_episode_steps=60)
    obs, _ = env.reset(seed=0, options={"arc": "good_news"})  # calm 10, surprise 20, joy 30
    targets = [obs[7:14].copy()]
    truncated = False
    steps = 0
    while not truncated:
        obs, _, terminated, truncated, _ = env.step(obs[7:14])
        assert not terminated
        targets.append(obs[7:14].copy())
        steps += 1
    assert steps == 60
    arc = load_arcs()["good_news"]
    np.testing.assert_allclose(targets[9], arc.segments[0][1], atol=1e-6)
    np.testing.assert_allclose(targets[10], arc.segments[1][1], atol=1e-6)
    np.testing.assert_allclose(targets[30], arc.segments[2][1], atol=1e-6)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(obs[7:14])


def test_unknown_arc_is_rejected_with_the_available_names():
    with pytest.raises(ValueError, match="available"):
        EmotionStateEnv().reset(seed=0, options={"arc": "no_such_arc"})


def test_shipped_data_has_at_least_eight_feasible_arcs_and_a_full_prior():
    arcs = load_arcs()
    assert len(arcs) >= 8
    for arc in arcs.values():
        for _, target, steps in arc.segments:
            assert steps >= 1 and target.sum() > 0
    prior = load_transition_prior()
    assert prior.shape == (7, 7) and prior.min() >= 0
    assert prior[DISGUST, JOY] == 0.0  # forbidden
    assert prior[ANGER, DISGUST] > 1.0  # easy


def test_infeasible_target_in_arcs_file_is_rejected():
    bad = {
        "targets": {"both": {"anger": 0.8, "sadness": 0.8}},
        "arcs": {"x": {"segments": [["both", 5]]}},
    }
    with pytest.raises(ValueError, match="mutual-exclusion"):
        load_arcs(bad)


def test_high_anger_caps_joy_and_anger_plus_sadness_over_limit_scales_both():
    state = exclusion_rules(
        np.array([[0.9, 0, 0, 0.9, 0, 0.2, 0], [0.7, 0, 0, 0.3, 0, 0.6, 0], [0.5, 0, 0, 0.9, 0, 0.5, 0]])
    )
    assert state[0, JOY] == pytest.approx(0.5, abs=1e-6)  # (1 - 0.9) / 0.2
    assert state[1, ANGER] == pytest.approx(0.49, abs=1e-6) and state[1, SADNESS] == pytest.approx(
        0.42, abs=1e-6
    )
    np.testing.assert_allclose(
        state[2], [0.5, 0, 0, 0.9, 0, 0.5, 0], atol=1e-7
    )  # neither rule binds


def test_state_follows_action_as_ema_with_alpha_as_weight_of_the_new_action():
    state = next_state(np.full((1, 7), 0.2), np.full((1, 7), 0.7), np.ones((7, 7)), 0.25)
    np.testing.assert_allclose(state, 0.75 * 0.2 + 0.25 * 0.7, atol=1e-6)


def test_forbidden_transition_blocks_rise_from_a_dominant_emotion_but_not_the_fall():
    prior = load_transition_prior()
    disgusted = [[0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
    calm = [[0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]]
    gains = []
    for start in (disgusted, calm):
        state = next_state(np.array(start), np.array([[0.0, 0, 0, 1, 0, 0, 0]]), prior, 0.2)
        gains.append(float(state[0, JOY]))
        assert state[0, DISGUST] < start[0][DISGUST] or start[0][DISGUST] == 0
    assert gains[0] < 0.02 < 0.15 < gains[1]


def test_reward_components_are_bounded_in_unit_interval_for_random_play():
    env = EmotionStateEnv(reward_weights={"diversity": 0.1})
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(600):
        action = rng.uniform(-0.5, 1.5, 7).astype(np.float32)
        _, reward, _, truncated, info = env.step(action)
        values = np.array(list(info["reward_components"].values()))
        assert set(info["reward_components"]) == {
            "target_match",
            "smoothness",
            "intensity",
            "diversity",
        }
        assert np.all((values >= 0) & (values <= 1 + 1e-6)) and 0 <= reward <= 1.1 + 1e-6
        if truncated:
            env.reset()


def test_still_state_on_target_scores_one_and_components_match_their_definitions():
    weights = EmotionRewardWeights().as_array()
    state = np.array([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.0]])
    target = np.array([[0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]])
    prev = np.array([[0.1, 0.2, 0.3, 0.4, 0.5, 0.3, 0.0]])
    comps = reward_components(state, prev, target, 0.05)
    reward = step_reward(comps, weights)
    match = 1 - np.abs(state - target).mean()
    smooth = 1 / (1 + np.abs(state - prev).mean() / 0.05)
    intensity = np.minimum(state, target).sum() / target.sum()
    np.testing.assert_allclose(comps[0, :3], [match, smooth, intensity], atol=1e-6)
    assert reward[0] == pytest.approx(0.3 * match + 0.3 * smooth + 0.4 * intensity, abs=1e-6)
    assert step_reward(reward_components(target, target, target, 0.05), weights)[0] == pytest.approx(1.0, abs=1e-6)


def test_step_rows_applies_the_equations_to_each_row_and_holds_rows_with_a_nan_action():
    # Hand-computed, alpha 0.5. Row 0 (all multipliers 1: an EMA): anger 0.8 -> 0.9, sadness
    # 0.5 -> 0.75, joy 0.5 -> 0.75; anger + sadness = 1.65 > 1.2 scales both by 0.7 (0.63,
    # 0.525) and anger 0.9 caps joy at (1 - 0.9) / 0.2 = 0.5. Fear falls 0.4 -> 0.2.
    # Row 1: only neutral (0.93) makes up the state and neutral -> joy has multiplier 0.2,
    # so joy rises at 0.5 * (0.94 * 0.2 + 0.06 * 1) = 0.124: 0 -> 0.124; falls keep rate 0.5.
    # Row 2: a NaN action; the row holds and pays 0.
    multipliers = np.ones((7, 7))
    multipliers[NEUTRAL, JOY] = 0.2
    prev = np.array([
        [0.8, 0, 0.4, 0.5, 0, 0.5, 0],
        [0, 0, 0, 0, 0.93, 0, 0],
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
    ])  # fmt: skip
    action = np.array([[1, 0, 0, 1, 0, 1, 0], [0, 0, 0, 1, 0.93, 0, 0], [np.nan] * 7])
    target = np.full((3, 7), 0.5)
    batch = EmotionBatch.from_arrays(prev, target=target)
    weights = np.array([0.25, 0.25, 0.25, 0.25])
    step_rows(batch.rows, action, multipliers, 0.5, 0.1, weights, batch.reward, batch.components, batch.invalid)
    expected = np.array([
        [0.63, 0, 0.2, 0.5, 0, 0.525, 0],
        [0, 0, 0, 0.124, 0.93, 0, 0],
        prev[2],
    ])  # fmt: skip
    np.testing.assert_allclose(batch.state, expected, atol=1e-6)
    np.testing.assert_allclose(batch.prev, prev.astype(np.float32))
    np.testing.assert_allclose(batch.target, target)
    assert batch.invalid.tolist() == [False, False, True]
    s, p = expected[0], prev[0]
    match = 1 - np.abs(s - 0.5).sum() / 7
    smooth = 1 / (1 + np.abs(s - p).sum() / 7 / 0.1)
    intensity = np.minimum(s, 0.5).sum() / 3.5
    diversity = 4 * np.var(s)
    np.testing.assert_allclose(batch.components[0], [match, smooth, intensity, diversity], atol=1e-6)
    assert batch.reward[0] == pytest.approx((match + smooth + intensity + diversity) / 4, abs=1e-6)
    assert batch.reward[2] == 0.0 and batch.components[2].tolist() == [0.0] * 4


@pytest.mark.parametrize("arc", ["good_news", "argument", "spoiled_meal", "betrayal", None])
def test_tracking_the_target_beats_random_idle_and_loud_policies(arc):
    env = EmotionStateEnv()
    for seed in (0, 1):
        tracker = _episode_return(env, track_target, seed, arc)
        for other in (random_policy, hold_still, all_loud):
            assert tracker > _episode_return(env, other, seed, arc) + 3.0, other.__name__


def test_native_vector_env_rows_match_the_single_env_step_for_step():
    single = EmotionStateEnv()
    vector = EmotionStateVectorEnv(num_envs=1)
    obs_s, _ = single.reset(seed=3, options={"arc": "night_noise"})
    obs_v, _ = vector.reset(seed=3, options={"arc": "night_noise"})
    np.testing.assert_array_equal(obs_v[0], obs_s)
    rng = np.random.default_rng(0)
    for _ in range(60):
        action = rng.uniform(0, 1, 7).astype(np.float32)
        obs_s, r_s, _, trunc_s, info_s = single.step(action)
        obs_v, r_v, _, trunc_v, info_v = vector.step(action[None])
        np.testing.assert_array_equal(obs_v[0], obs_s)
        assert r_v[0] == pytest.approx(r_s, abs=1e-7) and trunc_v[0] == trunc_s
        for name, value in info_s["reward_components"].items():
            assert info_v["reward_components"][name][0] == pytest.approx(value, abs=1e-7)


def test_vector_env_autoresets_on_the_step_after_truncation():
    env = EmotionStateVectorEnv(num_envs=3, max_episode_steps=5)
    env.reset(seed=0)
    for _ in range(5):
        obs, reward, terminated, truncated, _ = env.step(np.full((3, 7), 0.5, dtype=np.float32))
    assert truncated.all() and not terminated.any()
    obs, reward, terminated, truncated, _ = env.step(np.full((3, 7), 0.5, dtype=np.float32))
    assert np.all(reward == 0) and not truncated.any()
    np.testing.assert_allclose(obs[:, 21], 1.0)
    np.testing.assert_allclose(obs[:, 0:7], obs[:, 14:21])


def test_same_seed_gives_the_same_episode():
    runs = []
    for _ in range(2):
        env = EmotionStateEnv()
        obs, info = env.reset(seed=42)
        rng = np.random.default_rng(1)
        trace = [obs]
        for _ in range(20):
            trace.append(env.step(rng.uniform(0, 1, 7).astype(np.float32))[0])
        runs.append((info["arc"], np.stack(trace)))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_ansi_render_shows_every_emotion():
    env = EmotionStateEnv(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert all(name in text for name in EMOTIONS) and "target" in text
    assert NEUTRAL == EMOTIONS.index("neutral")


# --------------------------------------------------------------------------- step limit in the spec
def _play_to_the_end(env):
    obs, _ = env.reset(seed=0)
    steps = 0
    while True:
        obs, _, terminated, truncated, info = env.step(obs[7:14])
        steps += 1
        if terminated or truncated:
            return steps, float(obs[21]), info


@pytest.mark.parametrize("limit", [20, 100])
def test_affectgym_make_max_episode_steps_sets_the_envs_own_limit_and_time_feature(limit):
    env = affectgym.make("affectgym/EmotionState-v0", max_episode_steps=limit)
    steps, time_left, info = _play_to_the_end(env)
    assert steps == limit and time_left == 0.0
    assert env.spec.max_episode_steps == env.unwrapped.core.max_episode_steps == limit
    assert info["outcome"]["steps"] == limit


def test_the_env_ends_its_own_episodes_at_its_default_length_without_a_time_limit():
    assert gym.spec("affectgym/EmotionState-v0").max_episode_steps is None
    env = gym.make("affectgym/EmotionState-v0")
    assert env.spec.max_episode_steps == DEFAULT_MAX_EPISODE_STEPS
    assert _play_to_the_end(env)[:2] == (DEFAULT_MAX_EPISODE_STEPS, 0.0)


def test_gym_make_takes_the_envs_own_limit_from_its_config():
    env = gym.make("affectgym/EmotionState-v0", config=EmotionStateConfig(max_episode_steps=100))
    assert env.unwrapped.core.max_episode_steps == env.spec.max_episode_steps == 100
    assert _play_to_the_end(env)[:2] == (100, 0.0)


def test_gym_makes_own_time_limit_is_a_wrapper_the_env_cannot_see():
    # Gymnasium's limitation, documented in the env's Episode End: the wrapper cuts the episode
    # while the env's schedule still runs to its own limit.
    env = gym.make("affectgym/EmotionState-v0", max_episode_steps=12)
    steps, time_left, _ = _play_to_the_end(env)
    assert steps == 12 and env.unwrapped.core.max_episode_steps == DEFAULT_MAX_EPISODE_STEPS
    assert time_left == pytest.approx(1 - 12 / DEFAULT_MAX_EPISODE_STEPS)


def test_an_env_remade_from_its_spec_keeps_the_step_limit_it_was_made_with():
    env = gym.make(affectgym.make("affectgym/EmotionState-v0", max_episode_steps=12).spec)
    assert env.unwrapped.core.max_episode_steps == 12
    assert _play_to_the_end(env)[:2] == (12, 0.0)


def test_native_vector_envs_of_make_vec_take_the_step_limit():
    envs = gym.make_vec("affectgym/EmotionState-v0", num_envs=2, max_episode_steps=9)
    assert envs.unwrapped.core.max_episode_steps == 9


def test_the_numeric_env_splits_its_arcs_like_the_text_env_and_plays_them_by_scenario_id():
    text_eval = affectgym.make("affectgym/EmotionStateText-v0", split="eval").unwrapped.scenario_ids
    env = gym.make("affectgym/EmotionState-v0", split="eval")
    assert env.unwrapped.scenario_ids == list(text_eval)
    assert set(gym.make("affectgym/EmotionState-v0", split="train").unwrapped.scenario_ids).isdisjoint(text_eval)
    _, info = env.reset(seed=0, options={"scenario_id": text_eval[0]})
    assert info["arc"] == text_eval[0]


def test_the_last_step_reports_the_episode_means_of_the_components():
    env = affectgym.make("affectgym/EmotionState-v0", max_episode_steps=5)
    obs, _ = env.reset(seed=0)
    seen = []
    for _ in range(5):
        obs, _, _, truncated, info = env.step(obs[7:14])
        seen.append(info["reward_components"])
    means = info["episode_reward_components"]
    assert truncated and set(means) == set(seen[0])
    assert all(means[name] == pytest.approx(np.mean([s[name] for s in seen])) for name in means)
