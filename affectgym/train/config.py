"""The training configuration: one dataclass, from which the CLI options and the YAML come.

Every field of :class:`TrainConfig` carries its help text in ``metadata["help"]``.
:func:`add_config_arguments` turns the fields into ``argparse`` options (``max_steps`` ->
``--max-steps``), :func:`config_to_yaml` writes a commented YAML file and
:func:`load_config` reads one back; on the command line, options given explicitly win over
the YAML file, which wins over the defaults.

>>> config = TrainConfig(env_id="affectgym/Sarcasm-v0", max_steps=3)
>>> config.max_steps, config.mode
(3, 'flat')
>>> "max_steps: 3" in config_to_yaml(config)
True
>>> load_config_text(config_to_yaml(config)) == config
True
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass
class TrainConfig:
    """Options of a GRPO run (``affectgym train``); see each field's help."""

    env_id: str = field(default="", metadata=_help("environment id, e.g. affectgym/Sarcasm-v0", positional=True))
    model: str = field(
        default="smollm2-135m",
        metadata=_help("policy model: an alias (smollm2-135m), a local folder or a hub id"),
    )
    mode: Literal["flat", "multiturn"] = field(
        default="flat",
        metadata=_help(
            "flat: single-shot prompts with every tool output pre-rendered; "
            "multiturn: the policy calls the env's tools through TRL's environment_factory"
        ),
    )
    algo: Literal["grpo", "ppo", "sac"] = field(
        default="grpo",
        metadata=_help("grpo (TRL, text envs); ppo or sac (Stable-Baselines3, numeric envs such as EmotionState-v0)"),
    )
    max_steps: int = field(default=50, metadata=_help("optimizer steps"))
    num_generations: int = field(default=4, metadata=_help("completions per prompt (the GRPO group size)"))
    batch_size: int = field(
        default=8, metadata=_help("completions per device per step (a multiple of --num-generations)")
    )
    gradient_accumulation_steps: int = field(default=1, metadata=_help("steps accumulated per optimizer step"))
    learning_rate: float = field(default=1e-5, metadata=_help("peak learning rate"))
    warmup_steps: int = field(
        default=0, metadata=_help("optimizer steps of linear learning-rate warmup before the linear decay")
    )
    scale_rewards: Literal["group", "batch", "none"] = field(
        default="group",
        metadata=_help("advantage scaling: by each group's reward std (group), the batch's (batch) or none"),
    )
    max_completion_length: int = field(default=128, metadata=_help("most tokens generated per completion"))
    temperature: float = field(default=1.0, metadata=_help("sampling temperature of the rollouts"))
    beta: float = field(default=0.0, metadata=_help("KL coefficient (0 = no reference model)"))
    lora_r: int = field(default=16, metadata=_help("LoRA rank; 0 trains the full model"))
    lora_alpha: int = field(default=32, metadata=_help("LoRA alpha"))
    lora_dropout: float = field(default=0.05, metadata=_help("LoRA dropout"))
    lora_target_modules: str = field(
        default="auto",
        metadata=_help("comma-separated module names, or auto (q_proj,k_proj,v_proj,o_proj for llama/qwen/mistral)"),
    )
    lora_layers: int = field(
        default=0,
        metadata=_help("adapt only the last N transformer layers (a shorter backward pass on CPU); 0 = every layer"),
    )
    output_dir: str = field(default="runs/train", metadata=_help("where logs, figures, adapter and eval go"))
    eval_episodes: int = field(
        default=32, metadata=_help("held-out episodes for the base-vs-trained evaluation at the end; 0 skips it")
    )
    eval_every_steps: int = field(
        default=0,
        metadata=_help("flat mode: greedy held-out evaluation every N steps into heldout.jsonl (the learning curve); 0 = off"),
    )
    use_vllm: bool = field(default=False, metadata=_help("generate with vLLM (GPU only)"))
    vllm_mode: Literal["colocate", "server"] = field(
        default="colocate", metadata=_help("vLLM in the training process (colocate) or a trl vllm-serve server")
    )
    bf16: bool | None = field(default=None, metadata=_help("bf16 weights and autocast; default: on with a GPU"))
    gradient_checkpointing: bool | None = field(
        default=None, metadata=_help("gradient checkpointing; default: on with a GPU")
    )
    n_train: int | None = field(default=None, metadata=_help("training rows (scenarios repeated or sampled); default one pass"))
    balance: bool = field(default=True, metadata=_help("class-balanced interleaving of the rows"))
    group_batches: bool = field(
        default=False,
        metadata=_help(
            "rows group by group (e.g. both deliveries of a pivot line next to each other) and batches taken "
            "in that order, so one batch contrasts them"
        ),
    )
    oversample: dict[str, int] = field(
        default_factory=dict, metadata=_help("repeat flagged subsets, e.g. pivot=2")
    )
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata=_help("env keyword arguments, as JSON"))
    max_tool_calling_iterations: int = field(
        default=6, metadata=_help("multiturn: most tool-calling rounds per rollout")
    )
    logging_steps: int = field(default=1, metadata=_help("log every N steps"))
    seed: int = field(default=0, metadata=_help("seed of the data order, sampling and initialisation"))
    report_to: str = field(default="none", metadata=_help("trackers for transformers (none, wandb, tensorboard, ...)"))

    def __post_init__(self) -> None:
        problems = []
        for name in ("max_steps", "num_generations", "batch_size", "gradient_accumulation_steps", "max_completion_length"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                problems.append(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.num_generations < 2:
            problems.append(f"num_generations must be at least 2 (GRPO compares completions), got {self.num_generations}")
        elif self.batch_size % self.num_generations:
            problems.append(
                f"batch_size ({self.batch_size}) must be a multiple of num_generations ({self.num_generations})"
            )
        if self.mode not in ("flat", "multiturn"):
            problems.append(f"mode must be 'flat' or 'multiturn', got {self.mode!r}")
        if self.algo not in ("grpo", "ppo", "sac"):
            problems.append(f"algo must be 'grpo', 'ppo' or 'sac', got {self.algo!r}")
        if not isinstance(self.warmup_steps, int) or not 0 <= self.warmup_steps < self.max_steps:
            problems.append(f"warmup_steps must be an integer in [0, max_steps), got {self.warmup_steps!r}")
        if self.scale_rewards not in ("group", "batch", "none"):
            problems.append(f"scale_rewards must be 'group', 'batch' or 'none', got {self.scale_rewards!r}")
        if self.lora_r < 0:
            problems.append(f"lora_r must be >= 0 (0 = full fine-tuning), got {self.lora_r}")
        if self.lora_layers < 0:
            problems.append(f"lora_layers must be >= 0 (0 = every layer), got {self.lora_layers}")
        if self.eval_every_steps < 0:
            problems.append(f"eval_every_steps must be >= 0 (0 = off), got {self.eval_every_steps}")
        if self.eval_episodes < 0:
            problems.append(f"eval_episodes must be >= 0, got {self.eval_episodes}")
        if problems:
            raise ValueError("invalid training config: " + "; ".join(problems))


def config_fields() -> list[dataclasses.Field]:
    """The fields of :class:`TrainConfig`, in order."""
    return list(dataclasses.fields(TrainConfig))


def _hints() -> dict[str, Any]:
    return typing.get_type_hints(TrainConfig)


def _inner(hint: Any) -> tuple[Any, bool]:
    """``(type, optional)`` of a hint: ``int | None`` -> ``(int, True)``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return hint, False


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


def _parse_optional_int(text: str) -> int | None:
    return None if text.strip().lower() in ("", "none", "null") else int(text)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one option per :class:`TrainConfig` field (and ``--config FILE.yaml``).

    Options default to ``argparse.SUPPRESS``, so :func:`config_from_args` can tell the ones
    given explicitly (which win over the YAML file) from the defaults.
    """
    hints = _hints()
    for item in config_fields():
        kind, optional = _inner(hints[item.name])
        help_text = item.metadata.get("help", "")
        default = item.default if item.default is not dataclasses.MISSING else item.default_factory()
        if item.metadata.get("positional"):
            parser.add_argument(item.name, nargs="?", default=argparse.SUPPRESS, help=help_text)
            continue
        flag = "--" + item.name.replace("_", "-")
        options: dict[str, Any] = {"default": argparse.SUPPRESS, "dest": item.name}
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, help=f"{help_text} (default: {default})", **options)
            continue
        if typing.get_origin(kind) is Literal:
            options["choices"] = list(typing.get_args(kind))
        elif typing.get_origin(kind) is dict or kind is dict:
            options["type"] = parse_mapping
            options["metavar"] = "K=V,..."
        elif kind is int and optional:
            options["type"] = _parse_optional_int
        elif kind in (int, float, str):
            options["type"] = kind
        parser.add_argument(flag, help=f"{help_text} (default: {default})", **options)
    parser.add_argument(
        "--config", dest="config_file", default=None, metavar="FILE.yaml",
        help="read options from a YAML file (explicit options win); see --print-config",
    )
    parser.add_argument(
        "--print-config", action="store_true", help="print the resulting configuration as YAML and exit"
    )


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The config from parsed arguments: defaults, then ``--config`` YAML, then explicit options."""
    values: dict[str, Any] = {}
    config_file = getattr(args, "config_file", None)
    if config_file:
        values.update(_read_yaml(Path(config_file)))
    names = {f.name for f in config_fields()}
    values.update({name: value for name, value in vars(args).items() if name in names})
    return TrainConfig(**values)


def config_to_yaml(config: TrainConfig) -> str:
    """The config as YAML, each field preceded by its help as a comment."""
    import yaml

    lines = ["# affectgym train configuration (affectgym train --config this.yaml)"]
    for item in config_fields():
        lines.append(f"# {item.metadata.get('help', '')}")
        dumped = yaml.safe_dump({item.name: getattr(config, item.name)}, default_flow_style=True, sort_keys=False)
        lines.append(dumped.strip().removeprefix("{").removesuffix("}"))
    return "\n".join(lines) + "\n"


def load_config_text(text: str) -> TrainConfig:
    """A config from YAML text (unknown keys are an error)."""
    import yaml

    values = yaml.safe_load(text) or {}
    return TrainConfig(**_checked(values, "the YAML text"))


def load_config(path: str | Path) -> TrainConfig:
    """A config from a YAML file (unknown keys are an error)."""
    return TrainConfig(**_read_yaml(Path(path)))


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    if not path.is_file():
        raise FileNotFoundError(f"config file {str(path)!r} does not exist; write one with --print-config")
    values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return _checked(values, str(path))


def _checked(values: Any, where: str) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise ValueError(f"{where}: expected a mapping of option: value, got {type(values).__name__}")
    names = [f.name for f in config_fields()]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ValueError(f"{where}: unknown option(s) {unknown}; accepted: {', '.join(names)}")
    return dict(values)


__all__ = [
    "TrainConfig",
    "add_config_arguments",
    "config_fields",
    "config_from_args",
    "config_to_yaml",
    "load_config",
    "load_config_text",
    "parse_mapping",
]
