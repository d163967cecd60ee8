"""The numbers of ``summary.json``: what every run reports, plus what its env declares.

Every summary has the episode and error counts, the mean reward with its 95% interval, the
mean of each reward component, pass@k (with more than one rollout), tool use, turns,
timings and the LLM judge's failures (an episode whose judging failed is not an error: it
has a reward, without the judge's part, so it is counted apart). The rest depends on the env's outcomes (``record["outcome"]``), and the env says
which summaries fit them in its ``outcome_summaries`` class attribute
(:class:`~affectgym.envs.core.AffectEnv`), by name:

* ``"classification"``: :func:`~affectgym.eval.metrics.classification_metrics` of outcomes
  with ``prediction`` and ``label`` (accuracy, P/R/F1, confusion matrix, calibration, subsets);
* ``"reward_by_target"``: the mean reward per value of the outcome's ``target`` (the
  requested emotion);
* ``"dialogue"``: :func:`~affectgym.eval.dialogue_metrics.dialogue_summary` of outcomes
  holding ``dialogue_turns`` (BLEU-4, ROUGE, tag accuracy per slot);
* ``"style"``: :func:`~affectgym.eval.style_metrics.style_summary` of replies in a requested
  emotion (target accuracy, rule-violation rates, length, valence agreement by VADER).

Each is written under its own name. A plug-in adds a summary with
:func:`register_outcome_summary` and lists its name in its env's ``outcome_summaries``;
the runner itself names no env.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: ``fn(records) -> dict``: a summary of the error-free episode records (outcome under ``"outcome"``).
OutcomeSummary = Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]


def classification_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`~affectgym.eval.metrics.classification_metrics` of the records' outcomes."""
    from affectgym.eval.metrics import classification_metrics

    return classification_metrics([record.get("outcome") or {} for record in records])


