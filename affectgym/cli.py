"""The ``affectgym`` command.

Subcommands live beside the code they drive; each module in :data:`COMMAND_MODULES`
has a ``register(subparsers)`` that adds its parser and handler. ``eval --from-train RUN`` joins
two of them: eval's parser, with train's handler (reading a run is train's, a layer above eval).
Errors are one line (``affectgym: error: ...``) unless ``--debug`` is given. ``python -m affectgym``
runs the same command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from affectgym._version import __version__
from affectgym.train.commands import run_eval_of_training_run

#: Modules that add subcommands, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "affectgym.commands",
    "affectgym.eval.commands",
    "affectgym.train.commands",
    "affectgym.features.commands",
    "affectgym.eval.data_commands",
    "affectgym.integrations.commands",
    "affectgym.redteam.commands",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="affectgym",
        description="Gymnasium environments for language-model agents on affective tasks.",
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    parser.add_argument("--version", action="version", version=f"affectgym {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    subparsers.choices["eval"].set_defaults(func=run_eval_of_training_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        sys.stderr.close()
        return 141
    except KeyboardInterrupt:
        print("affectgym: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line for users; --debug shows the traceback
        if args.debug:
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"affectgym: error: {message} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
