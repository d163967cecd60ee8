"""Train a classic policy (PPO or SAC, Stable-Baselines3) on a numeric affectgym env.

:func:`train_sb3` trains, saves the model, draws the learning curve (episode reward against
timesteps, from the ``Monitor`` logs) and evaluates the trained policy against a random policy
on the same fixed seeds. ``affectgym train affectgym/EmotionState-v0 --algo ppo --timesteps N
--output-dir DIR --seed S`` reaches it through :func:`train_from_config`, with the same
:class:`~affectgym.train.config.TrainConfig` as GRPO runs.

Stable-Baselines3, torch and matplotlib are imported inside the functions that need them.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from affectgym.train.config import TrainConfig, config_to_yaml
from affectgym.train.run_dir import claim_output_dir, hold_output_dir

EMOTION_STATE_ID = "affectgym/EmotionState-v0"
ALGOS = ("ppo", "sac")
# Evaluation episodes use seeds from here on, away from the training seeds.
EVAL_SEED_OFFSET = 10_000

# Defaults found on EmotionState-v0 (PPO: about 51 per episode after 60k steps, against 39 for
# a random policy and 56 for commanding the target). The task is nearly myopic (the reward
# depends on the next state), so a short horizon (gamma 0.9) learns faster; a smaller initial
# action noise (log_std -1) keeps early actions near the policy mean.
PPO_DEFAULTS: dict[str, Any] = {
    "n_steps": 256,
    "batch_size": 256,
    "n_epochs": 5,
    "learning_rate": 1e-3,
    "gamma": 0.9,
    "gae_lambda": 0.9,
    "policy_kwargs": {"log_std_init": -1.0, "net_arch": [64, 64]},
}
SAC_DEFAULTS: dict[str, Any] = {
    "learning_starts": 1_000,
    "batch_size": 256,
    "gamma": 0.9,
    "policy_kwargs": {"net_arch": [64, 64]},
}


@dataclass(frozen=True)
class SB3Result:
    """What :func:`train_sb3` measured and wrote.

    Attributes:
        env_id: The environment.
        algo: ``"ppo"`` or ``"sac"``.
        timesteps: Training timesteps.
        seed: Training seed.
        mean_reward: Mean evaluation episode return of the trained (deterministic) policy.
        std_reward: Its standard deviation over the evaluation episodes.
        random_mean_reward: Mean return of a uniform random policy on the same seeds.
        random_std_reward: Its standard deviation.
        eval_episodes: Number of evaluation episodes.
        train_seconds: Wall time of ``learn``.
        model_path: Saved model (``.zip``).
        curve_path: Learning-curve PNG.
        summary_path: JSON with these fields.
    """

    env_id: str
    algo: str
    timesteps: int
    seed: int
    mean_reward: float
    std_reward: float
    random_mean_reward: float
    random_std_reward: float
    eval_episodes: int
    train_seconds: float
    model_path: str
    curve_path: str
    summary_path: str

    @property
    def improvement(self) -> float:
        """Mean return of the trained policy minus the random policy's."""
        return self.mean_reward - self.random_mean_reward

    def as_dict(self) -> dict[str, Any]:
        """The fields and ``improvement``: what ``summary.json`` holds and ``affectgym train`` prints."""
        return {**asdict(self), "improvement": self.improvement}


def ensure_registered(env_id: str) -> None:
    """Make ``env_id`` available to ``gym.make``: importing :mod:`affectgym` registers the built-in envs.

    Args:
        env_id: The environment id.
    """
    import gymnasium as gym

    if env_id in gym.registry:
        return
    import affectgym  # noqa: F401  (registers the built-in envs)


def evaluate_returns(
    env: Any, policy: Callable[[np.ndarray, np.random.Generator], np.ndarray], seeds: Sequence[int]
) -> np.ndarray:
    """Return one episode's return per seed.

    Args:
        env: A Gymnasium env.
        policy: ``policy(observation, rng) -> action``; ``rng`` is seeded per episode.
        seeds: Reset seeds, one episode each.

    Returns:
        ``(len(seeds),)`` episode returns.
    """
    returns = []
    for seed in seeds:
        obs, _ = env.reset(seed=int(seed))
        rng = np.random.default_rng(int(seed))
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs, rng))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return np.asarray(returns)


