"""Figures and a Markdown report from one or more eval run folders.

``write_report([run_dir, ...], out)`` (or ``affectgym report DIR [DIR2 ...]``) reads each
run's ``summary.json``, ``metadata.json`` and ``results.jsonl`` and writes PNG figures (a
confusion matrix, a reliability diagram, reward-component bars, per-label scores) and
``report.md`` embedding them. With several runs (say a base model and its trained adapter)
it adds a side-by-side table and comparison figures. Every figure is titled with its run
(folder label; env id, the dataset its kwargs name and the split; agent, with the adapter it
was evaluated with) so it reads on its own, and base and trained runs of one model read apart.
Runs whose metadata records different scoring (env id, reward weights, scorers, env kwargs)
get no side-by-side reward chart: report.md and the log say why. A run of a trained adapter
whose training folder holds a held-out learning curve (``heldout.jsonl``) gets that curve.
The PNGs an earlier report wrote into the same ``out`` and this one does not are removed, so
the folder holds one report.

Env-specific figures plug in with :func:`register_report_plot`: a function of
``(run, out_dir)`` returning ``[(title, png_path), ...]``, called for every run whose env id
starts with the registered prefix.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from affectgym.eval.metrics import mean_ci95
from affectgym.eval.results import (
    METADATA_FILE,
    RESULTS_FILE,
    SUMMARY_FILE,
    read_json,
    read_results,
)
from affectgym.eval.summary import format_mean_ci95, format_number, summarize

logger = logging.getLogger(__name__)

#: Width of one character of a "small" legend label, and of an entry's swatch and gaps, in inches.
LEGEND_INCHES_PER_CHAR, LEGEND_SWATCH_INCHES = 0.075, 0.6

#: Env kwargs that choose the data an env plays (named in titles; not a difference in scoring).
DATASET_KWARGS = ("dataset", "data_dir", "data_file")
#: The held-out learning curve a flat-mode GRPO run writes beside its ``adapter/``.
HELDOUT_FILE = "heldout.jsonl"


@dataclass
class Run:
    """One eval run folder, loaded.

    Attributes:
        path: The folder.
        label: Short name used in tables and file names.
        metadata: ``metadata.json`` (empty if missing).
        summary: ``summary.json`` (recomputed from the results if missing).
        records: The lines of ``results.jsonl``.
    """

    path: Path
    label: str
    metadata: dict[str, Any]
    summary: dict[str, Any]
    records: list[dict[str, Any]]

    @property
    def env_id(self) -> str:
        """The env id of the run (``""`` when unknown)."""
        return str(self.metadata.get("env_id", ""))


ReportPlot = Callable[[Run, Path], list[tuple[str, Path]]]
_PLOTS: list[tuple[str, ReportPlot]] = []


def register_report_plot(env_prefix: str, fn: ReportPlot) -> None:
    """Add an env-specific figure to reports of runs whose env id starts with ``env_prefix``.

    Args:
        env_prefix: E.g. ``"affectgym/EmotionState"``.
        fn: ``fn(run, out_dir) -> [(title, png_path), ...]``; paths inside ``out_dir``.
    """
    _PLOTS.append((env_prefix, fn))


def load_run(path: str | Path, label: str | None = None) -> Run:
    """Load a run folder (results files of the older flat format are converted as they are read).

    Without ``summary.json`` the summary is recomputed from the results, with the outcome
    summaries the metadata records (for runs older than that record: those the env, if
    registered, declares now).

    Raises:
        FileNotFoundError: The folder has no ``results.jsonl``.
    """
    path = Path(path)
    results = path / RESULTS_FILE
    if not results.is_file():
        raise FileNotFoundError(f"{path} is not an eval run folder: it has no {RESULTS_FILE} (write one with `affectgym eval`)")
    records, _ = read_results(results)
    metadata = read_json(path / METADATA_FILE)
    summary = read_json(path / SUMMARY_FILE)
    if not summary:
        outcome_summaries = metadata.get("outcome_summaries")
        if outcome_summaries is None:
            outcome_summaries = _declared_outcome_summaries(str(metadata.get("env_id", "")))
        summary = summarize(records, int(metadata.get("rollouts", 1)), outcome_summaries)
    return Run(path=path, label=label or path.name, metadata=metadata, summary=summary, records=records)


def write_report(run_dirs: Sequence[str | Path], out: str | Path) -> Path:
    """Write figures and ``report.md`` for the runs into ``out``.

    Args:
        run_dirs: One or more run folders.
        out: Output folder (created).

    Returns:
        The path of ``report.md``.
    """
    if not run_dirs:
        raise ValueError("write_report needs at least one run folder")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [load_run(path) for path in run_dirs]
    labels = _unique_labels([run.path for run in runs])
    for run, label in zip(runs, labels, strict=True):
        run.label = label
    previous = _previous_figures(out)
    lines = ["# Evaluation report", ""]
    if len(runs) > 1:
        lines += ["## Side by side", ""]
        differences = scoring_differences(runs)
        if differences:
            warning = ("the runs were scored differently, so their rewards do not compare; the side-by-side reward "
                       "chart is left out (each run's own chart is in its section): " + "; ".join(differences))
            logger.warning("report into %s: %s", out, warning)
            lines += [f"> **Warning:** {warning}", ""]
        lines += [*comparison_table(runs), ""]
        for title, figure in _comparison_figures(runs, out, rewards_compare=not differences):
            lines += [f"![{title}]({figure.name})", ""]
    for run in runs:
        lines += [f"## {run.label}", "", *_run_header(run), "", *comparison_table([run]), ""]
        for title, figure in _run_figures(run, out):
            lines += [f"### {title}", "", f"![{title}]({figure.relative_to(out).as_posix()})", ""]
    report = out / "report.md"
    report.write_text("\n".join(lines))
    for stale in previous - _previous_figures(out):
        stale.unlink(missing_ok=True)
    return report


def _previous_figures(out: Path) -> set[Path]:
    """The PNGs that ``out/report.md`` embeds (those a report wrote there)."""
    report = out / "report.md"
    if not report.is_file():
        return set()
    names = re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", report.read_text(encoding="utf-8"))
    return {(out / name) for name in names if ".." not in Path(name).parts}


def comparison_table(runs: Sequence[Run]) -> list[str]:
    """A Markdown table: one row per metric, one column per run.

    With several runs, an agent row names each run's agent and adapter; subset rows (``accuracy, pivot=true``) are kept
    for the flags that split some run's episodes both ways, not for a flag every episode
    shares (a corpus without pivot lines, or every clip with audio).
    """
    rows: list[tuple[str, list[str]]] = []

    def add(name: str, values: list[Any]) -> None:
        if any(v is not None for v in values):
            rows.append((name, [format_number(v) for v in values]))

    summaries = [run.summary for run in runs]
    if len(runs) > 1:  # a run's own section names its agent above the table
        rows.append(("agent", [agent_label(run.metadata).replace("|", "\\|") for run in runs]))
    add("episodes", [s.get("episodes") for s in summaries])
    rewards = [s.get("reward") or {} for s in summaries]
    rows.append(("mean reward ± 95% CI", [format_mean_ci95(r) for r in rewards]))
    for name in _union(s.get("reward_components") or {} for s in summaries):
        add(f"reward: {name}", [(s.get("reward_components") or {}).get(name) for s in summaries])
    classifications = [s.get("classification") or {} for s in summaries]
    for key in ("accuracy", "unweighted_accuracy", "macro_f1", "micro_f1", "weighted_precision", "weighted_recall",
                "weighted_f1", "ece", "brier", "unanswered_rate"):
        add(key, [c.get(key) for c in classifications])
    for flag in _splitting_flags(classifications):
        for side in ("true", "false"):
            add(f"accuracy, {flag}={side}", [((c.get("subsets") or {}).get(flag) or {}).get(side, {}).get("accuracy") for c in classifications])
    for name in _union(s.get("pass_at_k") or {} for s in summaries):
        add(name, [(s.get("pass_at_k") or {}).get(name) for s in summaries])
    add("tool-use rate", [(s.get("tool_use") or {}).get("tool_use_rate") for s in summaries])
    add("tool calls / episode", [(s.get("tool_use") or {}).get("mean_tool_calls") for s in summaries])
    add("errors", [(s.get("errors") or {}).get("count") for s in summaries])
    header = "| metric | " + " | ".join(run.label for run in runs) + " |"
    lines = [header, "|---|" + "---:|" * len(runs)]
    lines += [f"| {name} | " + " | ".join(values) + " |" for name, values in rows]
    return lines


# --------------------------------------------------------------------------- figures
#: Components that count events (not values in [0, 1]); reported beside the bars, not as one.
COUNT_COMPONENTS = ("invalid_actions",)


def agent_label(metadata: Mapping[str, Any]) -> str:
    """The agent of a run's metadata: its spec, and the adapter it played with when it had one.

    >>> agent_label({"agent_spec": "smollm2-135m", "agent_kwargs": {"adapter": "runs/x/adapter"}})
    'smollm2-135m + adapter runs/x/adapter'
    >>> agent_label({"agent_spec": "majority", "agent": {"adapter": None}})
    'majority'
    """
    spec = str(metadata.get("agent_spec") or "?")
    adapter = _adapter(metadata)
    return f"{spec} + adapter {adapter}" if adapter else spec


def dataset_title(metadata: Mapping[str, Any]) -> str:
    """The data a run played: the env id, the dataset its kwargs name (:data:`DATASET_KWARGS`), the split.

    >>> dataset_title({"env_id": "affectgym/SpeechEmotion-v0", "env_kwargs": {"dataset": "folder", "data_dir": "clips"},
    ...                "split": "eval"})
    'SpeechEmotion-v0 (dataset folder, data_dir clips), split eval'
    """
    env = str(metadata.get("env_id") or "unknown env").removeprefix("affectgym/")
    kwargs = metadata.get("env_kwargs") or {}
    data = ", ".join(f"{key} {kwargs[key]}" for key in DATASET_KWARGS if kwargs.get(key) is not None)
    return f"{env}{f' ({data})' if data else ''}, split {metadata.get('split', '?')}"


def run_title(run: Run) -> str:
    """What a run's figures are titled with: its label and data (:func:`dataset_title`), then its agent."""
    return f"{run.label}: {dataset_title(run.metadata)}\nagent {agent_label(run.metadata)}"


