"""The ``eval`` and ``report`` subcommands of ``affectgym``."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add ``eval`` and ``report`` to the ``affectgym`` command."""
    evaluate = subparsers.add_parser(
        "eval",
        help="play an agent on an env's scenarios; write results.jsonl, metadata.json, summary.json",
        description="Play an agent on the first N scenarios of a split and write one line per episode.",
    )
    evaluate.add_argument("env_id", metavar="ENV_ID", help="environment id (see `affectgym list`)")
    evaluate.add_argument(
        "--agent", required=True, metavar="SPEC",
        help="registered name (e.g. smollm2-135m, majority), hf:<path or id>, openai:<model>@<base_url>, dspy:<model>@<base_url>",
    )
    evaluate.add_argument("-n", "--examples", type=int, default=None, metavar="N", help="scenarios to play (default: all of the split)")
    evaluate.add_argument("-r", "--rollouts", type=int, default=1, metavar="R", help="episodes per scenario (pass@k when > 1)")
    evaluate.add_argument("-c", "--concurrency", type=int, default=1, metavar="C", help="episodes played at the same time")
    evaluate.add_argument("--split", default="eval", help="scenario split (default: eval)")
    evaluate.add_argument("--seed", type=int, default=0, help="seed of the scenario order and the episodes")
    evaluate.add_argument("--out", type=Path, default=None, metavar="DIR", help="output folder (default: runs/<env>/<agent>)")
    evaluate.add_argument("--resume", action="store_true", help="finish an interrupted run in --out")
    evaluate.add_argument("--retry-errors", action="store_true", help="with --resume, play again the episodes that failed")
    evaluate.add_argument("--env-kwargs", type=_json_object, default={}, metavar="JSON", help='extra env arguments, e.g. \'{"max_turns": 6}\'')
    evaluate.add_argument("--agent-kwargs", type=_json_object, default={}, metavar="JSON", help='agent arguments, e.g. \'{"temperature": 0.7}\'')
    evaluate.add_argument("--adapter", default=None, metavar="PATH", help="PEFT (LoRA) adapter folder for a local model agent")
    evaluate.add_argument(
        "--user-simulator", default=None, metavar="SPEC",
        help="agent spec (same forms as --agent) that plays the user, for envs with a simulated user "
        "such as affectgym/EmpatheticDialogue-v0 (default: the dataset's scripted user turns)",
    )
    evaluate.add_argument(
        "--max-fail-fraction", type=float, default=0.5, metavar="F",
        help="stop when more than this fraction of the episodes fail (default 0.5)",
    )
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar")
    evaluate.set_defaults(func=run_eval_command)

    report = subparsers.add_parser(
        "report",
        help="figures and report.md from eval run folders (several: side by side)",
        description="Write PNG figures and report.md for one or more `affectgym eval` output folders.",
    )
    report.add_argument("run_dirs", nargs="+", type=Path, metavar="DIR", help="eval output folders")
    report.add_argument("--out", type=Path, default=None, metavar="OUT", help="output folder (default: DIR/report, or ./report for several)")
    report.set_defaults(func=run_report_command)


def run_eval_command(args: argparse.Namespace) -> int:
    """Handler of ``affectgym eval``."""
    import affectgym  # noqa: F401  (registers the built-in envs and plugins)
    from affectgym.eval.runner import EvalConfig, run_eval

    agent_kwargs = dict(args.agent_kwargs)
    if args.adapter is not None:
        agent_kwargs["adapter"] = args.adapter
    out = args.out or Path("runs") / _slug(args.env_id) / _slug(args.agent + (f"+{Path(args.adapter).name}" if args.adapter else ""))
    config = EvalConfig(
        env_id=args.env_id,
        agent=args.agent,
        out=out,
        n=args.examples,
        rollouts=args.rollouts,
        concurrency=args.concurrency,
        split=args.split,
        seed=args.seed,
        resume=args.resume,
        retry_errors=args.retry_errors,
        env_kwargs=args.env_kwargs,
        agent_kwargs=agent_kwargs,
        user_simulator=args.user_simulator,
        max_fail_fraction=args.max_fail_fraction,
        progress=not args.no_progress,
    )
    result = run_eval(config)
    print(f"wrote {result.out / 'results.jsonl'}, summary.json and metadata.json")
    return 0


def run_report_command(args: argparse.Namespace) -> int:
    """Handler of ``affectgym report``."""
    from affectgym.eval.report import write_report

    out = args.out or (args.run_dirs[0] / "report" if len(args.run_dirs) == 1 else Path("report"))
    print(f"wrote {write_report(args.run_dirs, out)}")
    return 0


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}; write an object such as '{{\"max_turns\": 6}}'") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}: {text!r}")
    return value


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text.split("/", 1)[-1] if text.startswith("affectgym/") else text).strip("_")


__all__ = ["register", "run_eval_command", "run_report_command"]
