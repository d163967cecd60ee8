"""Reward and loss curves of a training run, from TRL's ``log_history`` (matplotlib, Agg backend).

One PNG per logged reward: the total (``reward``) and each component
(``rewards/<component>/mean``, with its ``/std`` band when logged), each titled with the run
(``title``, e.g. the env id and model) so it reads on its own; and the held-out comparison
of the base model and the trained adapter.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_COMPONENT = re.compile(r"^rewards/(.+)/mean$")
#: Characters of a title line that fit a 5-inch-wide figure at the titles' font size.
TITLE_LINE_CHARS = 52


def reward_series(history: Sequence[Mapping[str, Any]]) -> dict[str, tuple[list[int], list[float], list[float]]]:
    """``{name: (steps, means, stds)}`` of the total reward and each component.

    >>> history = [{"step": 1, "reward": 0.2, "rewards/correct/mean": 0.5, "rewards/correct/std": 0.1},
    ...            {"step": 2, "reward": 0.4, "rewards/correct/mean": 0.7}]
    >>> series = reward_series(history)
    >>> series["total"]
    ([1, 2], [0.2, 0.4], [0.0, 0.0])
    >>> series["correct"][2]
    [0.1, 0.0]
    """
    series: dict[str, tuple[list[int], list[float], list[float]]] = {}
    for row in history:
        step = int(row.get("step", len(series.get("total", ([],))[0]) + 1))
        for key, value in row.items():
            if key == "reward":
                name, std = "total", row.get("reward_std", 0.0)
            else:
                match = _COMPONENT.match(key)
                if not match:
                    continue
                name, std = match.group(1), row.get(f"rewards/{match.group(1)}/std", 0.0)
            if not isinstance(value, (int, float)) or value != value:  # NaN when a component never applied
                continue
            steps, means, stds = series.setdefault(name, ([], [], []))
            steps.append(step)
            means.append(float(value))
            stds.append(float(std) if isinstance(std, (int, float)) and std == std else 0.0)
    return series


#: Components that count events (not values in [0, 1]): written beside the bars, not drawn.
COUNT_COMPONENTS = ("invalid_actions",)


def plot_reward_curves(history: Sequence[Mapping[str, Any]], out_dir: str | Path, title: str | None = None) -> list[Path]:
    """Write ``reward_<name>.png`` for the total and every component; return the paths.

    ``reward_*.png`` files of an earlier run in ``out_dir`` that this history does not
    draw are removed, so the folder shows one run.

    Args:
        history: ``trainer.state.log_history`` (or the saved ``log_history.json``).
        out_dir: Folder for the figures (created).
        title: What the run is (e.g. ``"GRPO flat on affectgym/Sarcasm-v0, smollm2-135m"``),
            the first line(s) of every figure's title (wrapped when long).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (steps, means, stds) in reward_series(history).items():
        figure, axis = plt.subplots(figsize=(5, 3.2), dpi=120)
        axis.plot(steps, means, marker="o", markersize=3, linewidth=1.5)
        axis.fill_between(steps, [m - s for m, s in zip(means, stds, strict=True)],
                          [m + s for m, s in zip(means, stds, strict=True)], alpha=0.2)
        step_axis(axis)
        axis.set_ylabel("mean reward" if name == "total" else "mean component value")
        what = "total reward (mean ± sd)" if name == "total" else f"rewards/{name} (mean ± sd)"
        axis.set_title(_title(title, what), fontsize="medium")
        axis.grid(alpha=0.3)
        figure.tight_layout()
        path = out_dir / f"reward_{_safe(name)}.png"
        figure.savefig(path)
        plt.close(figure)
        paths.append(path)
    for stale in set(out_dir.glob("reward_*.png")) - set(paths):
        stale.unlink()
    return paths


def step_axis(axis: Any) -> None:
    """Label a matplotlib x axis ``step`` and tick it at whole steps only (a short run gets no 2.5)."""
    from matplotlib.ticker import MaxNLocator

    axis.set_xlabel("step")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))