def scoring_differences(runs: Sequence[Run]) -> list[str]:
    """How the runs' metadata says their episodes were scored differently; empty when alike.

    Compared: the env id, the reward weights (the env's ``rubric.weights``), the scorers (which
    classifier or judge ran) and every env kwarg but those choosing the data
    (:data:`DATASET_KWARGS`; a kwarg a run leaves out counts as ``default``). A field a run does
    not record (an older run's) is compared among the runs that do.
    """
    fields: dict[str, list[Any]] = {
        "env id": [run.metadata.get("env_id") for run in runs],
        "reward weights": [run.metadata.get("reward_weights") for run in runs],
        "scorers": [run.metadata.get("scorers") for run in runs],
    }
    kwargs = [run.metadata.get("env_kwargs") or {} for run in runs]
    for key in _union(kwargs):
        if key not in DATASET_KWARGS:
            fields[f"env kwarg {key}"] = [k.get(key, "default") for k in kwargs]
    differences = []
    for name, values in fields.items():
        recorded = {run.label: value for run, value in zip(runs, values, strict=True) if value is not None}
        if len({json.dumps(value, sort_keys=True, default=str) for value in recorded.values()}) > 1:
            differences.append(f"{name} differ ({_differing_parts(recorded)})")
    return differences


def _differing_parts(values_by_run: Mapping[str, Any]) -> str:
    """Each run's value, only the entries that differ when every value is a mapping."""
    values = list(values_by_run.values())
    if all(isinstance(value, Mapping) for value in values):
        keys = [key for key in _union(values) if len({json.dumps(v.get(key), default=str) for v in values}) > 1]
        values_by_run = {label: {key: value.get(key) for key in keys} for label, value in values_by_run.items()}
    return "; ".join(f"{label}: {json.dumps(value, sort_keys=True, default=str)}" for label, value in values_by_run.items())


