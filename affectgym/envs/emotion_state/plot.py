"""Plot an EmotionState-v0 episode: the seven intensities against the target arc.

:func:`rollout` plays one episode and returns the arrays; :func:`plot_episode` draws them
(matplotlib, imported inside the function, Agg backend); :func:`render_frame` draws the
episode so far into an RGB array, what ``render_mode="rgb_array"`` returns.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from affectgym.envs.emotion_state.batch import STATE_SLICE, TARGET_SLICE
from affectgym.envs.emotion_state.dynamics import EMOTIONS

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


def render_frame(
    states: np.ndarray, targets: np.ndarray, *, max_steps: int, title: str = "", width_px: int = 640, height_px: int = 320
) -> np.ndarray:
    """Draw the episode so far as one RGB image: the state bars now, and the intensities over time.

    Left, one bar per emotion with the current target as a black tick; right, each emotion's
    intensity over the steps so far (solid) against its target (dashed), the x axis spanning
    the whole episode so consecutive frames line up in a video.

    Args:
        states: ``(steps so far + 1, 7)`` intensities, the last row the current state.
        targets: The targets shown at the same steps.
        max_steps: Steps of the whole episode (the x range).
        title: Figure title (e.g. the arc and step).
        width_px: Image width in pixels.
        height_px: Image height in pixels.

    Returns:
        ``(height_px, width_px, 3)`` ``uint8`` RGB.

    >>> frame = render_frame(np.full((3, 7), 0.5), np.full((3, 7), 0.4), max_steps=10)
    >>> frame.shape, frame.dtype
    ((320, 640, 3), dtype('uint8'))
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    states = np.asarray(states, dtype=float).reshape(-1, len(EMOTIONS))
    targets = np.asarray(targets, dtype=float).reshape(-1, len(EMOTIONS))
    dpi = 100
    # A Figure with its own Agg canvas: no pyplot, so no global backend or figure registry is touched.
    figure = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    canvas = FigureCanvasAgg(figure)
    bars, lines = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2]})
    rows = np.arange(len(EMOTIONS))
    bars.barh(rows, states[-1], color=EMOTION_COLORS)
    bars.scatter(targets[-1], rows, marker="|", s=200, color="black")
    bars.set_yticks(rows, EMOTIONS, fontsize=8)
    bars.invert_yaxis()
    bars.set_xlim(0, 1)
    bars.set_xlabel("intensity now (tick: target)", fontsize=8)
    steps = np.arange(len(states))
    for j, color in enumerate(EMOTION_COLORS):
        lines.plot(steps, states[:, j], color=color, lw=1.5)
        lines.step(steps, targets[:, j], where="post", color=color, ls="--", lw=1, alpha=0.7)
    lines.set_xlim(0, max(max_steps, 1))
    lines.set_ylim(-0.02, 1.02)
    lines.set_xlabel("step (solid: state, dashed: target; colours as in the bars)", fontsize=8)
    lines.tick_params(labelsize=7)
    bars.tick_params(labelsize=7)
    if title:
        figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


__all__ = ["EMOTION_COLORS", "plot_episode", "render_frame", "rollout"]
