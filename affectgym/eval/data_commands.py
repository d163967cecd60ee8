"""The ``affectgym data report ENV_ID`` subcommand: how hard a speech dataset is (its discrimination ladder).

It lives in eval, beside :mod:`affectgym.eval.difficulty`, which fits the ladder on what a speech env's
tools show; ``affectgym.data`` sits below the envs and imports neither.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from affectgym.cli_arguments import add_dataclass_command, json_object_argument

DESCRIPTION = (
    "Fit the discrimination ladder on a speech env's train split and score it on --split: majority class, "
    "text only (TF-IDF + logistic regression), the best single-feature threshold (raw and speaker-relative "
    "features), the best single band word of the prosody tool's text, a depth-2 tree and a logistic regression "
    "on every feature, each with a 5-fold cross-validated accuracy over train grouped by the env's split group. "
    "A corpus where one threshold or one band word is near 1.0 is solved by one cue. The first run on a corpus "
    "measures every clip with praat (cached on disk)."
)


@dataclass
class DataReportOptions:
    """The arguments of ``affectgym data report``, one per field."""

    env_id: str = field(metadata={
        "positional": True, "metavar": "ENV_ID", "help": "a speech env, e.g. affectgym/Sarcasm-v0 or affectgym/SpeechEmotion-v0",
    })
    split: str = field(default="eval", metadata={"help": "the split scored (default: eval); the ladder is always fitted on train"})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "type": json_object_argument, "metavar": "JSON",
        "help": 'env arguments, e.g. \'{"dataset": "folder", "data_dir": "my_clips"}\' (not split: use --split)',
    })
    json: Path | None = field(default=None, metadata={"metavar": "PATH", "help": "also write the ladder as JSON to PATH"})
    no_progress: bool = field(default=False, metadata={"help": "no progress lines while clips are measured"})


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``data`` subcommand (with ``data report``, its options those of :class:`DataReportOptions`).

    Args:
        subparsers: The object returned by ``ArgumentParser.add_subparsers()``.
    """
    data = subparsers.add_parser("data", help="look at a speech dataset: `affectgym data report ENV_ID`",
                                 description="Look at the dataset behind a speech env.")
    actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    add_dataclass_command(
        actions, "report", [DataReportOptions], run_data_report,
        help="how hard a speech dataset is: the discrimination ladder, as a table and JSON", description=DESCRIPTION,
    )


def run_data_report(args: argparse.Namespace) -> int:
    """Handle ``affectgym data report``: print the ladder's table, and write its JSON with ``--json``.

    Raises:
        ValueError: ``--env-kwargs`` holds ``split``, or ``--json`` names a folder.
    """
    from rich.console import Console

    from affectgym.eval.difficulty import discrimination_ladder, render_ladder_table

    if "split" in args.env_kwargs:
        raise ValueError("--env-kwargs may not hold 'split': use --split (the ladder is always fitted on train)")
    if args.json is not None and args.json.is_dir():
        raise ValueError(f"--json {str(args.json)!r} is a folder; give the path of the JSON file to write")
    console = Console()
    if not console.is_terminal:  # a file or a pipe has no width: rich's 80 columns would wrap every row
        console = Console(width=120)
    report = discrimination_ladder(args.env_id, split=args.split, env_kwargs=args.env_kwargs,
                                   progress=not args.no_progress, console=console)
    console.print(render_ladder_table(report))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


__all__ = ["DataReportOptions", "register", "run_data_report"]
