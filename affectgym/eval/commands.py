"""The ``eval`` and ``report`` subcommands of ``affectgym``."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from affectgym.cli_arguments import json_object_argument


def register(subparsers: Any) -> None:
    """Add ``eval`` and ``report`` to the ``affectgym`` command."""
    from affectgym.agents.openai_agent import DEFAULT_MAX_TOKENS
    from affectgym.agents.transformers_agent import DEFAULT_MAX_NEW_TOKENS

    evaluate = subparsers.add_parser(
        "eval",
        help="play an agent on an env's scenarios; write results.jsonl, metadata.json, summary.json",
        description="Play an agent on the first N scenarios of a split and write one line per episode.",
    )
    evaluate.add_argument(
        "env_id", metavar="ENV_ID", nargs="?", default=None,
        help="environment id (see `affectgym list`); may be left out with --from-train",
    )
    # read by affectgym.train.commands.apply_training_run: a training run is train's, a layer above eval
    evaluate.add_argument(
        "--from-train", default=None, metavar="RUN",
        help="replay the held-out evaluation of the affectgym train run in RUN: its env, env options, model and "
        "adapter, greedy decoding at its token limit, its episodes and seed (options given here win); "
        "output in RUN/eval-replay",
    )
    evaluate.add_argument(
        "--agent", default=None, metavar="SPEC",
        help="registered name (e.g. smollm2-135m, majority), hf:<path or id>, openai:<model>@<base_url>, "
        "dspy:<model>@<base_url>; or give -m MODEL instead",
    )
    endpoint = evaluate.add_argument_group(
        "OpenAI-compatible endpoint (the flags of vf-eval)",
        "-m/-b name the agent openai:MODEL@BASE_URL; -k/-t/-T/-S set any OpenAI-compatible agent "
        "(-m, or --agent openai:...) and may not repeat a key of --agent-kwargs",
    )
    endpoint.add_argument("-m", "--model", default=None, metavar="MODEL", help="model name the server knows (instead of --agent)")
    endpoint.add_argument(
        "-b", "--base-url", default=None, metavar="URL",
        help="endpoint ending in /v1, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL or OpenAI's)",
    )
    endpoint.add_argument(
        "-k", "--api-key-var", default=None, metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY, or none for local servers)",
    )
    endpoint.add_argument(
        "-t", "--max-tokens", type=int, default=None, metavar="N",
        help=f"longest reply, in tokens (default {DEFAULT_MAX_TOKENS} for an OpenAI-compatible agent, "
             f"{DEFAULT_MAX_NEW_TOKENS} a message for a local model)",
    )
    endpoint.add_argument("-T", "--temperature", type=float, default=None, metavar="T", help="sampling temperature")
    endpoint.add_argument(
        "-S", "--sampling-args", type=json_object_argument, default={}, metavar="JSON",
        help='more sampling arguments, e.g. \'{"top_p": 0.9, "min_p": 0.05}\' (these win over -t/-T); '
        "keys other than temperature, top_p and max_tokens are sent as they are in the request body",
    )
    evaluate.add_argument("-n", "--examples", type=int, default=None, metavar="N", help="scenarios to play (default: all of the split)")
    evaluate.add_argument("-r", "--rollouts", type=int, default=1, metavar="R", help="episodes per scenario (pass@k when > 1)")
    evaluate.add_argument("-c", "--concurrency", type=int, default=1, metavar="C", help="episodes played at the same time")
    evaluate.add_argument(
        "--split", default="eval",
        help="scenario split (default: eval); the only way to set it: --env-kwargs may not hold 'split'",
    )
    evaluate.add_argument("--seed", type=int, default=None, help="seed of the scenario order and the episodes (default 0)")
    evaluate.add_argument("--out", type=Path, default=None, metavar="DIR", help="output folder (default: runs/<env>/<agent>)")
    evaluate.add_argument("--resume", action="store_true", help="finish an interrupted run in --out")
    evaluate.add_argument("--retry-errors", action="store_true", help="with --resume, play again the episodes that failed")
    evaluate.add_argument(
        "--env-kwargs", type=json_object_argument, default={}, metavar="JSON",
        help='extra env arguments, e.g. \'{"max_turns": 6}\' (not split: use --split)',
    )
    evaluate.add_argument(
        "--env-url", action="append", default=None, metavar="URL",
        help="play the env served at URL by `affectgym serve` (ws://HOST:PORT or http://HOST:PORT) instead of "
        "making it here; its id and split must be ENV_ID and --split, and its kwargs are the server's. "
        "Repeat it for replicas of one env: the -c sessions go to them in turn",
    )
    evaluate.add_argument("--agent-kwargs", type=json_object_argument, default={}, metavar="JSON", help='agent arguments, e.g. \'{"temperature": 0.7}\'')
    evaluate.add_argument("--adapter", default=None, metavar="PATH", help="PEFT (LoRA) adapter folder for a local model agent")
    evaluate.add_argument(
        "--user-simulator", default=None, metavar="SPEC",
        help="agent spec (same forms as --agent) that plays the user, for envs with a simulated user "
        "such as affectgym/EmpatheticDialogue-v0 (default: the dataset's scripted user turns)",
    )
    evaluate.add_argument(
        "--max-fail-fraction", type=float, default=0.5, metavar="F",
        help="stop when more than this fraction of the episodes fail (default 0.5)",
    )
    evaluate.add_argument(
        "--no-progress", action="store_true",
        help="plain progress lines instead of a bar (episodes done, mean reward, tokens/s), then the results table",
    )
    evaluate.add_argument(
        "--push-to-hub", default=None, metavar="REPO_ID",
        help="after the run, upload its episodes as the Hugging Face dataset REPO_ID (namespace/name); "
        "checked before the run starts",
    )
    evaluate.set_defaults(func=run_eval_command)

    report = subparsers.add_parser(
        "report",
        help="figures and report.md from eval run folders (several: side by side)",
        description="Write PNG figures and report.md for one or more `affectgym eval` output folders.",
    )
    report.add_argument("run_dirs", nargs="+", type=Path, metavar="DIR", help="eval output folders")
    report.add_argument("--out", type=Path, default=None, metavar="OUT", help="output folder (default: DIR/report, or ./report for several)")
    report.set_defaults(func=run_report_command)


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


__all__ = ["agent_from_args", "register", "run_eval_command", "run_report_command"]
