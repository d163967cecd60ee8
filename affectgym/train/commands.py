"""The ``affectgym train`` subcommand.

``affectgym train ENV_ID [--algo grpo|sft|dpo|ppo|sac] ...``: every option comes from a field of
:class:`~affectgym.train.config.TrainConfig`, one configuration for every algorithm, read through
TRL's ``TrlParser`` (:mod:`affectgym.train.config_parser`);
``--recipe NAME`` starts from a named recipe (``--list-recipes``), ``--config FILE.yaml``
reads options from a file and ``--print-config`` writes one (and trains nothing); an
``--output-dir`` that holds an earlier run is refused unless ``--overwrite`` (or ``--resume``, to
continue it). ``--algo grpo`` (the default) trains a language model on a text env with TRL
(:func:`affectgym.train.grpo.train`), ``--algo sft`` and ``--algo dpo`` too
(:func:`affectgym.train.sft.train_sft`, :func:`affectgym.train.dpo.train_dpo`); ``--algo ppo|sac`` trains a policy on a numeric env
(EmotionState-v0) with Stable-Baselines3 (:func:`affectgym.train.sb3.train_from_config`).
Before anything is loaded, the env's kind is checked against the algorithm
(:func:`check_algo_supports`). Every run writes its ``config.yaml`` to ``--output-dir``.

``affectgym eval --from-train RUN`` replays the held-out evaluation of such a run; what the run
implies is read here (:func:`apply_training_run`), since eval sits below train.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from affectgym.eval.commands import run_eval_command
from affectgym.train.adapters import saved_model_problem
from affectgym.train.config import TrainConfig, config_to_yaml
from affectgym.train.flatten import check_oversample_flags
from affectgym.train.policy import check_policy
from affectgym.train.recipes import recipe_listing
from affectgym.train.run import heldout_eval_config

#: The env kind (:func:`affectgym.envs.spaces.env_kind`) each algorithm trains on.
ALGO_ENV_KINDS = {"grpo": "text", "sft": "text", "dpo": "text", "ppo": "numeric", "sac": "numeric"}
#: The env PPO/SAC train when no env id is given.
DEFAULT_NUMERIC_ENV = "affectgym/EmotionState-v0"


def register(subparsers: Any) -> None:
    """Add ``train`` to the ``affectgym`` command: its words go as they are to :func:`run_train`'s ``TrlParser``.

    The subparser has no option prefix, so it takes every word after ``train``, options included,
    and ``affectgym train --help`` is the ``TrlParser``'s help (as in TRL's own ``trl`` command).
    """
    parser = subparsers.add_parser(
        "train", add_help=False, prefix_chars="\0",
        help="train a policy on an environment (GRPO, SFT or DPO with TRL; PPO/SAC with Stable-Baselines3)",
    )
    parser.add_argument("train_argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.set_defaults(func=run_train)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The config of a parsed ``affectgym train`` command line (:func:`~affectgym.train.config_parser.parse_train_args`)."""
    from affectgym.train.config_parser import parse_train_args

    return parse_train_args(args.train_argv)[0]


def check_algo_supports(config: TrainConfig) -> None:
    """Fail at once, in one line, when ``config.algo`` cannot train on ``config.env_id``.

    Builds the env once (``gym.make(env_id, **env_kwargs)``), compares its kind with
    :data:`ALGO_ENV_KINDS` and checks the ``oversample`` flags against its scenarios.

    Raises:
        ValueError: Names the env's kind and the algorithms that train on it, or the
            ``oversample`` flags its scenarios lack.
    """
    import gymnasium as gym

    import affectgym  # noqa: F401  (registers the built-in envs and plugins)
    from affectgym.envs.spaces import env_kind

    env = gym.make(config.env_id, **config.env_kwargs)
    kind = env_kind(env)
    scenarios = list(getattr(env.unwrapped, "scenarios", None) or [])
    env.close()
    if kind == ALGO_ENV_KINDS[config.algo]:
        if config.oversample:
            check_oversample_flags(scenarios, config.oversample)
        return
    able = [algo for algo, needed in ALGO_ENV_KINDS.items() if needed == kind]
    words = {"text": "text observations and actions", "numeric": "Box observations and actions"}
    raise ValueError(
        f"--algo {config.algo} trains on {ALGO_ENV_KINDS[config.algo]} envs ({words[ALGO_ENV_KINDS[config.algo]]}) "
        f"and {config.env_id} is {kind} ({words.get(kind, 'neither text nor Box spaces')}); "
        + (f"use --algo {', '.join(able[:-1]) + ' or ' if len(able) > 1 else ''}{able[-1]}" if able
           else "no algorithm of affectgym train trains it")
    )


