"""``affectgym train``'s options, read through TRL's ``TrlParser``: the command line, a YAML file, a recipe.

:func:`make_parser` builds the parser as TRL's own scripts build theirs: a ``TrlParser`` of
:class:`~affectgym.train.config.TrainConfig` and of the command's own switches
(:class:`TrainSwitches`), one option per field (``max_steps``: ``--max-steps`` or ``--max_steps``)
with the field's help, grouped by the algorithms it applies to, ENV_ID positional.
:func:`parse_train_args` reads, lowest first: the dataclass defaults, a named recipe's values
(``--recipe NAME``, :mod:`affectgym.train.recipes`), the YAML file (``--config FILE.yaml``) and
the options on the command line. :func:`load_config` reads a run's ``config.yaml`` the same way.

>>> config, switches = parse_train_args(["affectgym/Sarcasm-v0", "--max-steps", "3", "--print-config"])
>>> config.max_steps, config.mode, switches.print_config
(3, 'flat', True)
>>> parse_train_args(["--recipe", "sarcasm-cpu", "--max-steps", "12"])[0].warmup_steps  # derived from max_steps
2
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from trl import TrlParser

from affectgym.train.config import (
    DEMOS,
    DPO,
    GRPO,
    LM,
    SAMPLING,
    SB3,
    SFT,
    TrainConfig,
    type_problem,
)
from affectgym.train.recipes import RECIPES, recipe_config
from affectgym.yaml_files import YamlFileError, load_yaml_file

#: Argument-group titles of ``affectgym train --help``, by the algorithms a field applies to (its ``metadata["algos"]``).
ALGO_GROUPS = {
    LM: "language models (--algo grpo|sft|dpo, text envs)",
    DEMOS: "demonstrations (--algo sft, and --algo grpo's anchor)",
    SAMPLING: "sampling from the policy (--algo grpo|dpo, and --algo sft --best-of)",
    GRPO: "GRPO (--algo grpo)",
    SFT: "supervised warm start (--algo sft)",
    DPO: "preference optimisation from the env's reward (--algo dpo)",
    SB3: "Stable-Baselines3 (--algo ppo|sac, numeric envs)",
}
DESCRIPTION = (
    "--algo grpo (default): GRPO of a language model on a text env with TRL, flat (single-shot prompts, every tool "
    "output pre-rendered) or multiturn (the model calls the env's tools); writes config.yaml, log_history.json, reward "
    "curves, the LoRA adapter and a held-out base-vs-trained evaluation to --output-dir. --algo sft: a supervised warm "
    "start on demonstrations; --algo dpo: rounds of DPO on pairs of the policy's own replies ranked by the env's reward. "
    "--algo ppo|sac: Stable-Baselines3 on a numeric env (default affectgym/EmotionState-v0); writes config.yaml, "
    "model.zip, learning_curve.png and summary.json. Options of the other algorithms are refused. Lowest first: the "
    "defaults, --recipe, --config FILE.yaml, the options given. Several GPUs: accelerate launch -m affectgym.cli train ..."
)
_FIELDS = tuple(item.name for item in dataclasses.fields(TrainConfig))
#: The default of every run option in the first reading of the arguments: "not given".
_NOT_GIVEN = object()


@dataclass
class TrainSwitches:
    """What ``affectgym train`` does with the configuration: options of the command, not of the run."""

    recipe: str | None = field(
        default=None,
        metadata={"help": "start from a named, measured recipe (the --config file and the options given win); "
                          "see --list-recipes", "choices": list(RECIPES), "metavar": "NAME"},
    )
    list_recipes: bool = field(default=False, metadata={"help": "list the recipes and exit"})
    print_config: bool = field(
        default=False,
        metadata={"help": "print the resulting configuration as YAML (the options of its --algo) and exit without training"},
    )
    overwrite: bool = field(
        default=False,
        metadata={"help": "train into an --output-dir that holds an earlier run, deleting that run's files first"},
    )
    resume: bool = field(
        default=False,
        metadata={"help": "continue the interrupted run in --output-dir (same options) from its last checkpoint, "
                          "or finish its held-out evaluation"},
    )


class ConfigFileError(ValueError):
    """A ``--config`` file that is no YAML mapping of known options, each given once; the message names the file."""


class RepeatableValues(argparse.Action):
    """``nargs="+"`` whose repeats add up (``--demos A --demos B`` is ``--demos A B``); what is given replaces the default."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        earlier = getattr(namespace, self.dest)
        setattr(namespace, self.dest, [*([] if earlier is self.default else earlier), *values])