def _run_figures(run: Run, out: Path) -> list[tuple[str, Path]]:
    figures: list[tuple[str, Path]] = []
    slug = _slug(run.label)
    title = run_title(run)
    classification = run.summary.get("classification") or {}
    if classification.get("confusion_matrix"):
        figures.append(("Confusion matrix", plot_confusion_matrix(classification, out / f"{slug}-confusion.png", title=title)))
        figures.append(("Per-label scores", plot_per_label(classification, out / f"{slug}-per-label.png", title=title)))
    if classification.get("reliability"):
        figures.append(("Reliability diagram", plot_reliability(classification, out / f"{slug}-reliability.png", title=title)))
    if run.summary.get("reward_components"):
        path = out / f"{slug}-rewards.png"
        figures.append(("Reward components", plot_components({run.label: run.summary["reward_components"]}, path, title,
                                                             weights=run.metadata.get("reward_weights"))))
    training = training_run_folder(run)
    if training is not None:
        rows = read_heldout_curve(training / HELDOUT_FILE)
        if rows:
            path = out / f"{slug}-heldout-curve.png"
            figures.append((f"Held-out learning curve of the training run `{training}`",
                            plot_heldout_curve(rows, path, title=title)))
    for prefix, fn in _PLOTS:
        if run.env_id.startswith(prefix):
            figures.extend(fn(run, out))
    return figures