def read_monitor_logs(monitor_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read SB3 ``Monitor`` CSV files into episode returns against cumulative timesteps.

    Args:
        monitor_dir: Folder with ``*.monitor.csv`` files (one per training env).

    Returns:
        ``(timesteps, returns)``: episodes of all envs, ordered by finishing time.
    """
    episodes: list[tuple[float, float, int]] = []
    for path in sorted(Path(monitor_dir).glob("*.monitor.csv")):
        with open(path, encoding="utf-8") as fh:
            lines = [line for line in fh if not line.startswith("#")]
        for row in csv.DictReader(lines):
            episodes.append((float(row["t"]), float(row["r"]), int(row["l"])))
    episodes.sort()
    lengths = np.array([length for _, _, length in episodes], dtype=np.int64)
    returns = np.array([ret for _, ret, _ in episodes], dtype=np.float64)
    return np.cumsum(lengths), returns


def plot_learning_curve(
    timesteps: np.ndarray,
    returns: np.ndarray,
    path: str | Path,
    *,
    title: str,
    random_mean_reward: float | None = None,
    trained_mean_reward: float | None = None,
    window: int = 20,
) -> Path:
    """Draw episode return against timesteps (PNG), with a rolling mean and baselines.

    Args:
        timesteps: Cumulative timesteps at each episode's end.
        returns: Episode returns.
        path: Output PNG.
        title: Figure title.
        random_mean_reward: Draw the random policy's mean return as a dashed line.
        trained_mean_reward: Draw the final evaluation return as a dotted line.
        window: Episodes in the rolling mean.

    Returns:
        The PNG path.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    ax.plot(
        timesteps, returns, ".", color="tab:blue", alpha=0.25, markersize=3, label="episode return"
    )
    if len(returns) >= window:
        rolling = np.convolve(returns, np.ones(window) / window, mode="valid")
        ax.plot(
            timesteps[window - 1 :],
            rolling,
            color="tab:blue",
            label=f"rolling mean ({window} episodes)",
        )
    for mean_reward, color, ls, policy in (
        (random_mean_reward, "tab:red", "--", "random policy"),
        (trained_mean_reward, "tab:green", ":", "trained, evaluation"),
    ):
        if mean_reward is not None:
            ax.axhline(mean_reward, color=color, ls=ls, label=f"{policy} ({mean_reward:.1f})")
    ax.set_xlabel("timesteps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def train_sb3(
    env_id: str = EMOTION_STATE_ID,
    algo: str = "ppo",
    timesteps: int = 100_000,
    seed: int = 0,
    output_dir: str | Path = "runs/sb3",
    *,
    n_envs: int = 8,
    eval_episodes: int = 20,
    env_kwargs: Mapping[str, Any] | None = None,
    algo_kwargs: Mapping[str, Any] | None = None,
    device: str = "cpu",
    torch_threads: int | None = 1,
    verbose: int = 0,
) -> SB3Result:
    """Train PPO or SAC (MLP policy) and compare it with a random policy.

    Writes to ``output_dir``: ``model.zip``, ``monitor/`` (per-env episode logs),
    ``learning_curve.png`` and ``summary.json``.

    Args:
        env_id: A registered env with Box observations and actions.
        algo: ``"ppo"`` or ``"sac"``.
        timesteps: Training timesteps (all envs together).
        seed: Seed of the envs, the policy and the training.
        output_dir: Where the files go.
        n_envs: Parallel training envs (``DummyVecEnv``).
        eval_episodes: Evaluation episodes for both policies (seeds from 10,000 + seed).
        env_kwargs: Keyword arguments of ``affectgym.make``.
        algo_kwargs: Overrides of :data:`PPO_DEFAULTS` / :data:`SAC_DEFAULTS`.
        device: Torch device (the MLP is small; CPU is fastest).
        torch_threads: Torch CPU threads during training (restored afterwards); one is
            fastest for a 64 x 64 MLP and does not fight other processes for cores.
            None leaves torch's setting.
        verbose: SB3 verbosity.

    Returns:
        The :class:`SB3Result` (its ``mean_reward`` against ``random_mean_reward``).
    """
    algo = algo.lower()
    if algo not in ALGOS:
        raise ValueError(f"algo {algo!r} is not supported; accepted: {list(ALGOS)}")
    if timesteps < 1 or n_envs < 1 or eval_episodes < 1:
        raise ValueError(
            f"timesteps, n_envs and eval_episodes must be >= 1, got {timesteps}, {n_envs}, {eval_episodes}"
        )
    import torch
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    import affectgym  # registers the built-in and plug-in envs

    env_kwargs = dict(env_kwargs or {})
    out = Path(output_dir)
    monitor_dir = out / "monitor"
    monitor_dir.mkdir(parents=True, exist_ok=True)
    for old in monitor_dir.glob("*.monitor.csv"):
        old.unlink()

    def make_env(index: int) -> Callable[[], Any]:
        def build() -> Any:
            env = Monitor(affectgym.make(env_id, **env_kwargs), filename=str(monitor_dir / str(index)))
            env.reset(seed=seed + index)
            env.action_space.seed(seed + index)
            return env

        return build

    train_env = DummyVecEnv([make_env(i) for i in range(n_envs)])
    train_env.seed(seed)
    settings = {**(PPO_DEFAULTS if algo == "ppo" else SAC_DEFAULTS), **dict(algo_kwargs or {})}
    model_cls = PPO if algo == "ppo" else SAC
    previous_threads = torch.get_num_threads()
    if torch_threads is not None:
        torch.set_num_threads(int(torch_threads))
    try:
        model = model_cls("MlpPolicy", train_env, seed=seed, device=device, verbose=verbose, **settings)
        start = time.perf_counter()
        model.learn(total_timesteps=int(timesteps))
        train_seconds = time.perf_counter() - start
    finally:
        torch.set_num_threads(previous_threads)
    model_path = out / "model.zip"
    model.save(model_path)
    train_env.close()

    eval_env = affectgym.make(env_id, **env_kwargs)
    seeds = [EVAL_SEED_OFFSET + seed + i for i in range(eval_episodes)]
    low, high = eval_env.action_space.low, eval_env.action_space.high

    def trained(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return model.predict(obs, deterministic=True)[0]

    def random_policy(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(low, high).astype(eval_env.action_space.dtype)

    trained_returns = evaluate_returns(eval_env, trained, seeds)
    random_returns = evaluate_returns(eval_env, random_policy, seeds)
    eval_env.close()

    timesteps_axis, returns = read_monitor_logs(monitor_dir)
    curve_path = plot_learning_curve(
        timesteps_axis,
        returns,
        out / "learning_curve.png",
        title=f"{algo.upper()} on {env_id} (seed {seed})",
        random_mean_reward=float(random_returns.mean()),
        trained_mean_reward=float(trained_returns.mean()),
    )
    summary_path = out / "summary.json"
    result = SB3Result(
        env_id=env_id,
        algo=algo,
        timesteps=int(timesteps),
        seed=int(seed),
        mean_reward=float(trained_returns.mean()),
        std_reward=float(trained_returns.std()),
        random_mean_reward=float(random_returns.mean()),
        random_std_reward=float(random_returns.std()),
        eval_episodes=int(eval_episodes),
        train_seconds=float(train_seconds),
        model_path=str(model_path),
        curve_path=str(curve_path),
        summary_path=str(summary_path),
    )
    summary_path.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    return result


def train_from_config(config: TrainConfig, *, overwrite: bool = False) -> SB3Result:
    """Run :func:`train_sb3` with the options of ``config`` (``algo`` ppo or sac), as ``affectgym train --algo ppo`` does.

    Writes ``config.yaml`` (:func:`~affectgym.train.config.config_to_yaml`) to
    ``config.output_dir`` first, beside what :func:`train_sb3` writes.

    Args:
        config: A :class:`~affectgym.train.config.TrainConfig` with ``algo`` ``"ppo"`` or ``"sac"``.
        overwrite: Replace an earlier run in ``config.output_dir`` (otherwise it is refused).

    Returns:
        The :class:`SB3Result`.
    """
    if config.algo not in ALGOS:
        raise ValueError(f"train_from_config trains --algo {' or '.join(ALGOS)}, got algo={config.algo!r}; GRPO runs through affectgym.train.grpo.train")
    if importlib.util.find_spec("stable_baselines3") is None:
        raise ImportError(f"--algo {config.algo} needs Stable-Baselines3, which is not installed: pip install 'affectgym[train]'")
    with hold_output_dir(config.output_dir):
        out = claim_output_dir(config.output_dir, overwrite=overwrite)
        (out / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")
        return train_sb3(
            env_id=config.env_id,
            algo=config.algo,
            timesteps=config.timesteps,
            seed=config.seed,
            output_dir=out,
            n_envs=config.n_envs,
            eval_episodes=config.eval_episodes,
            env_kwargs=config.env_kwargs,
        )


__all__ = [
    "ALGOS",
    "EMOTION_STATE_ID",
    "SB3Result",
    "ensure_registered",
    "evaluate_returns",
    "plot_learning_curve",
    "read_monitor_logs",
    "train_from_config",
    "train_sb3",
]
