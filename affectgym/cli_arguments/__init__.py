"""What the ``affectgym`` subcommands share in reading their arguments; the bottom of the command modules, importing no other affectgym module.

A subcommand declares its options as a dataclass, one field per option, as TRL's scripts and
``affectgym train`` do (:mod:`affectgym.train.config_parser`): :func:`add_dataclass_command`
registers it, and the words after the command's name are read by ``transformers.HfArgumentParser``
(:func:`dataclass_parser`) when the command line is parsed, so ``affectgym --help`` loads no
transformers. A field is an option as ``HfArgumentParser`` makes it, its type converting the
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
import copy
import dataclasses
import inspect
import json
import typing
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
    does); :class:`DataclassOptions` reads them with :func:`dataclass_parser`, so ``--help`` and
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
    """The words after a subcommand, read by :func:`dataclass_parser` into the namespace, one attribute per field.

    Words no option takes are left to the top parser, as argparse's subcommands leave them, so
    they are refused as ``affectgym: error: unrecognized arguments: ...``.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *, option_types: tuple[type, ...], **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.option_types = option_types

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        reader = dataclass_parser(self.option_types, prog=parser.prog, description=parser.description)
        *options, unrecognized = reader.parse_args_into_dataclasses(values, return_remaining_strings=True, look_for_args_file=False)
        for parsed in options:
            vars(namespace).update(vars(parsed))
        if unrecognized:
            vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, []).extend(unrecognized)


def dataclass_parser(option_types: Sequence[type], *, prog: str, description: str | None = None) -> argparse.ArgumentParser:
    """A ``transformers.HfArgumentParser`` of the dataclasses ``option_types``, their fields read as the module docstring says.

    Its help is argparse's plain one (each option's help says its default where it matters).
    """
    from transformers import HfArgumentParser

    parser = HfArgumentParser(prog=prog, description=description, formatter_class=argparse.HelpFormatter)
    for option_type in option_types:
        group_name = getattr(option_type, "_argument_group_name", None)
        group = parser if group_name is None else parser.add_argument_group(group_name, inspect.getdoc(option_type))
        hints = typing.get_type_hints(option_type)
        for field in dataclasses.fields(option_type):
            _add_field_argument(group, field, hints[field.name])
    parser.dataclass_types = list(option_types)
    return parser


class _RecordedArguments:
    """Stands in for a parser to keep what ``HfArgumentParser`` would add for one field."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        self.calls.append((names, kwargs))


def _add_field_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup, field: dataclasses.Field, hint: Any) -> None:
    """Add ``field``'s argument to ``parser``: ``HfArgumentParser``'s, with affectgym's spellings (module docstring)."""
    from transformers import HfArgumentParser

    metadata = dict(field.metadata)
    positional = metadata.pop("positional", False)
    shown = copy.copy(field)
    shown.type = metadata.pop("type", hint)
    shown.metadata = metadata
    recorded = _RecordedArguments()
    HfArgumentParser._parse_dataclass_field(recorded, shown)
    _, kwargs = recorded.calls[0]
    if hint is bool:
        for key in ("type", "nargs", "const"):
            kwargs.pop(key)
        kwargs["action"] = "store_true"
    if kwargs.get("action") == "append":
        kwargs.pop("nargs", None)
    if positional:
        if not kwargs.pop("required", False) and "nargs" not in kwargs:
            kwargs["nargs"] = "?"
        parser.add_argument(field.name, **kwargs)
        return
    aliases = metadata.get("aliases", [])
    parser.add_argument(*([aliases] if isinstance(aliases, str) else aliases), "--" + field.name.replace("_", "-"), **kwargs)


__all__ = ["DataclassOptions", "add_dataclass_command", "dataclass_parser", "json_object_argument"]