def _comparison_figures(runs: Sequence[Run], out: Path, rewards_compare: bool = True) -> list[tuple[str, Path]]:
    """The side-by-side figures; the reward chart only with ``rewards_compare`` (the runs were scored alike)."""
    figures = []
    data = " vs ".join(dict.fromkeys(dataset_title(run.metadata) for run in runs))
    names = {run.label: f"{run.label}: {agent_label(run.metadata)}" for run in runs}
    components = {names[run.label]: run.summary.get("reward_components") or {} for run in runs}
    if rewards_compare and any(components.values()):
        path = out / "compare-rewards.png"
        figures.append(("Reward components, side by side",
                        plot_components(components, path, f"{data}: runs side by side", weights=_shared_weights(runs))))
    f1 = {
        names[run.label]: {label: scores["f1"] for label, scores in ((run.summary.get("classification") or {}).get("per_label") or {}).items()}
        for run in runs
    }
    if any(f1.values()):
        figures.append(("F1 per label, side by side", plot_bars(f1, out / "compare-f1.png", "F1", ylim=(0, 1), title=f"{data}: F1 per label")))
    return figures


def plot_components(
    series: dict[str, dict[str, float | None]], path: Path, title: str, weights: Mapping[str, float] | None = None,
) -> Path:
    """Mean reward components as bars, the event counts (:data:`COUNT_COMPONENTS`) in the title.

    Raw component values are on one scale (a rule's rate, a probability in [0, 1]); a count
    such as ``invalid_actions`` per episode is not, so it is written out instead of drawn.
    With ``weights`` (the env's ``rubric.weights``, in ``metadata.json``) each bar's label
    says its weight in the reward, so a penalty rule (negative weight) and a logged-only
    component (weight 0) read as what they are.
    """
    def label(component: str) -> str:
        weight = (weights or {}).get(component)
        return f"{component} (×{weight:g})" if isinstance(weight, int | float) else component

    values = {
        name: {label(k): v for k, v in parts.items() if k not in COUNT_COMPONENTS} for name, parts in series.items()
    }
    counts = [
        f"{component.replace('_', ' ')} per episode: "
        + ", ".join(f"{format_number(parts.get(component))}" + (f" ({name})" if len(series) > 1 else "") for name, parts in series.items())
        for component in COUNT_COMPONENTS
        if any(parts.get(component) is not None for parts in series.values())
    ]
    subtitle = "\n".join(["mean reward components" + (" (×: weight in the reward)" if weights else ""), *counts])
    return plot_bars(values, path, "mean value (raw, before weights)", title=f"{title}\n{subtitle}")


def _shared_weights(runs: Sequence[Run]) -> dict[str, float]:
    """The component weights all runs that record them agree on (a side-by-side chart has one label per bar)."""
    recorded = [weights for run in runs if (weights := run.metadata.get("reward_weights"))]
    if not recorded:
        return {}
    return {name: weight for name, weight in recorded[0].items() if all(r.get(name) == weight for r in recorded)}


def _figure(width_in: float = 5.0, height_in: float = 4.0) -> Any:
    from matplotlib.figure import Figure  # object API: no pyplot, no global backend switch

    return Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")


