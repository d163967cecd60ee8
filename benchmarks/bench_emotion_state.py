"""Benchmark affectgym/EmotionState-v0 against Gymnasium's Pendulum-v1, side by side.

Prints three ratios (higher is better for EmotionState):

1. single env through ``gym.make``: Pendulum-v1 step time / EmotionState-v0 step time
   (target >= 1.0);
2. the native batched vector env (``vectorization_mode="vector_entry_point"``) at 1,024 envs:
   env-steps per second (target >= 1,000,000), and its ratio to the ``sync`` vector env;
3. for reference, the raw (unwrapped) step times;
4. the equations alone (``emotion_state/dynamics.py``: ``next_state``, ``reward_components``,
   ``step_reward``, no env around them), called one by one from Python, for one row and for
   1,024 rows, against the same two targets; the envs make one call a step instead
   (``emotion_state/batch.py``'s ``step_rows``, which calls the same three functions).

The equations are compiled by numba; the first step of a process loads the machine code from
the on-disk cache (it compiles only in a fresh install) and is excluded from the timings.

The machines these run on are shared, so each measurement is the best of several short
rounds, and the two envs alternate within a round so a load spike hits both.

Run: ``python benchmarks/bench_emotion_state.py [--steps N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import affectgym  # noqa: F401  (registers affectgym/EmotionState-v0)
from affectgym.envs.emotion_state import EmotionStateCore
from affectgym.envs.emotion_state.dynamics import next_state, reward_components, step_reward

ENV_ID = "affectgym/EmotionState-v0"


def _time_single(env: gym.Env, actions: list[np.ndarray], steps: int) -> float:
    """Seconds per step over ``steps`` steps (resets included, as in training)."""
    env.reset(seed=0)
    step = env.step
    n_actions = len(actions)
    start = time.perf_counter()
    for i in range(steps):
        _, _, terminated, truncated, _ = step(actions[i % n_actions])
        if terminated or truncated:
            env.reset()
    return (time.perf_counter() - start) / steps


def _time_vector(env: gym.vector.VectorEnv, actions: list[np.ndarray], steps: int) -> float:
    """Seconds per batched step over ``steps`` steps (autoreset included)."""
    env.reset(seed=0)
    step = env.step
    start = time.perf_counter()
    for i in range(steps):
        step(actions[i % len(actions)])
    return (time.perf_counter() - start) / steps


def _time_plain(core: EmotionStateCore, actions: list[np.ndarray], steps: int) -> float:
    """Seconds per step of the plain equations over ``actions[0].shape[0]`` rows (no env)."""
    n = actions[0].shape[0]
    state = np.repeat(core.schedules[:1, 0], n, axis=0).astype(np.float64)
    target = state.copy()
    multipliers, alpha = core.multipliers, core.alpha
    scale, weights = core.config.smoothness_scale, core.reward_weights.as_array()
    start = time.perf_counter()
    for i in range(steps):
        new = next_state(state, actions[i % len(actions)], multipliers, alpha)
        step_reward(reward_components(new, state, target, scale), weights)
        state = new
    return (time.perf_counter() - start) / steps


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the ratios.

    Args:
        argv: Command-line arguments (``--steps``, ``--rounds``, ``--num-envs``).

    Returns:
        0.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="single-env steps per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds; the best is kept")
    parser.add_argument("--num-envs", type=int, default=1024, help="vector env batch size")
    parser.add_argument("--vector-steps", type=int, default=300, help="batched steps per round")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    emotion = gym.make(ENV_ID)
    pendulum = gym.make("Pendulum-v1")
    emotion_actions = [rng.uniform(0, 1, 7).astype(np.float32) for _ in range(64)]
    pendulum_actions = [rng.uniform(-2, 2, 1).astype(np.float32) for _ in range(64)]

    best = {"pendulum": np.inf, "emotion": np.inf, "pendulum_raw": np.inf, "emotion_raw": np.inf}
    for _ in range(args.rounds):
        best["pendulum"] = min(
            best["pendulum"], _time_single(pendulum, pendulum_actions, args.steps)
        )
        best["emotion"] = min(best["emotion"], _time_single(emotion, emotion_actions, args.steps))
        best["pendulum_raw"] = min(
            best["pendulum_raw"], _time_single(pendulum.unwrapped, pendulum_actions, args.steps)
        )
        best["emotion_raw"] = min(
            best["emotion_raw"], _time_single(emotion.unwrapped, emotion_actions, args.steps)
        )

    n = args.num_envs
    native = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point")
    sync = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="sync")
    batch_actions = [rng.uniform(0, 1, (n, 7)).astype(np.float32) for _ in range(8)]
    native_best = sync_best = np.inf
    for _ in range(args.rounds):
        native_best = min(native_best, _time_vector(native, batch_actions, args.vector_steps))
        sync_best = min(
            sync_best, _time_vector(sync, batch_actions, max(3, args.vector_steps // 100))
        )

    core = EmotionStateCore()
    row_actions = [action[None].astype(np.float64) for action in emotion_actions]
    plain_row_best = plain_batch_best = np.inf
    for _ in range(args.rounds):
        plain_row_best = min(plain_row_best, _time_plain(core, row_actions, args.steps // 4))
        plain_batch_best = min(plain_batch_best, _time_plain(core, batch_actions, args.vector_steps))

    print(
        f"single env via gym.make: Pendulum-v1 {best['pendulum'] * 1e6:.2f} us/step, "
        f"EmotionState-v0 {best['emotion'] * 1e6:.2f} us/step, "
        f"ratio (Pendulum time / EmotionState time) {best['pendulum'] / best['emotion']:.2f}"
    )
    print(
        f"single env unwrapped:    Pendulum-v1 {best['pendulum_raw'] * 1e6:.2f} us/step, "
        f"EmotionState-v0 {best['emotion_raw'] * 1e6:.2f} us/step, "
        f"ratio {best['pendulum_raw'] / best['emotion_raw']:.2f}"
    )
    print(
        f"vector env, {n} envs:     native {n / native_best:,.0f} env-steps/s, "
        f"sync {n / sync_best:,.0f} env-steps/s, ratio native/sync {sync_best / native_best:.1f}"
    )
    print(
        f"plain equations, no env: 1 row {plain_row_best * 1e6:.2f} us/step "
        f"(ratio Pendulum-v1 via gym.make / this {best['pendulum'] / plain_row_best:.2f}), "
        f"{n} rows {n / plain_batch_best:,.0f} env-steps/s"
    )
    native.close()
    sync.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
