"""The core subcommands: ``list``, ``validate`` and ``demo``."""

from __future__ import annotations

import argparse
from typing import Any

from affectgym.cli_arguments import json_object_argument


def register(subparsers: Any) -> None:
    """Add ``list``, ``validate`` and ``demo`` to the ``affectgym`` command."""
    listing = subparsers.add_parser("list", help="list every registered environment id")
    listing.add_argument(
        "filter", nargs="?", default=None, metavar="TEXT",
        help="only the envs whose id or summary contains TEXT (any case), e.g. speech or State",
    )
    listing.add_argument("--verbose", "-v", action="store_true", help="print each env's whole docstring")
    listing.add_argument("--datasets", action="store_true",
                         help="list every registered dataset instead (built-in and plug-ins), by kind, "
                         "with the envs that read each kind and the argument that names one")
    listing.set_defaults(func=run_list)

    validating = subparsers.add_parser(
        "validate",
        help="check an env's rewards, determinism and leakage after OpenEnv's RFC 008: a pass/warn/fail table; "
        "exit 0 pass or warn, 1 fail, 2 unknown env or check, 3 internal error",
    )
    validating.add_argument("env_id", metavar="ENV", help="a registered env id, e.g. affectgym/Sarcasm-v0")
    validating.add_argument("--env-kwargs", type=json_object_argument, default={}, metavar="JSON",
                            help='env arguments, e.g. \'{"split": "eval"}\'')
    validating.add_argument("--max-scenarios", type=int, default=20,
                            help="scenarios the per-scenario checks visit, spread over the split (default: 20)")
    validating.add_argument("--seed", type=int, default=0, help="seed of the episodes played (default: 0)")
    validating.add_argument("--replays", type=int, default=20,
                            help="identical replays of verifier_determinism (default: 20)")
    validating.add_argument("--oracle-tolerance", type=float, default=0.05,
                            help="oracle_max: another reply of the env may score this far above the oracle (default: 0.05, at most 0.1)")
    validating.add_argument("--floor-margin", type=float, default=0.1,
                            help="floor_gap: doing nothing must score this far below the oracle (default: 0.1, at least 0.1)")
    validating.add_argument("--variance-tolerance", type=float, default=0.01,
                            help="verifier_determinism: largest reward variance of an LLM-judged env (default: 0.01, at most 0.2)")
    validating.add_argument("--skill-margin", type=float, default=0.05,
                            help="reward_pays_skill: the oracle must beat cheap and wrong replies by this on average (default: 0.05)")
    validating.add_argument("--hack-margin", type=float, default=0.02,
                            help="hack_surface: a red-team reply wins a scenario when it beats the oracle by this (default: 0.02)")
    validating.add_argument("--max-hack-share", type=float, default=0.05,
                            help="hack_surface: largest share of scenarios a red-team family may win (default: 0.05)")
    validating.add_argument("--redteam-budget", type=int, default=8,
                            help="score calls per red-team family per scenario (default: 8; see affectgym redteam)")
    validating.add_argument("--skip", nargs="+", default=[], metavar="CHECK",
                            help="checks not run, by name, e.g. --skip hack_surface reward_pays_skill (the red-team checks)")
    validating.add_argument("--check", action="append", default=None, metavar="CHECK",
                            help="run only this check, by name or id (repeatable: --check oracle_max --check floor_gap; "
                            "a plug-in's checks included); not with --skip")
    output = validating.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON instead of the table")
    output.add_argument("--openenv-yaml", action="store_true",
                        help="print the validation: block of an openenv.yaml instead of the table")
    validating.set_defaults(func=run_validate)

    demo = subparsers.add_parser(
        "demo",
        help="the main job on the embedded defaults: list the envs, play one scripted episode, "
        "warm-start SmolLM2-135M on the tool protocol, train it flat with GRPO on Sarcasm-v0, then watch it play "
        "held-out lines with its own tool calls",
    )
    demo.add_argument("--env", default=None, help="environment of the scripted episode (default: the first built-in one)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the episode and of the training run")
    demo.add_argument("--out", default="runs/demo", help="output folder of the training demo (default: runs/demo)")
    demo.add_argument("--no-train", action="store_true", help="only list the envs and play the scripted episode")
    demo.set_defaults(func=run_demo)