def plot_confusion_matrix(classification: dict[str, Any], path: Path, title: str | None = None) -> Path:
    """Confusion matrix (rows gold labels, columns predictions) with counts in the cells."""
    matrix = classification["confusion_matrix"]
    rows, columns = classification["labels"], classification["predicted_labels"]
    figure = _figure(max(4.8, 1.5 + 1.1 * len(columns)), 1.8 + 0.9 * len(rows))
    axes = figure.add_subplot()
    image = axes.imshow(matrix, cmap="Blues", vmin=0)  # from 0, so the lightest cell is the emptiest
    axes.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    axes.set_yticks(range(len(rows)), rows)
    axes.set_xlabel("prediction")
    axes.set_ylabel("label")
    peak = max(max(row) for row in matrix) or 1
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            axes.text(j, i, str(count), ha="center", va="center", color="white" if count > peak / 2 else "black")
    colorbar = figure.colorbar(image, ax=axes, shrink=0.8, label="episodes")
    colorbar.ax.yaxis.set_major_locator(_integer_ticks())  # whole episodes, no 1.25
    figure.suptitle(_wrapped(_titled(title, "confusion matrix"), figure), fontsize="medium")
    figure.savefig(path)
    return path


def plot_reliability(classification: dict[str, Any], path: Path, title: str | None = None) -> Path:
    """Reliability diagram: accuracy against stated confidence per bin, with the diagonal.

    A panel below counts the episodes of each bin (bars, each with its number), so a bin of
    one episode reads as the anecdote it is.
    """
    bins = classification["reliability"]
    figure = _figure(5.0, 5.2)
    axes, count_axes = figure.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfect calibration")
    centres = [(b["low"] + b["high"]) / 2 for b in bins]
    widths = [b["high"] - b["low"] for b in bins]
    axes.bar(centres, [b["accuracy"] for b in bins], width=widths, edgecolor="black", alpha=0.7, label="accuracy of the bin")
    axes.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], "o", color="black",
              label="mean stated confidence of the bin")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_ylabel("accuracy")
    counts = [b["count"] for b in bins]
    bars = count_axes.bar(centres, counts, width=widths, color="grey", edgecolor="black")
    count_axes.bar_label(bars, [str(count) for count in counts], fontsize="x-small", padding=2)
    count_axes.set_ylim(0, 1.35 * max(counts))  # room for the numbers
    count_axes.yaxis.set_major_locator(_integer_ticks(most=3))
    count_axes.set_ylabel("episodes")
    count_axes.set_xlabel("stated confidence")
    ece = classification.get("ece")
    what = f"reliability, ECE {ece:.3f}" if isinstance(ece, float) else "reliability"
    figure.suptitle(_wrapped(_titled(title, f"{what}; {sum(counts)} episodes, per bin below"), figure),
                    fontsize="medium")
    figure.legend(loc="outside lower center", ncols=2, fontsize="small")
    figure.savefig(path)
    return path


def training_run_folder(run: Run) -> Path | None:
    """The training folder of a run's adapter that holds a held-out learning curve, or ``None``.

    The adapter's folder is recorded as the eval was given it (relative to where it ran), so
    besides that path's parent, the run folder's ancestors of the same name are looked in (a
    training run's own ``eval/trained`` or ``eval-replay`` lies inside it).
    """
    adapter = _adapter(run.metadata)
    if not adapter:
        return None
    parent = Path(adapter).parent
    candidates = [parent, *(ancestor for ancestor in run.path.parents if ancestor.name == parent.name)]
    return next((folder for folder in candidates if (folder / HELDOUT_FILE).is_file()), None)


