"""The ``transformers.HfArgumentParser`` of a subcommand's option dataclasses, with affectgym's spellings.

Imported when such a command is parsed (:class:`affectgym.cli_arguments.DataclassOptions`), not
with the package: it imports transformers, as :mod:`affectgym.train.config_parser` imports TRL.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import inspect
import typing
from collections.abc import Sequence
from typing import Any

from transformers import HfArgumentParser


class DataclassParser(HfArgumentParser):
    """``HfArgumentParser`` of the dataclasses ``option_types``, each field an option as :mod:`affectgym.cli_arguments` says.

    On top of ``HfArgumentParser``'s options: ``--name-with-dashes`` alone, after the aliases; a
    ``bool`` is a switch; ``metadata["positional"]``, ``metadata["type"]`` and
    ``metadata["action"] == "append"``; a dataclass's docstring describes its argument group. The
    help is argparse's plain one (each option's help says its default where it matters).

    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Probe:
    ...     examples: int | None = field(default=None, metadata={"aliases": ["-n"], "help": "how many"})
    ...     resume: bool = field(default=False, metadata={"help": "go on"})
    >>> DataclassParser([Probe], prog="affectgym probe").parse_args_into_dataclasses(["-n", "3", "--resume"])
    (Probe(examples=3, resume=True),)
    """

    def __init__(self, option_types: Sequence[type], *, prog: str, description: str | None = None) -> None:
        super().__init__(list(option_types), prog=prog, description=description, formatter_class=argparse.HelpFormatter)

    def _add_dataclass_arguments(self, dtype: type) -> None:
        """Each field's argument, in the dataclass's argument group if it names one (the fields themselves left as they are)."""
        group_name = getattr(dtype, "_argument_group_name", None)
        parser = self if group_name is None else self.add_argument_group(group_name, inspect.getdoc(dtype))
        hints = typing.get_type_hints(dtype)
        for field in dataclasses.fields(dtype):
            shown = copy.copy(field)
            shown.type = hints[field.name]
            self._parse_dataclass_field(parser, shown)

    def _parse_dataclass_field(self, parser: argparse.ArgumentParser | argparse._ArgumentGroup, field: dataclasses.Field) -> None:
        """``HfArgumentParser``'s argument of ``field`` (its type, default, choices, help), added with affectgym's spellings."""
        metadata = dict(field.metadata)
        positional = metadata.pop("positional", False)
        switch = field.type is bool
        field.type = metadata.pop("type", field.type)
        field.metadata = metadata
        if switch and field.default is not False:
            raise TypeError(f"option {field.name!r}: a bool option is a switch, false unless given; its default must be False")
        recorded = _RecordedArguments()
        super()._parse_dataclass_field(recorded, field)
        kwargs = recorded.calls[0]  # the field's own option
        if switch:
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


class _RecordedArguments:
    """Stands in for a parser to keep the keywords ``HfArgumentParser`` would add one field's option with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        self.calls.append(kwargs)


__all__ = ["DataclassParser"]