class TrainParser(TrlParser):
    """The ``TrlParser`` of :class:`TrainConfig` and :class:`TrainSwitches`, and ``--config FILE.yaml``.

    On top of ``HfArgumentParser``'s options: a field's ``metadata["algos"]`` picks its argument
    group, ``metadata["by_algo"]`` is said in its help; ENV_ID is positional; a ``bool | None``
    option alone means true (``--bf16``; ``--bf16 false``); a list option may be repeated; a
    mapping is written ``key=value,...`` or as a JSON object (:func:`parse_mapping`); a run
    option's text value in the YAML file is read by the option's type, so ``learning_rate: 1e-5``
    is a number, and one the type cannot read is refused naming the field.
    """

    def __init__(self, prog: str = "affectgym train", **kwargs: Any) -> None:
        super().__init__([TrainConfig, TrainSwitches], prog=prog, description=DESCRIPTION, **kwargs)

    def _add_dataclass_arguments(self, dtype: type) -> None:
        if dtype is TrainConfig:
            self._groups = {algos: self.add_argument_group(title) for algos, title in ALGO_GROUPS.items()}
        else:
            command = self.add_argument_group("the command")
            # TrlParser reads the file named after --config before argparse parses: this option is its --help line
            command.add_argument("--config", metavar="FILE.yaml",
                                 help="read options from a YAML file (the options given win over it); see --print-config")
            self._groups = {None: command}
        super()._add_dataclass_arguments(dtype)

    def _parse_dataclass_field(self, parser: argparse.ArgumentParser, field: dataclasses.Field) -> None:
        """HfArgumentParser's option of ``field``, in its algorithm's group, with affectgym's metadata kept from argparse."""
        metadata = dict(field.metadata)
        algos, by_algo = metadata.pop("algos", None), metadata.pop("by_algo", None)
        if by_algo:
            metadata["help"] += "; unset: " + ", ".join(f"{value} with {algo}" for algo, value in by_algo.items())
        if metadata.pop("positional", False):
            parser.add_argument(field.name, nargs="?", default=field.default, metavar=field.name.upper(), **metadata)
            return
        shown = copy.copy(field)
        if field.type == bool | None:
            metadata.update(nargs="?", const=True)
        elif typing.get_origin(field.type) is list:
            metadata["action"] = RepeatableValues
        elif typing.get_origin(field.type) is dict:
            shown.type = parse_mapping
            metadata["metavar"] = "K=V,..."
        shown.metadata = metadata
        super()._parse_dataclass_field(self._groups.get(algos, parser), shown)

    def set_defaults_with_config(self, **values: Any) -> list[str]:
        """TrlParser's, with each run option's text value read by the option's type first (not left to argparse)."""
        for action in self._actions:
            value = values.get(action.dest)
            if action.dest in _FIELDS and isinstance(value, str) and action.type is not None:
                try:
                    values[action.dest] = action.type(value)
                except (TypeError, ValueError, argparse.ArgumentTypeError):
                    raise ValueError(f"invalid training config: {type_problem(action.dest, value)}") from None
        return super().set_defaults_with_config(**values)


def make_parser(prog: str = "affectgym train", **kwargs: Any) -> TrainParser:
    """The parser of ``affectgym train``'s arguments (``kwargs``: ``argparse.ArgumentParser``'s)."""
    return TrainParser(prog, **kwargs)