def run_train(args: argparse.Namespace) -> int:
    """Handle ``affectgym train``: list the recipes, or check the env against the algorithm, then print the config or train."""
    from affectgym.train.config_parser import parse_train_args

    config, switches = parse_train_args(args.train_argv)
    if switches.list_recipes:
        print(recipe_listing())
        return 0
    if not config.env_id:
        if ALGO_ENV_KINDS[config.algo] == "text":
            raise ValueError("no environment id given; e.g. affectgym train affectgym/Sarcasm-v0 --model smollm2-135m")
        config = dataclasses.replace(config, env_id=DEFAULT_NUMERIC_ENV)
    check_algo_supports(config)
    if switches.print_config:
        if ALGO_ENV_KINDS[config.algo] == "text":
            # what the run would refuse before loading, --print-config refuses too (an alias is resolved only to train)
            check_policy(config, resolve_alias=False)
        sys.stdout.write(config_to_yaml(config))
        return 0
    if config.algo == "grpo":
        from accelerate import PartialState

        from affectgym.train.grpo import train

        summary = train(config, progress=True, overwrite=switches.overwrite, resume=switches.resume)
        if not PartialState().is_main_process:  # under accelerate launch the main process prints the summary once
            return 0
    elif config.algo == "sft":
        from affectgym.train.sft import train_sft

        summary = train_sft(config, progress=True, overwrite=switches.overwrite, resume=switches.resume)
    elif config.algo == "dpo":
        from affectgym.train.dpo import train_dpo

        summary = train_dpo(config, progress=True, overwrite=switches.overwrite, resume=switches.resume)
    else:
        from affectgym.train.sb3 import train_from_config

        if switches.resume:
            raise ValueError(f"--resume continues GRPO, SFT and DPO runs; --algo {config.algo} runs start anew (--overwrite)")
        summary = train_from_config(config, overwrite=switches.overwrite).as_dict()
    print(json.dumps(summary, indent=2))
    return 0


def run_eval_of_training_run(args: argparse.Namespace) -> int:
    """Handler of ``affectgym eval``: with ``--from-train RUN``, :func:`apply_training_run`, then eval's own handler.

    Reading a training run is train's, a layer above eval, so :func:`affectgym.cli.build_parser`
    gives the ``eval`` subcommand this handler in place of
    :func:`~affectgym.eval.commands.run_eval_command`.
    """
    if args.from_train is not None:
        apply_training_run(args)
    return run_eval_command(args)


def apply_training_run(args: argparse.Namespace) -> None:
    """Fill the options ``--from-train RUN`` implies, where ``args`` leaves them unset.

    The run's ``config.yaml`` gives the env and its options, the model (with ``RUN/adapter``,
    or the full model saved there), greedy decoding at the run's held-out token limit, its
    number of held-out episodes and its seed: the run's own ``eval/trained`` evaluation
    (:func:`~affectgym.train.run.heldout_eval_config`, the one encoding the run played and
    its ``eval/comparison.json`` records as a command).

    The decoding options (``-t``, ``-T``) are filled only for an agent that takes them (a
    local model or an OpenAI-compatible one): ``--from-train RUN --agent majority`` plays the
    run's episodes with the baseline.

    Raises:
        ValueError: RUN holds no training run, a ``config.yaml`` that cannot be read (named), one of
            another env, or no complete trained adapter (a missing, empty or torn file is named),
            all before any model loads.
    """
    from affectgym.agents.openai_agent import OpenAIAgent
    from affectgym.agents.registry import agent_class
    from affectgym.agents.transformers_agent import TransformersAgent
    from affectgym.train.config_parser import load_config

    run = Path(args.from_train)
    if not (run / "config.yaml").is_file():
        raise ValueError(f"--from-train {str(run)!r}: no config.yaml there; pass the --output-dir of an affectgym train run")
    try:
        config = load_config(run / "config.yaml")
    except ValueError as exc:
        raise ValueError(f"--from-train {str(run)!r}: {exc}") from None
    if config.algo not in ("grpo", "sft", "dpo"):
        raise ValueError(f"--from-train {str(run)!r} is an --algo {config.algo} run; affectgym eval replays GRPO, SFT and DPO runs")
    if args.env_id and args.env_id != config.env_id:
        raise ValueError(f"--from-train {str(run)!r} trained {config.env_id}, not {args.env_id}; leave ENV_ID out")
    replayed = heldout_eval_config(config, run / "adapter", run / "eval-replay", side="trained")
    args.env_id = replayed.env_id
    if args.agent is None and args.model is None:
        problem = saved_model_problem(run / "adapter")
        if problem is not None:
            raise ValueError(f"--from-train {str(run)!r}: {problem}; its training did not finish saving "
                             "(affectgym train ... --resume)")
        args.agent = replayed.agent
        if args.adapter is None:
            args.adapter = replayed.agent_kwargs.get("adapter")
    args.env_kwargs = {**replayed.env_kwargs, **args.env_kwargs}
    if args.model is not None or agent_class(args.agent) in (TransformersAgent, OpenAIAgent):
        if args.max_tokens is None:
            args.max_tokens = replayed.agent_kwargs["max_new_tokens"]
        if args.temperature is None:
            args.temperature = replayed.agent_kwargs["temperature"]
    if args.examples is None and replayed.n is not None:
        args.examples = replayed.n
    if args.seed is None:
        args.seed = replayed.seed
    if args.out is None:
        args.out = replayed.out


__all__ = [
    "ALGO_ENV_KINDS", "apply_training_run", "check_algo_supports", "config_from_args", "register", "run_eval_of_training_run",
    "run_train",
]