def plot_loss_curve(history: Sequence[Mapping[str, Any]], path: str | Path, title: str | None = None,
                    loss_label: str = "loss (assistant tokens, mean per token)") -> Path | None:
    """Write the training loss over the steps to ``path`` (``None`` when no loss was logged).

    Args:
        history: ``trainer.state.log_history``.
        path: The PNG to write.
        title: What the run is, the first line(s) of the title (wrapped when long).
        loss_label: What the loss is, the y axis's label (the default: SFT's token loss).
    """
    points = [(int(row["step"]), float(row["loss"])) for row in history
              if isinstance(row.get("loss"), int | float) and row["loss"] == row["loss"] and "step" in row]
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axis = plt.subplots(figsize=(5, 3.2), dpi=120)
    axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, linewidth=1.5)
    step_axis(axis)
    axis.set_ylabel(loss_label)
    axis.set_title(_title(title, "training loss"), fontsize="medium")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def plot_eval_comparison(
    base: Mapping[str, Any], trained: Mapping[str, Any], path: str | Path, title: str | None = None
) -> Path:
    """Bar chart of held-out mean reward (with its 95% interval) and components, base vs trained.

    Every bar carries its value; counts (:data:`COUNT_COMPONENTS`) are written in the title.

    Args:
        base: ``{"reward_mean", "reward_ci95", "reward_components"}`` of the base model.
        trained: The same for the trained adapter.
        path: PNG to write.
        title: What was evaluated (e.g. the env id and model), the title's first line(s).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    components = set(base.get("reward_components") or {}) | set(trained.get("reward_components") or {})
    names = ["total", *sorted(components - set(COUNT_COMPONENTS))]

    def values(side: Mapping[str, Any]) -> list[float]:
        components = side.get("reward_components") or {}
        return [float(side.get("reward_mean") or 0.0)] + [float(components.get(n, 0.0) or 0.0) for n in names[1:]]

    width = 0.38
    figure, axis = plt.subplots(figsize=(max(5.5, 1.1 * len(names)), 4.2), dpi=120)
    for offset, side, label in ((-width / 2, base, "base"), (width / 2, trained, "trained")):
        heights, ci95 = values(side), float(side.get("reward_ci95") or 0.0)
        bars = axis.bar([i + offset for i in range(len(names))], heights, width, label=label)
        axis.errorbar([offset], heights[:1], yerr=[ci95], fmt="none", ecolor="black", capsize=3)  # the total's interval
        axis.bar_label(bars, [""] + [f"{v:.2f}" for v in heights[1:]], fontsize="x-small", padding=2)
        axis.annotate(f"{heights[0]:.2f}", (offset, heights[0] + ci95), xytext=(0, 3), textcoords="offset points",
                      ha="center", fontsize="x-small")  # above the interval, not under it
    axis.set_xticks(range(len(names)), names, rotation=30, ha="right")
    axis.set_ylabel("held-out mean")
    counts = [
        f"{name.replace('_', ' ')} per episode: base {_count(base, name)}, trained {_count(trained, name)}"
        for name in COUNT_COMPONENTS if name in components
    ]
    axis.set_title(_title(title, "held-out evaluation: total reward (± 95% CI) and mean components", *counts),
                   fontsize="medium")
    axis.axhline(0, color="black", linewidth=0.6)
    low, high = axis.get_ylim()
    axis.set_ylim(low, high + 0.12 * (high - low))  # room for the value labels
    figure.legend(loc="lower center", ncols=2, fontsize="small")
    figure.tight_layout(rect=(0, 0.07, 1, 1))  # the legend sits below the axes, clear of the bars
    figure.savefig(path)
    plt.close(figure)
    return path


def _title(run: str | None, *lines: str) -> str:
    """A figure's title: the run (wrapped to :data:`TITLE_LINE_CHARS`, so a long one is not cut at the edges), then ``lines``.

    >>> print(_title("SFT on affectgym/EmotionStyle-v0, smollm2-135m, 70 demonstrations", "training loss"))
    SFT on affectgym/EmotionStyle-v0, smollm2-135m, 70
    demonstrations
    training loss
    """
    return "\n".join([*textwrap.wrap(run or "", TITLE_LINE_CHARS), *lines])


def _count(side: Mapping[str, Any], name: str) -> str:
    value = (side.get("reward_components") or {}).get(name)
    return "n/a" if value is None else f"{float(value):.2f}"


def _safe(name: str) -> str:
    """A file-name-safe version of a component name.

    >>> _safe("cap:core rule")
    'cap_core_rule'
    """
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


__all__ = ["COUNT_COMPONENTS", "plot_eval_comparison", "plot_loss_curve", "plot_reward_curves", "reward_series", "step_axis"]
