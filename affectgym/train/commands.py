"""The ``affectgym train`` subcommand.

``affectgym train ENV_ID --model MODEL [--mode flat|multiturn] [--max-steps N] ...`` runs GRPO
(:func:`affectgym.train.grpo.train`); every option comes from a field of
:class:`~affectgym.train.config.TrainConfig`, and ``--config FILE.yaml`` reads them from a file
(``--print-config`` writes one). ``--algo ppo|sac`` hands numeric envs (EmotionState-v0) to
Stable-Baselines3 (:mod:`affectgym.train.sb3`) when that module is installed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from typing import Any

from affectgym.train.config import add_config_arguments, config_from_args, config_to_yaml

SB3_MODULE = "affectgym.train.sb3"


def register(subparsers: Any) -> None:
    """Add ``train`` to the ``affectgym`` command."""
    parser = subparsers.add_parser(
        "train",
        help="train a policy on an environment (GRPO with TRL; PPO/SAC with Stable-Baselines3)",
        description=(
            "GRPO of a language model on an affectgym env with TRL: flat (single-shot prompts, every tool "
            "output pre-rendered) or multiturn (the model calls the env's tools). Writes log_history.json, "
            "reward curves, the LoRA adapter and a held-out base-vs-trained evaluation to --output-dir. "
            "Several GPUs: accelerate launch -m affectgym.cli train ..."
        ),
    )
    add_config_arguments(parser)
    _add_sb3_arguments(parser)
    parser.set_defaults(func=run_train)


def _add_sb3_arguments(parser: argparse.ArgumentParser) -> None:
    """Let the SB3 module add its own options (in their own group) when it is installed.

    Options both define (e.g. ``--seed``, ``--output-dir``) stay the GRPO ones; the SB3
    defaults of those are kept and filled in when ``--algo ppo|sac`` runs.
    """
    if importlib.util.find_spec(SB3_MODULE) is None:
        return
    adder = getattr(importlib.import_module(SB3_MODULE), "add_sb3_arguments", None)
    if adder is None:
        return
    shared = _SharedOptionFilter(parser, parser.add_argument_group("Stable-Baselines3 (--algo ppo|sac)"))
    adder(shared)
    parser.set_defaults(sb3_shared_defaults=shared.defaults)


class _SharedOptionFilter:
    """An argument group that skips options the parser already has, remembering their defaults."""

    def __init__(self, parser: argparse.ArgumentParser, group: Any):
        self.parser = parser
        self.group = group
        self.defaults: dict[str, Any] = {}

    def add_argument(self, *flags: str, **options: Any) -> Any:
        existing = [f for f in flags if f in self.parser._option_string_actions]
        if existing or (flags and not flags[0].startswith("-") and flags[0] in _positional_dests(self.parser)):
            dest = options.get("dest") or _dest(flags)
            self.defaults[dest] = options.get("default")
            return None
        return self.group.add_argument(*flags, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.group, name)


def _positional_dests(parser: argparse.ArgumentParser) -> set[str]:
    return {action.dest for action in parser._actions if not action.option_strings}


def _dest(flags: tuple[str, ...]) -> str:
    longs = [f for f in flags if f.startswith("--")]
    return (longs[0] if longs else flags[0]).lstrip("-").replace("-", "_")


def run_train(args: argparse.Namespace) -> int:
    """Handle ``affectgym train``: print the config, dispatch to SB3, or run GRPO."""
    algo = getattr(args, "algo", None)
    if algo in ("ppo", "sac"):
        if importlib.util.find_spec(SB3_MODULE) is None:
            raise RuntimeError(f"--algo {algo} needs {SB3_MODULE} (Stable-Baselines3 training), which is not installed")
        for dest, default in (getattr(args, "sb3_shared_defaults", None) or {}).items():
            if not hasattr(args, dest):
                setattr(args, dest, default)
        return int(importlib.import_module(SB3_MODULE).run_sb3_from_args(args) or 0)
    config = config_from_args(args)
    if args.print_config:
        sys.stdout.write(config_to_yaml(config))
        return 0
    from affectgym.train.grpo import train

    summary = train(config)
    print(json.dumps(summary, indent=2))
    return 0


__all__ = ["register", "run_train"]
