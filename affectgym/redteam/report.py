"""The red team's report: per family, the share of scenarios a cheap reply won and the best one found.

The verdict is the worst family: the reward holds when no family wins more than ``max_share``
of the scenarios (5% by default). :meth:`RedTeamReport.exit_code` gives CI 0 (holds) or 1.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from affectgym.redteam.search import DEFAULT_MARGIN, ItemResult

#: Largest share of scenarios any family may win for the reward to hold.
DEFAULT_MAX_SHARE = 0.05
EXIT_HOLDS, EXIT_BEATEN = 0, 1


@dataclass(frozen=True)
class FamilyResult:
    """One family over every scenario searched.

    Attributes:
        family: The family's name.
        scenarios: Scenarios it was searched on.
        won: Scenarios where its best reply won (see :mod:`affectgym.redteam.search`).
        mean_gain: Mean of its best reply's score minus the reference's.
        example: Its best reply on the scenario it won by most (else where it came closest):
            ``scenario_id``, ``reference``, ``score``, ``edits``, ``text``.
    """

    family: str
    scenarios: int
    won: int
    mean_gain: float
    example: dict[str, Any]

    @property
    def share(self) -> float:
        """Share of the scenarios won."""
        return self.won / self.scenarios if self.scenarios else 0.0


@dataclass(frozen=True)
class RedTeamReport:
    """What the search found on one env.

    Attributes:
        env_id: The env searched (with its arguments, when given).
        split: The split searched.
        budget: Score calls per family per scenario.
        seed: The search's seed.
        margin: How far a cheap reply had to beat the reference.
        max_share: Largest share of scenarios a family may win.
        scenarios: Scenarios searched.
        score_calls: Replies scored in all.
        reference_mean: Mean score of the honest reference.
        families: Each family's result, the worst first.
        not_applicable: Why nothing was searched (an env whose actions are not text), else ``""``.
    """

    env_id: str
    split: str
    budget: int
    seed: int
    margin: float
    max_share: float
    scenarios: int
    score_calls: int
    reference_mean: float
    families: tuple[FamilyResult, ...] = field(default_factory=tuple)
    not_applicable: str = ""

    @property
    def worst(self) -> FamilyResult | None:
        """The family that won the largest share of scenarios."""
        return self.families[0] if self.families else None

    @property
    def holds(self) -> bool:
        """Whether no family won more than ``max_share`` of the scenarios."""
        return self.worst is None or self.worst.share <= self.max_share

    def exit_code(self) -> int:
        """0 when the reward holds (or the env is not text), 1 when a family beat it."""
        return EXIT_HOLDS if self.holds else EXIT_BEATEN

    def to_json(self) -> dict[str, Any]:
        """A JSON record: the settings, every family's result and the verdict."""
        data = asdict(self)
        data["holds"] = self.holds
        for family, result in zip(data["families"], self.families, strict=True):
            family["share"] = result.share
        return data

    def markdown(self, *, example_chars: int = 240) -> str:
        """The report as a Markdown section: the verdict, then a table of the families."""
        head = f"### {self.env_id} ({self.split} split)\n\n"
        if self.not_applicable:
            return head + f"Not searched: {self.not_applicable}\n"
        worst = self.worst
        verdict = "holds" if self.holds else "is beaten"
        lines = [
            head + f"{self.scenarios} scenarios, budget {self.budget} score calls per family per scenario, "
            f"seed {self.seed}, margin {self.margin:g}; {self.score_calls} replies scored. The honest reference "
            f"scores {self.reference_mean:.3f} on average. The reward **{verdict}**: the worst family, "
            f"`{worst.family if worst else '-'}`, wins {worst.share if worst else 0:.1%} of the scenarios "
            f"(at most {self.max_share:.0%} allowed).\n",
            "| family | won | share | mean gain | best cheap reply (scenario: reference → score) |",
            "|---|---:|---:|---:|---|",
        ]
        for result in self.families:
            example = result.example
            text = " ".join(str(example.get("text", "")).split())
            text = (text[:example_chars] + " …") if len(text) > example_chars else text
            text = text.replace("|", "\\|")
            lines.append(
                f"| {result.family} | {result.won}/{result.scenarios} | {result.share:.1%} | {result.mean_gain:+.3f} | "
                f"`{example.get('scenario_id')}`: {example.get('reference', 0):.3f} → {example.get('score', 0):.3f}; "
                f"{str(example.get('edits', '')).replace('|', '/')}: “{text}” |"
            )
        return "\n".join(lines) + "\n"

    def table(self) -> Any:
        """The families as a ``rich`` table."""
        from rich.table import Table

        table = Table(title=f"red team: {self.env_id} ({self.split}), budget {self.budget}, margin {self.margin:g}")
        for column, justify in (("family", "left"), ("won", "right"), ("share", "right"), ("mean gain", "right"), ("best cheap reply", "left")):
            table.add_column(column, justify=justify, overflow="fold")
        for result in self.families:
            example = result.example
            share = f"[red]{result.share:.1%}[/red]" if result.share > self.max_share else f"{result.share:.1%}"
            table.add_row(result.family, f"{result.won}/{result.scenarios}", share, f"{result.mean_gain:+.3f}",
                          f"{example.get('reference', 0):.3f} → {example.get('score', 0):.3f}: {str(example.get('text', ''))[:160]}")
        return table


def summarise(
    items: Sequence[ItemResult],
    *,
    env_id: str,
    split: str,
    budget: int,
    seed: int,
    margin: float = DEFAULT_MARGIN,
    max_share: float = DEFAULT_MAX_SHARE,
) -> RedTeamReport:
    """The report of the scenarios searched, families ordered worst first (most scenarios won, then gain)."""
    names = list(dict.fromkeys(family for item in items for family in item.best))
    families = [_family(name, items, margin) for name in names]
    families.sort(key=lambda f: (f.share, f.mean_gain), reverse=True)
    return RedTeamReport(
        env_id=env_id, split=split, budget=budget, seed=seed, margin=margin, max_share=max_share,
        scenarios=len(items), score_calls=sum(item.score_calls for item in items),
        reference_mean=statistics.fmean(item.reference for item in items) if items else 0.0,
        families=tuple(families),
    )


def _family(name: str, items: Sequence[ItemResult], margin: float) -> FamilyResult:
    searched = [item for item in items if name in item.best]
    gains = [item.gain(name) for item in searched]
    top = max(searched, key=lambda item: (item.won(name, margin), item.gain(name)))
    example = {"scenario_id": top.scenario_id, "reference": top.reference, **_example_fields(top.best[name])}
    return FamilyResult(name, len(searched), sum(item.won(name, margin) for item in searched), statistics.fmean(gains), example)


def _example_fields(attempt: Mapping[str, Any]) -> dict[str, Any]:
    return {key: attempt[key] for key in ("score", "base", "edits", "text")}


def not_applicable(env_id: str, split: str, reason: str) -> RedTeamReport:
    """The report of an env the search cannot edit (its actions are not text)."""
    return RedTeamReport(env_id=env_id, split=split, budget=0, seed=0, margin=DEFAULT_MARGIN,
                         max_share=DEFAULT_MAX_SHARE, scenarios=0, score_calls=0, reference_mean=0.0, not_applicable=reason)


__all__ = ["DEFAULT_MAX_SHARE", "FamilyResult", "RedTeamReport", "not_applicable", "summarise"]
