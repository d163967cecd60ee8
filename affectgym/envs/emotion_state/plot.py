"""Plot an EmotionState-v0 episode: the seven intensities against the target arc.

:func:`rollout` plays one episode and returns the arrays; :func:`plot_episode` draws them
(matplotlib, imported inside the function, Agg backend).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from affectgym.envs.emotion_state.dynamics import EMOTIONS
from affectgym.envs.emotion_state.packed import STATE_SLICE, TARGET_SLICE

# One colour per emotion, in EMOTIONS order.
EMOTION_COLORS = ("#d62728", "#8c564b", "#9467bd", "#ffbf00", "#7f7f7f", "#1f77b4", "#2ca02c")


def rollout(
    env: Any,
    policy: Callable[[np.ndarray], np.ndarray] | Any,
    seed: int,
    options: dict[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """Play one episode of an EmotionState env and collect what it showed.

    Args:
        env: An ``EmotionStateEnv`` (wrapped or not).
        policy: ``policy(observation) -> action``, or an object with SB3's
            ``predict(observation, deterministic=True)``.
        seed: Reset seed.
        options: Reset options, e.g. ``{"arc": "good_news"}``.

    Returns:
        ``states`` and ``targets`` (``(steps + 1, 7)``: row ``k`` is what the observation
        showed before step ``k``; the last target row is the one after the final step),
        ``rewards`` (``(steps,)``) and ``components`` (name -> ``(steps,)``).

    >>> from affectgym.envs.emotion_state import EmotionStateEnv
    >>> episode = rollout(EmotionStateEnv(max_episode_steps=5), lambda obs: obs[7:14], seed=0)
    >>> episode["states"].shape, episode["rewards"].shape
    ((6, 7), (5,))
    """
    act = (
        (lambda obs: policy.predict(obs, deterministic=True)[0])
        if hasattr(policy, "predict")
        else policy
    )
    obs, _ = env.reset(seed=seed, options=options)
    states, targets, rewards = [obs[STATE_SLICE]], [obs[TARGET_SLICE]], []
    components: dict[str, list[float]] = {}
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(act(obs))
        states.append(obs[STATE_SLICE])
        targets.append(obs[TARGET_SLICE])
        rewards.append(float(reward))
        for name, value in info.get("reward_components", {}).items():
            components.setdefault(name, []).append(float(value))
        done = terminated or truncated
    return {
        "states": np.stack(states).astype(np.float64),
        "targets": np.stack(targets).astype(np.float64),
        "rewards": np.asarray(rewards),
        "components": {name: np.asarray(values) for name, values in components.items()},
    }


def plot_episode(
    states: np.ndarray, targets: np.ndarray, path: str | Path, *, title: str | None = None
) -> Path:
    """Draw each emotion's intensity over an episode against its target (PNG).

    One panel per emotion: the state as a solid line, the target as a dashed step line.

    Args:
        states: ``(steps + 1, 7)`` intensities.
        targets: ``(steps + 1, 7)`` targets shown at the same step indices.
        path: Output PNG.
        title: Figure title.

    Returns:
        The PNG path.
    """
    states = np.asarray(states, dtype=float)
    targets = np.asarray(targets, dtype=float)
    if states.ndim != 2 or states.shape[1] != len(EMOTIONS) or targets.shape != states.shape:
        raise ValueError(
            f"states and targets must both have shape (steps + 1, 7), got {states.shape} and {targets.shape}"
        )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    steps = np.arange(len(states))
    fig, axes = plt.subplots(len(EMOTIONS), 1, figsize=(7, 8), dpi=110, sharex=True)
    for j, (ax, name, color) in enumerate(zip(axes, EMOTIONS, EMOTION_COLORS, strict=True)):
        ax.step(steps, targets[:, j], where="post", color=color, ls="--", lw=1.2, alpha=0.8)
        ax.plot(steps, states[:, j], color=color, lw=1.8)
        ax.set_ylim(-0.05, 1.05)
        ax.set_yticks([0, 0.5, 1])
        ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].plot([], [], color="black", lw=1.8, label="state")
    axes[0].plot([], [], color="black", ls="--", lw=1.2, label="target")
    axes[0].legend(loc="upper right", fontsize=8, ncol=2)
    axes[-1].set_xlabel("step")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


__all__ = ["EMOTION_COLORS", "plot_episode", "rollout"]
