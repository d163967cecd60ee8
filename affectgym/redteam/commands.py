"""``affectgym redteam ENV``: search cheap replies that beat an env's honest one; a table, JSON, an exit code for CI.

It writes ``settings.json``, ``items.jsonl`` (each scenario's best reply per family, as it is
searched), ``report.json`` and ``report.md`` to ``--out``; run again with the same settings, it
resumes. Exit codes: 0 the reward holds (no family wins more than ``--max-share`` of the
scenarios), 1 a family beats it, 2 a bad argument.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from affectgym.cli_arguments import json_object_argument

EXIT_BAD_ARGUMENT = 2


def register(subparsers: Any) -> None:
    """Add ``redteam`` to the ``affectgym`` command."""
    from affectgym.redteam.material import KINDS
    from affectgym.redteam.report import DEFAULT_MAX_SHARE
    from affectgym.redteam.search import DEFAULT_BUDGET, DEFAULT_MARGIN

    parser = subparsers.add_parser(
        "redteam",
        help="search cheap replies (label words, exclamations, markup, echoes, role headers, filler...) that beat "
        "an env's honest reference reply; exit 0 the reward holds, 1 a family beats it on more than --max-share",
    )
    parser.add_argument("env_id", metavar="ENV", help="a registered env id, e.g. affectgym/EmotionStyle-v0")
    parser.add_argument("--env-kwargs", type=json_object_argument, default={}, metavar="JSON",
                        help='env arguments, e.g. \'{"rubric": "single"}\'')
    parser.add_argument("--split", default="eval", help="the split searched (default: eval)")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                        help=f"score calls per family per scenario, at least 2 (default: {DEFAULT_BUDGET})")
    parser.add_argument("--seed", type=int, default=0, help="the search's seed (default: 0)")
    parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                        help=f"how far a cheap reply must beat the reference to win (default: {DEFAULT_MARGIN})")
    parser.add_argument("--max-share", type=float, default=DEFAULT_MAX_SHARE,
                        help=f"largest share of scenarios a family may win for the reward to hold (default: {DEFAULT_MAX_SHARE})")
    parser.add_argument("--max-scenarios", type=int, default=None,
                        help="search only this many scenarios, spread over the split (default: all)")
    parser.add_argument("--families", nargs="+", default=None, metavar="FAMILY",
                        help=f"search only these families (default: all): {', '.join(KINDS)} or a kind of --material")
    parser.add_argument("--material", default=None, metavar="FILE",
                        help='more pieces by kind, a JSON or YAML mapping, e.g. {"label_words": ["wütend", "froh"]}')
    parser.add_argument("--from-run", default=None, metavar="PATH",
                        help="also score a run's replies (a run folder with results.jsonl, or a JSONL file of "
                        "records with scenario_id and final_text or reply) as the policy_replies family")
    parser.add_argument("--run-filter", nargs="+", default=[], metavar="KEY=VALUE",
                        help="keep only the --from-run records whose field KEY equals VALUE, e.g. arm=classifier-only")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="write settings.json, items.jsonl (as it goes; a rerun resumes), report.json and report.md here")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON instead of the table")
    output.add_argument("--markdown", action="store_true", help="print the report as Markdown instead of the table")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run_redteam)


def run_redteam(args: argparse.Namespace) -> int:
    """Handle ``affectgym redteam``: search, print the report, write it to ``--out``; the report's exit code."""
    from rich.console import Console

    from affectgym.eval.progress import progress_bar
    from affectgym.redteam.material import material_from_file
    from affectgym.redteam.runner import policy_replies_from, red_team

    try:
        where = dict(_key_value(item) for item in args.run_filter)
        policy = policy_replies_from(args.from_run, where) if args.from_run else None
        extra = material_from_file(args.material) if args.material else None
    except ValueError as exc:
        print(f"affectgym redteam: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGUMENT
    console = Console(stderr=True)
    bar = progress_bar("red team", console, refresh_per_second=4) if not args.no_progress and console.is_terminal else None
    won: set[str] = set()
    with bar or contextlib.nullcontext():
        task = bar.add_task("", total=None) if bar else None

        def on_item(item: Any, done: int, total: int) -> None:
            won.update(f for f in item.best if item.won(f, args.margin))
            if bar:
                bar.update(task, completed=done, total=total, description=f"families that won somewhere: {len(won)}")

        try:
            report = red_team(
                args.env_id, env_kwargs=args.env_kwargs, split=args.split, budget=args.budget, seed=args.seed,
                margin=args.margin, max_share=args.max_share, max_scenarios=args.max_scenarios, families=args.families,
                extra_material=extra, policy_replies=policy, out_dir=args.out, on_item=on_item,
            )
        except (ValueError, KeyError) as exc:
            print(f"affectgym redteam: {exc}", file=sys.stderr)
            return EXIT_BAD_ARGUMENT
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "report.json").write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        Path(args.out, "report.md").write_text(report.markdown(), encoding="utf-8")
    if args.json:
        print(json.dumps(report.to_json(), indent=1, ensure_ascii=False))
    elif args.markdown:
        print(report.markdown(), end="")
    else:
        Console().print(report.table())
        print(f"worst family: {report.worst.family if report.worst else '-'}, "
              f"{report.worst.share if report.worst else 0:.1%} of {report.scenarios} scenarios: the reward "
              f"{'holds' if report.holds else 'is beaten'}" + (f" ({report.not_applicable})" if report.not_applicable else ""))
    return report.exit_code()


def _key_value(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise ValueError(f"--run-filter takes KEY=VALUE, got {text!r}")
    return key, value


__all__ = ["register", "run_redteam"]
