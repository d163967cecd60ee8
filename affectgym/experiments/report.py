"""An experiment's summary as markdown: one row per arm and metric, one per comparison, and how each recipe was chosen.

>>> print(markdown_table({"arms": {"base": {"recipe_hash": "a1", "rule": "declared", "split": "declared", "replays": 0,
...     "reward": {"text": "0.500 (all 0.500; 1 seed × 2 groups)"}}}, "comparisons": []}))
| arm | recipe | chosen by | reward |
|---|---|---|---|
| base | `a1` | declared | 0.500 (all 0.500; 1 seed × 2 groups) |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["markdown_table"]

_ARM_FIELDS = {"recipe", "recipe_hash", "rule", "split", "replays"}


def markdown_table(summary: Mapping[str, Any]) -> str:
    """The arms' table, then the comparisons' (when there are any), from :meth:`ExperimentRunner.summarise`'s summary."""
    arms = summary["arms"]
    metrics = list(dict.fromkeys(m for arm in arms.values() for m in arm if m not in _ARM_FIELDS))
    lines = ["| arm | recipe | chosen by | " + " | ".join(metrics) + " |", "|---|---|---|" + "---|" * len(metrics)]
    for name, arm in arms.items():
        chosen = arm["rule"] if arm["split"] == "declared" else f"{arm['rule']} ({arm['split']})"
        replays = f"; played again {arm['replays']}x" if arm["replays"] else ""
        lines.append(f"| {name} | `{arm['recipe_hash']}` | {chosen}{replays} | "
                     + " | ".join(arm.get(m, {}).get("text", "") for m in metrics) + " |")
    if summary["comparisons"]:
        lines += ["", "| comparison | metric | difference | goal | met |", "|---|---|---|---|---|"]
        for c in summary["comparisons"]:
            goal = "" if c["goal"] is None else f"+{c['goal']:g}, interval above 0"
            met = "" if c["met"] is None else ("yes" if c["met"] else "**no**")
            lines.append(f"| {c['arm']} vs {c['against']} | {c['metric']} | {c['difference']['text']} | {goal} | {met} |")
    return "\n".join(lines)