def read_heldout_curve(path: Path) -> list[dict[str, Any]]:
    """The evaluations of a ``heldout.jsonl`` with a step, an episode count and an accuracy, by step."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    usable = [row for row in rows if isinstance(row.get("step"), int) and isinstance(row.get("episodes"), int)
              and row["episodes"] > 0 and _is_number(row.get("accuracy"))]
    return sorted(usable, key=lambda row: row["step"])


def share_ci95(share: float, episodes: int) -> tuple[float, float]:
    """The 95% interval of a share of ``episodes``, clipped to [0, 1].

    It is the t interval of the share's 0/1 sample, as the eval summaries compute intervals.

    >>> low, high = share_ci95(0.9, 10)
    >>> round(low, 3), high
    (0.674, 1.0)
    """
    hits = round(share * episodes)
    mean, half = mean_ci95([1.0] * hits + [0.0] * (episodes - hits))
    return max(0.0, mean - half), min(1.0, mean + half)


def plot_heldout_curve(rows: Sequence[Mapping[str, Any]], path: Path, title: str | None = None) -> Path:
    """Held-out accuracy along training with its 95% interval; the answered rate and flag accuracies as lines.

    Every drawn value is a share of episodes, so the axis and the interval band are clipped
    to [0, 1]: the t interval of a mean near 0 or 1 would otherwise reach past what an
    accuracy can be.

    Args:
        rows: :func:`read_heldout_curve` rows: ``step``, ``episodes``, ``accuracy``, optionally
            ``answered_rate`` and ``<flag>_accuracy`` (e.g. ``pivot_accuracy``).
        path: The PNG to write.
        title: What the run is, the title's first lines.
    """
    steps = [row["step"] for row in rows]
    accuracies = [float(row["accuracy"]) for row in rows]
    lows, highs = zip(*(share_ci95(row["accuracy"], row["episodes"]) for row in rows), strict=True)
    figure = _figure(5.6, 4.4)
    axes = figure.add_subplot()
    axes.fill_between(steps, lows, highs, alpha=0.2, label="accuracy, 95% CI (clipped to [0, 1])")
    axes.plot(steps, accuracies, marker="o", markersize=3, label="accuracy")
    extra = ["answered_rate", *(key for key in _union(rows) if key.endswith("_accuracy"))]
    for key in extra:
        points = [(row["step"], float(row[key])) for row in rows if _is_number(row.get(key))]
        if points:
            axes.plot(*zip(*points, strict=True), marker=".", linestyle="--", linewidth=1,
                      label=key.replace("_", " ").replace(" accuracy", "-only accuracy"))
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("share of held-out episodes")
    axes.grid(alpha=0.3)
    episodes = sorted({row["episodes"] for row in rows})
    what = f"held-out evaluation during training, {'/'.join(map(str, episodes))} episodes each"
    figure.suptitle(_wrapped(_titled(title, what), figure), fontsize="medium")
    figure.legend(loc="outside lower center", ncols=2, fontsize="small")
    figure.savefig(path)
    return path


def plot_per_label(classification: dict[str, Any], path: Path, title: str | None = None) -> Path:
    """Precision, recall and F1 of each gold label."""
    per_label = classification["per_label"]
    series = {metric: {label: scores[metric] for label, scores in per_label.items()} for metric in ("precision", "recall", "f1")}
    return plot_bars(series, path, "score", ylim=(0, 1), title=_titled(title, "precision, recall and F1 per label"))


def plot_bars(
    series: dict[str, dict[str, float | None]], path: Path, ylabel: str,
    ylim: tuple[float, float] | None = None, title: str | None = None,
) -> Path:
    """Write :func:`bar_chart` of ``series`` to ``path``."""
    bar_chart(series, ylabel, ylim, title).savefig(path)
    return path


def bar_chart(
    series: dict[str, dict[str, float | None]], ylabel: str,
    ylim: tuple[float, float] | None = None, title: str | None = None,
) -> Any:
    """Grouped bars: one group per category, one bar per series (e.g. per run), as a matplotlib ``Figure``.

    Each bar carries its value, so a 0 reads as 0 and a missing value as ``n/a``; the
    legend sits below the plot, clear of the bars, in as many columns as fit (the figure is
    widened to its longest name).
    """
    categories = _union(series.values())
    figure = _figure(max(5.0, 1.5 + 0.5 * len(categories) * max(1, len(series))), 4.4)
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(series))
    for index, (name, values) in enumerate(series.items()):
        positions = [c + (index - (len(series) - 1) / 2) * width for c in range(len(categories))]
        raw = [values.get(category) for category in categories]
        bars = axes.bar(positions, [_number(value) for value in raw], width=width, label=name)
        axes.bar_label(bars, [format_number(value) if _is_number(value) else "n/a" for value in raw],
                       fontsize="x-small", rotation=90 if len(series) > 2 else 0, padding=2)
    axes.set_xticks(range(len(categories)), categories, rotation=30, ha="right")
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_ylabel(ylabel)
    low, high = ylim if ylim else axes.get_ylim()
    axes.set_ylim(low, high + 0.12 * (high - low))  # room for the value labels
    if len(series) > 1:
        # as many legend columns as fit the figure's width (long run names: one a row, the figure widened to the longest)
        entry_width_in = LEGEND_INCHES_PER_CHAR * max(len(name) for name in series) + LEGEND_SWATCH_INCHES
        figure.set_figwidth(max(figure.get_figwidth(), entry_width_in + 0.3))
        columns = max(1, min(len(series), 3, int(figure.get_figwidth() // entry_width_in)))
        figure.legend(loc="outside lower center", ncols=columns, fontsize="small")
    if title:
        figure.suptitle(_wrapped(title, figure), fontsize="medium")
    return figure


# --------------------------------------------------------------------------- helpers
def _run_header(run: Run) -> list[str]:
    meta = run.metadata
    return [
        f"- env: `{meta.get('env_id', '?')}` (split `{meta.get('split', '?')}`, kwargs `{json.dumps(meta.get('env_kwargs', {}))}`)",
        f"- agent: `{agent_label(meta)}`",
        f"- seed {meta.get('seed', '?')}, rollouts {meta.get('rollouts', '?')}, status {meta.get('status', '?')}, "
        f"started {meta.get('started_at', '?')}",
        f"- folder: `{run.path}`",
    ]


def _adapter(metadata: Mapping[str, Any]) -> str | None:
    """The adapter folder a run's agent played with: its description's, else its kwargs' (``None``: none)."""
    described = metadata.get("agent") if isinstance(metadata.get("agent"), Mapping) else {}
    adapter = described.get("adapter") or (metadata.get("agent_kwargs") or {}).get("adapter")
    return str(adapter) if adapter else None


