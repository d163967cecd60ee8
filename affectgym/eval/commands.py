"""The ``eval`` and ``report`` subcommands of ``affectgym``."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from affectgym.agents.openai_agent import DEFAULT_MAX_TOKENS
from affectgym.agents.transformers_agent import DEFAULT_MAX_NEW_TOKENS
from affectgym.cli_arguments import add_dataclass_command, json_object_argument


@dataclass
class EvalSubject:
    """What ``affectgym eval`` plays: the env and the agent (the first of its arguments)."""

    env_id: str | None = field(default=None, metadata={
        "positional": True, "metavar": "ENV_ID",
        "help": "environment id (see `affectgym list`); may be left out with --from-train",
    })
    # read by affectgym.train.commands.apply_training_run: a training run is train's, a layer above eval
    from_train: str | None = field(default=None, metadata={
        "metavar": "RUN",
        "help": "replay the held-out evaluation of the affectgym train run in RUN: its env, env options, model and "
                "adapter, greedy decoding at its token limit, its episodes and seed (options given here win); "
                "output in RUN/eval-replay",
    })
    agent: str | None = field(default=None, metadata={
        "metavar": "SPEC",
        "help": "registered name (e.g. smollm2-135m, majority), hf:<path or id>, openai:<model>@<base_url>, "
                "dspy:<model>@<base_url>; or give -m MODEL instead",
    })


@dataclass
class EndpointOptions:
    """-m/-b name the agent openai:MODEL@BASE_URL; -k/-t/-T/-S set any OpenAI-compatible agent
    (-m, or --agent openai:...) and may not repeat a key of --agent-kwargs"""

    _argument_group_name = "OpenAI-compatible endpoint (the flags of vf-eval)"
    model: str | None = field(default=None, metadata={
        "aliases": ["-m"], "metavar": "MODEL", "help": "model name the server knows (instead of --agent)",
    })
    base_url: str | None = field(default=None, metadata={
        "aliases": ["-b"], "metavar": "URL",
        "help": "endpoint ending in /v1, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL or OpenAI's)",
    })
    api_key_var: str | None = field(default=None, metadata={
        "aliases": ["-k"], "metavar": "VAR",
        "help": "environment variable holding the API key (default: OPENAI_API_KEY, or none for local servers)",
    })
    max_tokens: int | None = field(default=None, metadata={
        "aliases": ["-t"], "metavar": "N",
        "help": f"longest reply, in tokens (default {DEFAULT_MAX_TOKENS} for an OpenAI-compatible agent, "
                f"{DEFAULT_MAX_NEW_TOKENS} a message for a local model)",
    })
    temperature: float | None = field(default=None, metadata={"aliases": ["-T"], "metavar": "T", "help": "sampling temperature"})
    sampling_args: dict[str, Any] = field(default_factory=dict, metadata={
        "aliases": ["-S"], "type": json_object_argument, "metavar": "JSON",
        "help": 'more sampling arguments, e.g. \'{"top_p": 0.9, "min_p": 0.05}\' (these win over -t/-T); '
                "keys other than temperature, top_p and max_tokens are sent as they are in the request body",
    })


@dataclass
class EvalOptions:
    """How ``affectgym eval`` plays and where it writes (the rest of its options)."""

    examples: int | None = field(default=None, metadata={
        "aliases": ["-n"], "metavar": "N", "help": "scenarios to play (default: all of the split)",
    })
    rollouts: int = field(default=1, metadata={"aliases": ["-r"], "metavar": "R", "help": "episodes per scenario (pass@k when > 1)"})
    concurrency: int = field(default=1, metadata={"aliases": ["-c"], "metavar": "C", "help": "episodes played at the same time"})
    split: str = field(default="eval", metadata={
        "help": "scenario split (default: eval); the only way to set it: --env-kwargs may not hold 'split'",
    })
    seed: int | None = field(default=None, metadata={"help": "seed of the scenario order and the episodes (default 0)"})
    out: Path | None = field(default=None, metadata={"metavar": "DIR", "help": "output folder (default: runs/<env>/<agent>)"})
    resume: bool = field(default=False, metadata={"help": "finish an interrupted run in --out"})
    retry_errors: bool = field(default=False, metadata={"help": "with --resume, play again the episodes that failed"})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "type": json_object_argument, "metavar": "JSON",
        "help": 'extra env arguments, e.g. \'{"max_turns": 6}\' (not split: use --split)',
    })
    env_url: list[str] | None = field(default=None, metadata={
        "action": "append", "metavar": "URL",
        "help": "play the env served at URL by `affectgym serve` (ws://HOST:PORT or http://HOST:PORT) instead of "
                "making it here; its id and split must be ENV_ID and --split, and its kwargs are the server's. "
                "Repeat it for replicas of one env: the -c sessions go to them in turn",
    })
    agent_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "type": json_object_argument, "metavar": "JSON", "help": 'agent arguments, e.g. \'{"temperature": 0.7}\'',
    })
    adapter: str | None = field(default=None, metadata={
        "metavar": "PATH", "help": "PEFT (LoRA) adapter folder for a local model agent",
    })
    user_simulator: str | None = field(default=None, metadata={
        "metavar": "SPEC",
        "help": "agent spec (same forms as --agent) that plays the user, for envs with a simulated user "
                "such as affectgym/EmpatheticDialogue-v0 (default: the dataset's scripted user turns)",
    })
    max_fail_fraction: float = field(default=0.5, metadata={
        "metavar": "F", "help": "stop when more than this fraction of the episodes fail (default 0.5)",
    })
    no_progress: bool = field(default=False, metadata={
        "help": "plain progress lines instead of a bar (episodes done, mean reward, tokens/s), then the results table",
    })
    push_to_hub: str | None = field(default=None, metadata={
        "metavar": "REPO_ID",
        "help": "after the run, upload its episodes as the Hugging Face dataset REPO_ID (namespace/name); "
                "checked before the run starts",
    })


@dataclass
class ReportOptions:
    """The arguments of ``affectgym report``."""

    run_dirs: list[Path] = field(metadata={"positional": True, "metavar": "DIR", "help": "eval output folders"})
    out: Path | None = field(default=None, metadata={
        "metavar": "OUT", "help": "output folder (default: DIR/report, or ./report for several)",
    })


def register(subparsers: Any) -> None:
    """Add ``eval`` (options: :class:`EvalSubject`, :class:`EndpointOptions`, :class:`EvalOptions`) and ``report`` (:class:`ReportOptions`)."""
    add_dataclass_command(
        subparsers, "eval", [EvalSubject, EndpointOptions, EvalOptions], run_eval_command,
        help="play an agent on an env's scenarios; write results.jsonl, metadata.json, summary.json",
        description="Play an agent on the first N scenarios of a split and write one line per episode.",
    )
    add_dataclass_command(
        subparsers, "report", [ReportOptions], run_report_command,
        help="figures and report.md from eval run folders (several: side by side)",
        description="Write PNG figures and report.md for one or more `affectgym eval` output folders.",
    )


def run_eval_command(args: argparse.Namespace) -> int:
    """Handler of ``affectgym eval``."""
    import affectgym  # noqa: F401  (registers the built-in envs and plugins)
    from affectgym.eval.config import EvalConfig
    from affectgym.eval.runner import run_eval

    if not args.env_id:
        raise ValueError("name the env: affectgym eval ENV_ID --agent SPEC (see affectgym list), or --from-train RUN")
    spec, agent_kwargs = agent_from_args(args)
    if args.push_to_hub is not None:
        from affectgym.eval.push import hub_push_problem

        problem = hub_push_problem(args.push_to_hub)
        if problem is not None:
            raise ValueError(f"--push-to-hub: {problem}")
    if args.adapter is not None:
        agent_kwargs["adapter"] = args.adapter
    out = args.out or Path("runs") / _slug(args.env_id) / _slug(spec + (f"+{Path(args.adapter).name}" if args.adapter else ""))
    config = EvalConfig(
        env_id=args.env_id,
        agent=spec,
        out=out,
        n=args.examples,
        rollouts=args.rollouts,
        concurrency=args.concurrency,
        split=args.split,
        seed=0 if args.seed is None else args.seed,
        resume=args.resume,
        retry_errors=args.retry_errors,
        env_kwargs=args.env_kwargs,
        env_url=args.env_url,
        agent_kwargs=agent_kwargs,
        user_simulator=args.user_simulator,
        max_fail_fraction=args.max_fail_fraction,
        progress=not args.no_progress,
    )
    # Without a progress bar the runner prints its table only to a console it is given.
    console = None
    if args.no_progress:
        from rich.console import Console

        console = Console()
    result = run_eval(config, console=console)
    print(f"wrote {result.out / 'results.jsonl'}, summary.json and metadata.json")
    failed = result.summary["errors"]["count"]
    if failed:  # kept as they are by a resume: say how to play them again
        print(f"{failed} of the {result.summary['episodes']} episodes failed (their errors are in results.jsonl); "
              "once the cause is fixed, rerun with --resume --retry-errors to play them again")
    if args.push_to_hub is not None:
        from affectgym.eval.push import push_results_to_hub

        print(f"pushed the episodes to {push_results_to_hub(result.out, args.push_to_hub)}")
    return 0


def agent_from_args(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The agent spec and keyword arguments of ``affectgym eval``'s ``--agent`` or vf-eval style flags.

    ``-m MODEL [-b URL]`` names ``openai:MODEL@URL``; ``-k``, ``-t``, ``-T`` and ``-S`` become
    :class:`~affectgym.agents.openai_agent.OpenAIAgent` arguments
    (:func:`~affectgym.agents.openai_agent.sampling_kwargs`), beside ``--agent-kwargs``; for a
    local model (:class:`~affectgym.agents.transformers_agent.TransformersAgent`) ``-t`` is its
    ``max_new_tokens`` and ``-T``/``-S`` its sampling.

    Raises:
        ValueError: No agent, two agents, ``-b`` without ``-m``, endpoint flags for an agent
            that is not OpenAI-compatible, or a key given twice.
    """
    from affectgym.agents.openai_agent import OpenAIAgent, sampling_kwargs
    from affectgym.agents.registry import agent_class
    from affectgym.agents.transformers_agent import TransformersAgent

    if args.agent and args.model:
        raise ValueError(f"name the agent once: --agent {args.agent} or -m {args.model}, not both")
    if not args.agent and not args.model:
        raise ValueError("name an agent: --agent SPEC (see --help) or -m MODEL [-b BASE_URL] for an OpenAI-compatible server")
    if args.base_url is not None and not args.model:
        raise ValueError("-b/--base-url goes with -m/--model (or write --agent openai:MODEL@BASE_URL)")
    if args.base_url is not None and not args.base_url.startswith(("http://", "https://")):
        raise ValueError(f"-b/--base-url must be an http(s) URL ending in /v1, got {args.base_url!r}")
    spec = args.agent or f"openai:{args.model}" + (f"@{args.base_url}" if args.base_url else "")
    sampling = {
        key: value for key, value in (("max_tokens", args.max_tokens), ("temperature", args.temperature)) if value is not None
    }
    sampling.update(args.sampling_args)
    if agent_class(spec) is TransformersAgent and args.api_key_var is None:
        # a local model decodes with the same -t/-T limits (max_tokens is its max_new_tokens)
        unknown = sorted(set(sampling) - {"max_tokens", "temperature", "top_p", "top_k", "repetition_penalty"})
        if unknown:
            raise ValueError(f"-S keys {unknown} do not apply to a local model; it takes max_tokens, temperature, top_p, top_k, repetition_penalty")
        endpoint_kwargs = {("max_new_tokens" if key == "max_tokens" else key): value for key, value in sampling.items()}
    else:
        endpoint_kwargs = sampling_kwargs(sampling)
    if args.api_key_var is not None:
        endpoint_kwargs["api_key_env"] = args.api_key_var
    if endpoint_kwargs and agent_class(spec) not in (OpenAIAgent, TransformersAgent):
        raise ValueError(
            f"-k/-t/-T/-S set an OpenAI-compatible agent (-m MODEL, or --agent openai:...) and -t/-T/-S a local "
            f"model (hf:..., smollm2-135m); for --agent {spec} "
            "pass its arguments with --agent-kwargs"
        )
    twice = sorted(set(endpoint_kwargs) & set(args.agent_kwargs))
    if twice:
        raise ValueError(f"{', '.join(twice)} given both by -k/-t/-T/-S and by --agent-kwargs; give each once")
    return spec, {**args.agent_kwargs, **endpoint_kwargs}


def run_report_command(args: argparse.Namespace) -> int:
    """Handler of ``affectgym report``."""
    from affectgym.eval.report import write_report

    out = args.out or (args.run_dirs[0] / "report" if len(args.run_dirs) == 1 else Path("report"))
    print(f"wrote {write_report(args.run_dirs, out)}")
    return 0


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text.split("/", 1)[-1] if text.startswith("affectgym/") else text).strip("_")


__all__ = [
    "EndpointOptions", "EvalOptions", "EvalSubject", "ReportOptions", "agent_from_args", "register", "run_eval_command",
    "run_report_command",
]
