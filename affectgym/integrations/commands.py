"""The OpenEnv subcommands: ``affectgym serve`` (an env over OpenEnv, see :mod:`affectgym.integrations.openenv.app`)
and ``affectgym manifest`` (its ``openenv.yaml``, see :mod:`affectgym.integrations.openenv.manifest`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from affectgym.cli_arguments import add_dataclass_command, json_object_argument
from affectgym.integrations.openenv.app import ServeConfig

#: ``ServeConfig``'s defaults, which are the options' defaults.
_SERVED = ServeConfig(env_id="")
#: The split ``affectgym manifest`` serves and validates unless told otherwise: the env image's.
MANIFEST_SPLIT = "eval"


@dataclass
class ServeOptions:
    """The arguments of ``affectgym serve``, one per field (those of :class:`ServeConfig`, with ``--split`` apart)."""

    env_id: str = field(metadata={
        "positional": True, "metavar": "ENV_ID", "help": "environment id (see `affectgym list`), built-in or from a plug-in",
    })
    split: str = field(default="train", metadata={
        "help": "scenario split (default: train); the only way to set it: --env-kwargs may not hold 'split'",
    })
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "type": json_object_argument, "metavar": "JSON",
        "help": 'extra env arguments, e.g. \'{"max_turns": 6}\' (not split: use --split)',
    })
    host: str = field(default=_SERVED.host, metadata={
        "help": f"address to bind (default {_SERVED.host}: this machine only; 0.0.0.0 exposes the env to the network)",
    })
    port: int = field(default=_SERVED.port, metadata={"help": f"TCP port (default {_SERVED.port})"})
    max_sessions: int = field(default=_SERVED.max_sessions, metadata={
        "metavar": "N",
        "help": f"WebSocket sessions (env instances) at a time per worker; more are refused (default {_SERVED.max_sessions})",
    })
    idle_timeout_s: float = field(default=_SERVED.idle_timeout_s, metadata={
        "metavar": "S",
        "help": f"close a session after S seconds without a message from its client, or with the server's messages "
                f"unread (default {_SERVED.idle_timeout_s:g})",
    })
    workers: int = field(default=_SERVED.workers, metadata={
        "metavar": "W", "help": f"uvicorn worker processes, each with its own sessions (default {_SERVED.workers})",
    })
    max_connections: int = field(default=_SERVED.max_connections, metadata={
        "metavar": "N",
        "help": f"connections a worker takes at a time; more are answered 503 (default {_SERVED.max_connections})",
    })
    header_timeout_s: float = field(default=_SERVED.header_timeout_s, metadata={
        "metavar": "S",
        "help": f"close a connection that has not sent a request's headers S seconds after opening or after its "
                f"previous response (default {_SERVED.header_timeout_s:g})",
    })
    max_body_bytes: int = field(default=_SERVED.max_body_bytes, metadata={
        "metavar": "B", "help": f"largest HTTP request body; larger ones are answered 413 (default {_SERVED.max_body_bytes})",
    })
    log_level: Literal["critical", "error", "warning", "info", "debug"] = field(default=_SERVED.log_level, metadata={
        "help": "uvicorn's log level",
    })


def register(subparsers: Any) -> None:
    """Add ``serve`` (its options those of :class:`ServeOptions`) and ``manifest`` to the ``affectgym`` command."""
    add_dataclass_command(
        subparsers, "serve", [ServeOptions], run_serve,
        help="serve an env over HTTP and WebSocket (OpenEnv), one env per session, for remote trainers and evals",
        description=(
            "Serve ENV_ID with OpenEnv's server under uvicorn: OpenEnv clients reset and step it over "
            "WebSocket sessions (WS /ws), one env instance per session; `affectgym eval ENV_ID --env-url "
            "ws://HOST:PORT` plays it. Binds 127.0.0.1 unless --host says otherwise: any other address lets "
            "every host that reaches it play the env and read its scenarios and tool outputs."
        ),
    )
    manifesting = subparsers.add_parser(
        "manifest",
        help="write an OpenEnv openenv.yaml per served env (OUT/<name>/openenv.yaml and a discovery.json "
        "declaring the licence): its registration, docstring and validate's report; exit 0 when written with "
        "verdicts pass or warn, 1 when a verdict is fail (written all the same), 2 bad input, 3 internal error",
    )
    manifesting.add_argument("env_ids", nargs="*", metavar="ENV_ID",
                             help="registered text env ids (see `affectgym list`), e.g. affectgym/Sarcasm-v0")
    manifesting.add_argument("--all", action="store_true",
                             help="every registered env that `affectgym serve` serves (the numeric ones are skipped)")
    manifesting.add_argument("--split", default=MANIFEST_SPLIT,
                             help=f"split served and validated (default: {MANIFEST_SPLIT}, as deploy/Dockerfile serves)")
    manifesting.add_argument("--out", type=Path, default=Path("deploy/envs"), metavar="DIR",
                             help="folder of one folder per env, build_catalog's root (default: deploy/envs)")
    manifesting.add_argument("--max-scenarios", type=int, default=20, metavar="N",
                             help="scenarios validate visits per env (default: 20, validate's; on 2 cores --all takes "
                             "16 min: affectgym/EmpatheticDialogue-v0 14 min, affectgym/EmotionStyle-v0 2 min, each other "
                             "built-in env about a second)")
    manifesting.add_argument("--replays", type=int, default=20, metavar="N",
                             help="identical replays of validate's verifier_determinism, at least 2 (default: 20, validate's)")
    manifesting.set_defaults(func=run_manifest)


def run_serve(args: argparse.Namespace) -> int:
    """Handler of ``affectgym serve``."""
    import affectgym  # noqa: F401  (registers the built-in envs and plugins)
    from affectgym.integrations.openenv.app import serve

    if "split" in args.env_kwargs:
        raise ValueError(
            f"--env-kwargs sets split={args.env_kwargs['split']!r}; the split has its own option (now {args.split!r}): "
            f"pass --split {args.env_kwargs['split']} instead"
        )
    config = ServeConfig(
        env_id=args.env_id, env_kwargs={**args.env_kwargs, "split": args.split}, host=args.host, port=args.port,
        max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout_s, workers=args.workers,
        max_connections=args.max_connections, header_timeout_s=args.header_timeout_s, max_body_bytes=args.max_body_bytes, log_level=args.log_level,
    )
    serve(config)
    return 0


def run_manifest(args: argparse.Namespace) -> int:
    """Handle ``affectgym manifest``: validate each env on ``args.split`` and write its manifest; print a line each.

    Every argument is checked, and every env made, before any env is validated: an env that
    cannot be made with the split stops the run, and so does one that is not a text env
    (``affectgym serve`` serves text envs only) when named; ``--all`` skips it with a line on stderr.

    Args:
        args: The parsed ``affectgym manifest`` arguments.

    Returns:
        0 when every manifest was written with a verdict pass or warn, 1 when a verdict is
        fail, 2 for bad input, 3 when validate itself could not run.
    """
    import sys
    import time

    import affectgym
    from affectgym.envs.validation import (
        EXIT_FAIL,
        EXIT_INTERNAL,
        EXIT_PASS,
        EXIT_UNSUPPORTED,
        FAIL,
        validate,
    )
    from affectgym.integrations.openenv.app import check_text_env
    from affectgym.integrations.openenv.manifest import build_manifest, write_manifest

    def refuse(message: str) -> int:
        print(f"affectgym manifest: {message}", file=sys.stderr)
        return EXIT_UNSUPPORTED

    registered = affectgym.list_envs()
    if args.all == bool(args.env_ids):
        return refuse("name the envs (ENV_ID ...) or give --all, not both"
                      if args.all else f"name at least one env id, or give --all; registered: {', '.join(registered)}")
    unknown = [env_id for env_id in args.env_ids if env_id not in registered]
    if unknown:
        return refuse(f"unknown env id {', '.join(map(repr, unknown))}; registered: {', '.join(registered)}")
    if args.max_scenarios < 1:
        return refuse(f"--max-scenarios must be a positive integer, got {args.max_scenarios}")
    if args.replays < 2:
        return refuse(f"--replays must be an integer of at least 2, got {args.replays}")
    existing = next((folder for folder in (args.out, *args.out.parents) if folder.exists()), None)
    if existing is not None and not existing.is_dir():
        return refuse(f"--out {args.out}: {existing} is a file, not a folder; name a folder (made if missing), "
                      "e.g. the default deploy/envs")

    envs: dict[str, Any] = {}  # every env is made and checked before any is validated
    try:
        for env_id in registered if args.all else list(dict.fromkeys(args.env_ids)):
            try:
                env = affectgym.make(env_id, split=args.split)
            except (ValueError, TypeError, KeyError) as exc:
                return refuse(f"{env_id} cannot be made with --split {args.split}: {exc}")
            envs[env_id] = env
            try:
                check_text_env(env, env_id)
            except ValueError as exc:
                if not args.all:
                    return refuse(str(exc))
                print(f"affectgym manifest: skipped {exc}", file=sys.stderr)
                envs.pop(env_id).close()
        code = EXIT_PASS
        for env_id, env in envs.items():
            started = time.monotonic()
            try:
                report = validate(env, max_scenarios=args.max_scenarios, replays=args.replays)
            except Exception as exc:  # validate's exit code 3: the validation itself could not run
                if args.debug:
                    raise
                print(f"affectgym manifest: {env_id}: internal error in validate: {type(exc).__name__}: {exc} "
                      "(rerun with --debug for the traceback)", file=sys.stderr)
                return EXIT_INTERNAL
            manifest = build_manifest(env_id, {"split": args.split}, report, max_scenarios=args.max_scenarios,
                                      replays=args.replays)
            path = write_manifest(manifest, args.out)
            print(f"wrote {path} ({env_id}, split {args.split}: validate {report.verdict}, "
                  f"{time.monotonic() - started:.1f} s)")
            if report.verdict == FAIL:
                code = EXIT_FAIL
        return code
    finally:
        for env in envs.values():
            env.close()


__all__ = ["MANIFEST_SPLIT", "ServeOptions", "register", "run_manifest", "run_serve"]