def _splitting_flags(classifications: Sequence[Mapping[str, Any]]) -> list[str]:
    """The subset flags that split some run's episodes both ways (a corpus without pivots has no ``pivot``)."""
    subsets = [c.get("subsets") or {} for c in classifications]
    return [flag for flag in _union(subsets) if any({"true", "false"} <= set(s.get(flag) or {}) for s in subsets)]


def _declared_outcome_summaries(env_id: str) -> list[str]:
    """The ``outcome_summaries`` of a registered env's class, without building the env."""
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    import affectgym  # noqa: F401  (registers the built-in envs and plugins)

    if env_id not in gym.registry:
        return []
    entry_point = gym.spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    return list(getattr(creator, "outcome_summaries", ()))


def _unique_labels(paths: Sequence[Path]) -> list[str]:
    names = [path.name or str(path) for path in paths]
    if len(set(names)) == len(names):
        return names
    return [f"{path.parent.name}/{path.name}" if names.count(path.name) > 1 else path.name for path in paths]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"


def _union(mappings: Any) -> list[str]:
    keys: dict[str, None] = {}
    for mapping in mappings:
        keys.update(dict.fromkeys(mapping))
    return list(keys)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(value: Any) -> float:
    return float(value) if _is_number(value) else 0.0


def _integer_ticks(most: int | str = "auto") -> Any:
    """A tick locator for counts: whole numbers only, at most ``most`` intervals ("auto": matplotlib's choice)."""
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(nbins=most, integer=True)


def _titled(title: str | None, what: str) -> str:
    return f"{title}\n{what}" if title else what


def _wrapped(text: str, figure: Any) -> str:
    """``text`` with each line wrapped to the figure's width (about 12 characters per inch), at spaces only.

    A model name or a path (``smollm2-135m``, ``runs/x/adapter``) stays whole on its line.
    """
    import textwrap

    width = max(30, int(12 * figure.get_figwidth()))
    return "\n".join(textwrap.fill(line, width, break_on_hyphens=False) for line in text.splitlines())


__all__ = [
    "COUNT_COMPONENTS",
    "DATASET_KWARGS",
    "HELDOUT_FILE",
    "Run",
    "agent_label",
    "bar_chart",
    "comparison_table",
    "dataset_title",
    "load_run",
    "plot_bars",
    "plot_components",
    "plot_confusion_matrix",
    "plot_heldout_curve",
    "plot_per_label",
    "plot_reliability",
    "read_heldout_curve",
    "register_report_plot",
    "run_title",
    "scoring_differences",
    "share_ci95",
    "training_run_folder",
    "write_report",
]
