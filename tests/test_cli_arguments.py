"""Specification of a subcommand whose options are a dataclass's fields (affectgym.cli_arguments)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from affectgym.cli_arguments import add_dataclass_command, json_object_argument


@dataclass
class ProbeOptions:
    """Options of a probe command."""

    env_id: str | None = field(default=None, metadata={"positional": True, "metavar": "ENV_ID", "help": "the env"})
    examples: int | None = field(default=None, metadata={"aliases": ["-n"], "metavar": "N", "help": "how many"})
    out: Path | None = field(default=None, metadata={"help": "where"})
    level: Literal["low", "high"] = field(default="low", metadata={"help": "how loud"})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={"type": json_object_argument, "help": "env args"})
    env_url: list[str] | None = field(default=None, metadata={"action": "append", "help": "a served env"})
    resume: bool = field(default=False, metadata={"help": "go on"})


@dataclass
class ProbeEndpoint:
    """Flags of the endpoint."""

    _argument_group_name = "endpoint"
    temperature: float | None = field(default=None, metadata={"aliases": ["-T"], "help": "sampling temperature"})


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="affectgym")
    add_dataclass_command(parser.add_subparsers(dest="command"), "probe", [ProbeOptions, ProbeEndpoint], print,
                          help="a probe", description="Probe the options.")
    return parser


def test_each_field_is_an_option_with_its_type_alias_switch_and_repeats():
    args = _parser().parse_args(["probe", "--resume", "affectgym/Toy-v0", "-n", "3", "--out", "runs", "-T", "0.5",
                                 "--env-kwargs", '{"max_turns": 2}', "--env-url", "ws://a:1", "--env-url", "ws://b:2"])
    assert (args.env_id, args.examples, args.out, args.temperature) == ("affectgym/Toy-v0", 3, Path("runs"), 0.5)
    assert args.resume is True and args.env_kwargs == {"max_turns": 2} and args.env_url == ["ws://a:1", "ws://b:2"]
    assert args.func is print and args.command == "probe"


def test_unset_options_take_the_fields_defaults():
    args = _parser().parse_args(["probe"])
    assert vars(args) | {"func": None} == {
        "command": "probe", "func": None, "env_id": None, "examples": None, "out": None, "level": "low", "env_kwargs": {},
        "env_url": None, "resume": False, "temperature": None,
    }


@pytest.mark.parametrize(("argv", "message"), [
    (["-n", "x"], "affectgym probe: error: argument -n/--examples: invalid int value: 'x'"),
    (["--level", "loud"], "affectgym probe: error: argument --level: invalid choice: 'loud' (choose from 'low', 'high')"),
    (["--env-kwargs", "[1]"], "affectgym probe: error: argument --env-kwargs: expected a JSON object, got list: '[1]'"),
    (["affectgym/Toy-v0", "--resume", "true"], "affectgym: error: unrecognized arguments: true"),  # a switch takes no value
    (["affectgym/Toy-v0", "--env_kwargs", "{}"], "affectgym: error: unrecognized arguments: --env_kwargs {}"),  # dashes only
])
def test_a_usage_error_exits_2_naming_the_option_as_argparse_does(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _parser().parse_args(["probe", *argv])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == message


def test_help_shows_every_option_with_its_help_and_a_dataclass_group(capsys):
    with pytest.raises(SystemExit) as exit_info:
        _parser().parse_args(["probe", "--help"])
    assert exit_info.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert shown.startswith("usage: affectgym probe [-h] [-n N] [--out OUT] [--level {low,high}]")
    for text in ("Probe the options.", "ENV_ID the env", "-n N, --examples N how many", "--resume go on",
                 "endpoint: Flags of the endpoint. -T TEMPERATURE, --temperature TEMPERATURE sampling temperature"):
        assert text in shown


def test_a_bool_option_defaulting_to_true_is_refused_naming_it():
    @dataclass
    class Backwards:
        progress: bool = field(default=True, metadata={"help": "show progress"})

    parser = argparse.ArgumentParser(prog="affectgym")
    add_dataclass_command(parser.add_subparsers(), "backwards", [Backwards], print, help="", description="")
    with pytest.raises(TypeError, match="option 'progress': a bool option is a switch, false unless given"):
        parser.parse_args(["backwards"])
