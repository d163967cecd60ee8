"""What the ``affectgym`` subcommands share in reading their arguments; the bottom of the command modules, importing no affectgym module outside it.

A subcommand declares its options as a dataclass, one field per option, as TRL's scripts and
``affectgym train`` do (:mod:`affectgym.train.config_parser`): :func:`add_dataclass_command`
registers it, and the words after the command's name are read by ``transformers.HfArgumentParser``
(:class:`~affectgym.cli_arguments.dataclass_parser.DataclassParser`, a module of its own so that it
is imported, with transformers, only when such a command is parsed and ``affectgym --help`` stays
fast). A field is an option as ``HfArgumentParser`` makes it, its type converting the
value (``int | None``, ``Path``, ``Literal[...]`` for choices), ``metadata`` giving ``help``,
``aliases`` (``["-n"]``), ``choices`` and ``metavar``; on top of that, for the spellings the
commands have always had:

* the option is ``--name-with-dashes`` alone, after its aliases (``-n/--examples``);
* a ``bool`` field is a switch, false unless given (``--resume``);
* ``metadata["positional"]``: an argument without a dash, optional when the field has a default;
* ``metadata["type"]``: the function that reads the value, in place of the annotation's type
  (:func:`json_object_argument` for a ``dict``);
* ``metadata["action"] == "append"``: the option may be repeated, one value each time.

A dataclass with an ``_argument_group_name`` (``HfArgumentParser``'s convention) is an argument
group of ``--help``, its docstring the group's description.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any


def json_object_argument(text: str) -> dict[str, Any]:
    """An argparse ``type`` for a JSON object option such as ``--env-kwargs '{"max_turns": 6}'``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}; write an object such as '{{\"max_turns\": 6}}'") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}: {text!r}")
    return value


def add_dataclass_command(
    subparsers: argparse._SubParsersAction, name: str, option_types: Sequence[type], handler: Callable[[argparse.Namespace], int],
    *, help: str, description: str,
) -> argparse.ArgumentParser:
    """Add the subcommand ``name``, whose options are the fields of the dataclasses ``option_types``.

    The subcommand's own parser takes every word after ``name`` as it is (as ``affectgym train``'s
    does); :class:`DataclassOptions` reads them with a
    :class:`~affectgym.cli_arguments.dataclass_parser.DataclassParser`, so ``--help`` and
    usage errors are that parser's (``affectgym NAME: error: ...``, status 2), and sets one
    attribute of the namespace per field; ``func`` is ``handler``.

    Returns:
        The subcommand's parser (its ``set_defaults`` can change the handler).
    """
    command = subparsers.add_parser(name, help=help, description=description, add_help=False, prefix_chars="\0")
    command.add_argument("words", nargs=argparse.REMAINDER, action=DataclassOptions, option_types=tuple(option_types),
                         default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    command.set_defaults(func=handler)
    return command


class DataclassOptions(argparse.Action):
    """The words after a subcommand, read by a ``DataclassParser`` into the namespace, one attribute per field.

    Words no option takes are left to the top parser, as argparse's subcommands leave them, so
    they are refused as ``affectgym: error: unrecognized arguments: ...``.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *, option_types: tuple[type, ...], **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.option_types = option_types

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        # imported when a command is parsed: it imports transformers
        from affectgym.cli_arguments.dataclass_parser import DataclassParser

        reader = DataclassParser(self.option_types, prog=parser.prog, description=parser.description)
        *options, unrecognized = reader.parse_args_into_dataclasses(values, return_remaining_strings=True, look_for_args_file=False)
        for parsed in options:
            vars(namespace).update(vars(parsed))
        if unrecognized:
            vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, []).extend(unrecognized)


__all__ = ["DataclassOptions", "add_dataclass_command", "json_object_argument"]