def reward_by_target(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean reward per value of the outcome's ``target`` field (e.g. the emotion a reply was asked to carry).

    >>> reward_by_target([{"reward": 1.0, "outcome": {"target": "joy"}}, {"reward": 0.0, "outcome": {}}])
    {'joy': 1.0}
    """
    groups: dict[str, list[float]] = defaultdict(list)
    for record in records:
        target = (record.get("outcome") or {}).get("target")
        if target is not None and record.get("reward") is not None:
            groups[str(target)].append(float(record["reward"]))
    return {name: math.fsum(values) / len(values) for name, values in sorted(groups.items())}


def dialogue_turn_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`~affectgym.eval.dialogue_metrics.dialogue_summary` of the records' outcomes."""
    from affectgym.eval.dialogue_metrics import dialogue_summary

    return dialogue_summary(records)


#: Keys every summary has; no outcome summary may take one of them.
_BASE_KEYS = frozenset(
    {
        "episodes", "scenarios", "errors", "judge_failures", "reward", "reward_components", "tool_use", "turns_mean",
        "truncated_rate", "timings", "pass_at_k", "outcome_summaries", "status", "planned_episodes", "episodes_this_session",
        "elapsed_s_this_session", "episodes_per_s_this_session",
    }
)


def style_turn_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`~affectgym.eval.style_metrics.style_summary` of the records."""
    from affectgym.eval.style_metrics import style_summary

    return style_summary(records)


_SUMMARIES: dict[str, OutcomeSummary] = {
    "classification": classification_summary,
    "reward_by_target": reward_by_target,
    "dialogue": dialogue_turn_summary,
    "style": style_turn_summary,
}


def register_outcome_summary(name: str, fn: OutcomeSummary) -> None:
    """Make ``name`` a summary an env can list in its ``outcome_summaries`` (replacing any earlier one).

    Args:
        name: The name envs list, and the key of its result in ``summary.json``.
        fn: ``fn(records) -> dict`` over the error-free episode records; each has the env's
            outcome under ``record["outcome"]``.

    Raises:
        ValueError: ``name`` is empty or one of the keys every summary has.
    """
    if not name or name in _BASE_KEYS:
        raise ValueError(f"an outcome summary needs a name other than {sorted(_BASE_KEYS)}, got {name!r}")
    _SUMMARIES[name] = fn


def outcome_summary_names() -> list[str]:
    """The summaries envs may list in ``outcome_summaries``, sorted."""
    return sorted(_SUMMARIES)


def check_outcome_summaries(names: Sequence[str], env_id: str = "the env") -> None:
    """Fail early when an env lists a summary that does not exist.

    Raises:
        ValueError: Names the unknown summary and the known ones.
    """
    unknown = [name for name in names if name not in _SUMMARIES]
    if unknown:
        raise ValueError(
            f"{env_id} lists outcome summaries {unknown} that do not exist; known: {outcome_summary_names()} "
            "(add one with affectgym.eval.summary.register_outcome_summary)"
        )


def summarize(
    records: Sequence[Mapping[str, Any]], rollouts: int = 1, outcome_summaries: Sequence[str] = ()
) -> dict[str, Any]:
    """The numbers of ``summary.json`` from episode records.

    Args:
        records: Records of ``results.jsonl`` (the env's outcome under ``"outcome"``).
        rollouts: Rollouts per scenario (pass@k is reported when > 1).
        outcome_summaries: The env's ``outcome_summaries`` (see the module docstring).

    Returns:
        ``episodes``, ``scenarios``, ``errors`` (count, rate, by type), ``judge_failures``
        (``count``: failed verdicts, ``episodes``: episodes with one or more, ``rate``: their
        share of the error-free episodes), ``reward`` (mean, ci95, n), ``reward_components``
        (mean of each), ``tool_use`` (rate, calls per episode and per tool, ``answered_rate``: the
        share that ended with an answer, ``invalid_actions_mean``: invalid messages per episode), ``turns_mean``,
        ``truncated_rate``, ``timings``, ``pass_at_k`` when ``rollouts > 1``,
        ``outcome_summaries`` (the names) and one entry per name.

    Raises:
        ValueError: An unknown name in ``outcome_summaries``.
    """
    from affectgym.eval.metrics import mean_ci95, pass_at_k_table, tool_use_stats

    check_outcome_summaries(outcome_summaries)
    ok = [r for r in records if not r.get("error")]
    errors = [r for r in records if r.get("error")]
    rewards = [float(r["reward"]) for r in ok if r.get("reward") is not None]
    mean, half = mean_ci95(rewards)
    judged_badly = [int(r.get("judge_failures") or 0) for r in ok]
    failed_episodes = sum(count > 0 for count in judged_badly)
    components: dict[str, list[float]] = defaultdict(list)
    for record in ok:
        for name, value in (record.get("reward_components") or {}).items():
            if value is not None:
                components[name].append(float(value))
    summary: dict[str, Any] = {
        "episodes": len(records),
        "scenarios": len({r["scenario_id"] for r in records}),
        "errors": {
            "count": len(errors),
            "rate": len(errors) / len(records) if records else 0.0,
            "by_type": dict(Counter(r["error"]["type"] for r in errors)),
        },
        "judge_failures": {
            "count": sum(judged_badly),
            "episodes": failed_episodes,
            "rate": failed_episodes / len(ok) if ok else 0.0,
        },
        "reward": {"mean": mean, "ci95": half, "n": len(rewards)},
        "reward_components": {name: math.fsum(v) / len(v) for name, v in sorted(components.items())},
        "tool_use": {
            **tool_use_stats([r.get("tool_calls") or [] for r in ok]),
            "answered_rate": sum(bool(r.get("terminated")) for r in ok) / len(ok) if ok else None,
            "invalid_actions_mean": (
                math.fsum(float((r.get("reward_components") or {}).get("invalid_actions") or 0.0) for r in ok) / len(ok)
                if ok else None
            ),
        },
        "turns_mean": math.fsum(r.get("turns", 0) for r in ok) / len(ok) if ok else None,
        "truncated_rate": sum(bool(r.get("truncated")) for r in ok) / len(ok) if ok else None,
        "timings": {
            key: math.fsum(r["timings"][key] for r in records) / len(records) if records else None
            for key in ("total_s", "agent_s", "env_s")
        },
    }
    if rollouts > 1:
        by_scenario: dict[str, list[bool]] = defaultdict(list)
        for record in records:
            by_scenario[record["scenario_id"]].append(_success(record))
        complete = {sid: v for sid, v in by_scenario.items() if len(v) >= rollouts}
        summary["pass_at_k"] = pass_at_k_table(complete)
    summary["outcome_summaries"] = list(outcome_summaries)
    for name in outcome_summaries:
        summary[name] = _SUMMARIES[name](ok)
    return summary


def _success(record: Mapping[str, Any], threshold: float = 0.5) -> bool:
    """An episode succeeded: its outcome says ``correct``, or (no such flag) its reward >= ``threshold``."""
    if record.get("error"):
        return False
    correct = (record.get("outcome") or {}).get("correct")
    if correct is not None:
        return bool(correct)
    return record.get("reward") is not None and float(record["reward"]) >= threshold


#: Row labels of the outcome summaries printed as one row per entry (``classification`` has its own layout).
_ROW_PREFIXES = {"reward_by_target": "reward | target=", "dialogue": "dialogue ", "style": "style "}


def print_summary(summary: Mapping[str, Any], console: Any = None, title: str = "evaluation") -> None:
    """Print the summary as a rich table.

    Args:
        summary: The contents of ``summary.json``.
        console: A ``rich.console.Console``; default: stdout.
        title: Table title.
    """
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    reward = summary["reward"]
    table.add_row("episodes", f"{summary['episodes']} ({summary['scenarios']} scenarios)")
    table.add_row("mean reward ± 95% CI", format_mean_ci95(reward))
    for name, value in summary["reward_components"].items():
        table.add_row(f"  {name}", format_number(value))
    classification = summary.get("classification") or {}
    for key in ("accuracy", "unweighted_accuracy", "macro_f1", "micro_f1", "weighted_precision", "weighted_recall",
                "weighted_f1", "ece", "brier", "unanswered_rate"):
        if classification.get(key) is not None:
            table.add_row(key, format_number(classification[key]))
        elif classification and key in ("ece", "brier"):
            table.add_row(key, "n/a (no answer stated a confidence)")
    for flag, sides in (classification.get("subsets") or {}).items():
        for side, values in sides.items():
            table.add_row(f"accuracy | {flag}={side}", f"{format_number(values['accuracy'])} (n={values['n']})")
    for name, value in (summary.get("pass_at_k") or {}).items():
        table.add_row(name, format_number(value))
    tool_use = summary["tool_use"]
    table.add_row("tool-use rate", format_number(tool_use["tool_use_rate"]))
    table.add_row("tool calls / episode", format_number(tool_use["mean_tool_calls"]))
    if tool_use.get("answered_rate") is not None:
        table.add_row("answered (ended with an answer)", format_number(tool_use["answered_rate"]))
        table.add_row("invalid messages / episode", format_number(tool_use["invalid_actions_mean"]))
    errors = summary["errors"]
    by_type = ", ".join(f"{k}: {v}" for k, v in errors["by_type"].items())
    table.add_row("errors", f"{errors['count']}" + (f" ({by_type})" if by_type else ""))
    judge = summary.get("judge_failures") or {}
    if judge.get("count"):
        table.add_row(
            "judge failures",
            f"{judge['count']} in {judge['episodes']} episodes ({format_number(judge['rate'])}; rewards without the judge's part)",
        )
    if summary["timings"]["total_s"] is not None:
        table.add_row("seconds / episode", format_number(summary["timings"]["total_s"]))
    for name in summary.get("outcome_summaries") or ():
        if name == "classification":
            continue
        prefix = _ROW_PREFIXES.get(name, f"{name} ")
        for key, value in (summary.get(name) or {}).items():
            if value is None or isinstance(value, (int, float, str)):
                table.add_row(f"{prefix}{key}", format_number(value))
    console.print(table)
    if classification.get("confusion_matrix"):
        matrix = Table(title="confusion matrix (rows: label, columns: prediction)")
        matrix.add_column("")
        for label in classification["predicted_labels"]:
            matrix.add_column(label, justify="right")
        for label, row in zip(classification["labels"], classification["confusion_matrix"], strict=True):
            matrix.add_row(label, *map(str, row))
        console.print(matrix)


def format_number(value: Any) -> str:
    """A metric as tables show it: floats to three decimals, ``-`` for a missing value.

    >>> format_number(0.5), format_number(None), format_number(float("nan")), format_number(12)
    ('0.500', '-', '-', '12')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def format_mean_ci95(reward: Mapping[str, Any]) -> str:
    """A summary's ``{mean, ci95, n}`` as tables show it; one value is ``n=1``, never a certain ``± 0.000``.

    >>> format_mean_ci95({"mean": 0.5, "ci95": 0.1, "n": 12}), format_mean_ci95({"mean": 0.5, "ci95": 0.0, "n": 1})
    ('0.500 ± 0.100', '0.500 (n=1)')
    """
    if reward.get("n") == 1:
        return f"{format_number(reward.get('mean'))} (n=1)"
    return f"{format_number(reward.get('mean'))} ± {format_number(reward.get('ci95'))}"


__all__ = [
    "OutcomeSummary",
    "check_outcome_summaries",
    "classification_summary",
    "dialogue_turn_summary",
    "format_mean_ci95",
    "format_number",
    "outcome_summary_names",
    "print_summary",
    "register_outcome_summary",
    "reward_by_target",
    "style_turn_summary",
    "summarize",
]