def parse_train_args(argv: Sequence[str]) -> tuple[TrainConfig, TrainSwitches]:
    """The run's configuration and the command's switches from the words after ``affectgym train``.

    Lowest first: :class:`TrainConfig`'s defaults, the recipe's values (``--recipe NAME``, or
    ``recipe: NAME`` in the file; the recipe sees the options given, so what it derives from
    them follows), the ``--config`` YAML file, the options on the command line.

    Raises:
        SystemExit: ``--help`` (status 0), or a usage error (argparse's message, status 2).
        FileNotFoundError: No ``--config`` file there.
        ConfigFileError: The ``--config`` file is no YAML, sets an unknown option (each named), gives
            an option twice, or is beyond :class:`~affectgym.yaml_files.YamlLimits` (too many aliases,
            values or levels: :func:`~affectgym.yaml_files.load_yaml_file`).
        ValueError: An invalid value or combination (named as :class:`TrainConfig` names it), or a recipe's refusal.
    """
    argv = list(argv)
    parser = make_parser()
    config_file = None
    if "--config" in argv:  # TrlParser reads the word after the first --config
        if argv[-1] == "--config":
            parser.error("argument --config: expected one argument")
        config_file = argv[argv.index("--config") + 1]
        if not Path(config_file).is_file():
            raise FileNotFoundError(f"config file {config_file!r} does not exist; write one with --print-config")
    try:
        if config_file is not None:
            # TrlParser reads the file again (yaml.safe_load), and only once it is known to be within limits
            load_yaml_file(config_file, what="config file")
        switches, given = _switches_and_given_options(argv)
        if switches.recipe and not {"-h", "--help"} & set(argv):
            parser.set_defaults_with_config(**dataclasses.asdict(recipe_config(switches.recipe, given)))
        config, switches, extra, file_unknown, unknown = parser.parse_args_and_config(
            argv, return_remaining_strings=True, separate_remaining_strings=True
        )
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"{config_file}: not a YAML file of option: value lines ({' '.join(str(exc).split())})") from None
    except YamlFileError as exc:
        raise ConfigFileError(str(exc)) from None
    if extra.config is not None:
        parser.error("--config takes one file, after a space: --config FILE.yaml")
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if file_unknown:
        named = [word.removeprefix("--") for word in file_unknown[::2]]
        raise ConfigFileError(f"{config_file}: unknown option(s) {named}; accepted: {', '.join(_FIELDS)}")
    return config, switches


def _switches_and_given_options(argv: list[str]) -> tuple[TrainSwitches, dict[str, Any]]:
    """The switches, and the run options the command line and the ``--config`` file give (no default filled in)."""
    parser = make_parser(add_help=False)
    parser.dataclass_types = [TrainSwitches]  # the run options come back in a namespace: no TrainConfig is checked yet
    parser.set_defaults_with_config(**dict.fromkeys(_FIELDS, _NOT_GIVEN))
    switches, options, _ = parser.parse_args_and_config(argv, return_remaining_strings=True)
    return switches, {name: value for name, value in vars(options).items() if name in _FIELDS and value is not _NOT_GIVEN}


def load_config(path: str | Path) -> TrainConfig:
    """A configuration from a YAML file, such as a run's ``config.yaml``, read as ``affectgym train --config PATH``.

    Raises:
        FileNotFoundError: No such file.
        ValueError: The file is not YAML, is beyond the limits of :func:`~affectgym.yaml_files.load_yaml_file`,
            or sets an unknown option or an invalid value; the file is named.
    """
    try:
        return parse_train_args(["--config", str(path)])[0]
    except ConfigFileError:
        raise
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def parse_mapping(text: str) -> dict[str, Any]:
    """Read ``key=value,key=value`` or a JSON object; values are JSON when they parse.

    >>> parse_mapping("pivot=2")
    {'pivot': 2}
    >>> parse_mapping('{"max_turns": 4, "split": "train"}')
    {'max_turns': 4, 'split': 'train'}
    >>> parse_mapping("")
    {}
    """
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {text!r}")
        return value
    result: dict[str, Any] = {}
    for item in text.split(","):
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value pairs separated by commas (or a JSON object), got {text!r}")
        try:
            result[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            result[key.strip()] = raw.strip()
    return result


__all__ = [
    "ConfigFileError", "TrainParser", "TrainSwitches", "load_config", "make_parser", "parse_mapping", "parse_train_args",
]