def run_list(args: argparse.Namespace) -> int:
    """Print every affectgym id (or those matching ``args.filter``) with the first line of its docstring."""
    import affectgym
    from affectgym.envs.registration import env_summary

    if getattr(args, "datasets", False):
        _print_datasets()
        return 0
    ids = affectgym.list_envs()
    if not ids:
        print("no affectgym environments are registered")
        return 0
    text = (getattr(args, "filter", None) or "").lower()
    if text:
        matching = [env_id for env_id in ids if text in env_id.lower() or text in env_summary(env_id).lower()]
        if not matching:
            print(f"no environment id or summary contains {args.filter!r}; registered: {', '.join(ids)}")
            return 1
        ids = matching
    width = max(map(len, ids))
    for env_id in ids:
        if args.verbose:
            import gymnasium as gym
            from gymnasium.envs.registration import load_env_creator

            print(f"{env_id}\n{load_env_creator(gym.spec(env_id).entry_point).__doc__}\n")
        else:
            print(f"{env_id:<{width}}  {env_summary(env_id)}")
    return 0


def _print_datasets() -> None:
    """Print every registered dataset, plug-ins' included, kind by kind: a heading naming the envs that read
    the kind, the argument that names a dataset and the plug-ins' entry-point group, then a line a dataset."""
    import inspect

    # Importing a kind's module registers its built-in datasets.
    from affectgym.data import dialogues, instructions  # noqa: F401
    from affectgym.data.registry import KINDS, datasets
    from affectgym.data.speech_datasets import speech_datasets

    by_kind = {kind: speech_datasets() if kind == "speech" else datasets(kind) for kind in KINDS}
    width = max(len(name) for named in by_kind.values() for name in named)
    for number, (kind, named) in enumerate(by_kind.items()):
        declared = KINDS[kind]
        print(("\n" if number else "") + f"{kind} datasets ({declared.argument}= of {', '.join(declared.envs)}; "
              f"plug-ins: entry-point group {declared.group})")
        for name, dataset in sorted(named.items()):
            if kind == "speech":
                about = f"{dataset.summary} ({'data_dir needed' if dataset.needs_data_dir else 'no data_dir'})"
            else:  # a text kind's dataset is its loader, described by its docstring
                about = (inspect.getdoc(dataset) or "").split("\n", 1)[0].replace("``", "")
            print(f"  {name:<{width}}  {about}".rstrip())


def run_validate(args: argparse.Namespace) -> int:
    """Handle ``affectgym validate``: print the table (rich on a terminal, plain lines otherwise), the JSON
    report or the ``validation:`` block; return ``openenv validate``'s exit code."""
    import sys

    from affectgym.envs.validation import (
        EXIT_INTERNAL,
        EXIT_UNSUPPORTED,
        CheckPluginError,
        UnknownEnvError,
        ValidationDeclaration,
        check_ids,
        validate,
    )

    if args.check and args.skip:
        print("affectgym validate: give --check (the only checks run) or --skip (the checks left out), not both",
              file=sys.stderr)
        return EXIT_UNSUPPORTED
    option, names = ("--check", args.check) if args.check else ("--skip", args.skip)
    try:
        selected = check_ids(names)
    except CheckPluginError as exc:  # a broken plug-in: the validation itself cannot run
        print(f"affectgym validate: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    except ValueError as exc:
        print(f"affectgym validate: {option}: {exc}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    checks, skip = (selected, ()) if args.check else (None, selected)

    # a tolerance outside OpenEnv's bounds fails as a declaration does there (exit 1, one line naming the bound)
    declaration = ValidationDeclaration(
        oracle_tolerance=args.oracle_tolerance, floor_margin=args.floor_margin, variance_tolerance=args.variance_tolerance,
        skill_margin=args.skill_margin, hack_margin=args.hack_margin, max_hack_share=args.max_hack_share,
        redteam_budget=args.redteam_budget,
    )
    try:
        report = validate(args.env_id, env_kwargs=args.env_kwargs, declaration=declaration,
                          max_scenarios=args.max_scenarios, seed=args.seed, replays=args.replays, skip=skip,
                          checks=checks)
        if args.json:
            print(report.to_json())
        elif args.openenv_yaml:
            print(report.to_openenv_yaml(), end="")
        else:
            _print_validation_table(report)
    except UnknownEnvError as exc:
        print(f"affectgym validate: {exc}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    except Exception as exc:  # openenv validate's exit code 3: the validation itself could not run
        if args.debug:
            raise
        print(f"affectgym validate: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return EXIT_INTERNAL
    return report.exit_code


def _print_validation_table(report: Any) -> None:
    """The report as a rich table on a terminal; plain lines (``str(report)``) in a pipe, a file or without rich."""
    import sys

    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(report)
        return
    if not sys.stdout.isatty():
        print(report)
        return
    colours = {"pass": "green", "warn": "yellow", "skip": "yellow", "fail": "red", "error": "red"}
    table = Table(title=f"validate {report.target} (OpenEnv RFC 008, policy v2)")
    for column in ("check", "status", "evidence"):
        table.add_column(column)
    for name, status, evidence in report.rows():
        table.add_row(name, f"[{colours[status]}]{status}[/]", evidence)
    console = Console()
    console.print(table)
    for result in report.results:
        if result.remediation and result.status != "pass":
            console.print(f"{result.name}: {result.remediation}", markup=False)
    console.print(f"verdict: [{colours[report.verdict]}]{report.verdict.upper()}[/]")


def run_demo(args: argparse.Namespace) -> int:
    """List the environments, replay one reference episode, then (unless ``--no-train``) the training demo."""
    import affectgym

    ids = affectgym.list_envs()
    if args.env is not None and args.env not in ids:
        raise ValueError(f"unknown environment {args.env!r}; registered: {', '.join(ids) or 'none'}")
    run_list(argparse.Namespace(verbose=False))
    if not ids:
        return 0
    env_id = args.env or ids[0]
    print(f"\n=== one scripted episode of {env_id} (seed {args.seed}), played by the env's reference agent: "
          "its tool calls, then the gold answer (no model) ===\n")
    play_reference_episode(env_id, seed=args.seed)
    if args.no_train:
        return 0
    from affectgym.library_output import library_noise_hidden
    from affectgym.train.demo import run_demo as run_training_demo

    print("\n=== training demo: train flat, play with tools ===\n")
    with library_noise_hidden():  # the demo shows its own progress
        run_training_demo(args.out, seed=args.seed)
    return 0


def play_reference_episode(env_id: str, seed: int = 0) -> float:
    """Play the env's own reference answer (its reference agent) through reset/step; print the transcript and the gold label."""
    import json

    import affectgym

    env = affectgym.make(env_id, render_mode="ansi")
    base = env.unwrapped
    _, info = env.reset(seed=seed)
    final_text, trace = base.reference_answer(base.scenario)
    total = 0.0
    for entry in trace:
        if entry.get("type") == "tool_call":
            call = {"name": entry["name"], "arguments": entry.get("arguments", {})}
            _, reward, *_ = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
            total += reward
    _, reward, terminated, truncated, info = env.step(final_text)
    total += reward
    print(env.render())
    components = ", ".join(f"{k}={v:.3f}" for k, v in info["reward_components"].items() if v is not None)
    print(f"episode reward {total:.3f} ({components})")
    outcome = info.get("outcome") or {}
    if "label" in outcome:
        print(f"gold label {outcome['label']!r}, answered {outcome.get('prediction')!r}")
    env.close()
    return total
