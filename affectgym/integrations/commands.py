"""The ``affectgym serve`` subcommand: an env over OpenEnv (see :mod:`affectgym.integrations.openenv.app`)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add ``serve`` to the ``affectgym`` command."""
    from affectgym.cli_arguments import json_object_argument
    from affectgym.integrations.openenv.app import ServeConfig

    defaults = ServeConfig(env_id="")
    parser = subparsers.add_parser(
        "serve",
        help="serve an env over HTTP and WebSocket (OpenEnv), one env per session, for remote trainers and evals",
        description=(
            "Serve ENV_ID with openenv-core's server under uvicorn: OpenEnv clients reset and step it over "
            "WebSocket sessions (WS /ws), one env instance per session; `affectgym eval ENV_ID --env-url "
            "ws://HOST:PORT` plays it. Binds 127.0.0.1 unless --host says otherwise: any other address lets "
            "every host that reaches it play the env and read its scenarios and tool outputs."
        ),
    )
    parser.add_argument("env_id", metavar="ENV_ID", help="environment id (see `affectgym list`), built-in or from a plug-in")
    parser.add_argument(
        "--split", default="train",
        help="scenario split (default: train); the only way to set it: --env-kwargs may not hold 'split'",
    )
    parser.add_argument(
        "--env-kwargs", type=json_object_argument, default={}, metavar="JSON",
        help='extra env arguments, e.g. \'{"max_turns": 6}\' (not split: use --split)',
    )
    parser.add_argument(
        "--host", default=defaults.host,
        help=f"address to bind (default {defaults.host}: this machine only; 0.0.0.0 exposes the env to the network)",
    )
    parser.add_argument("--port", type=int, default=defaults.port, help=f"TCP port (default {defaults.port})")
    parser.add_argument(
        "--max-sessions", type=int, default=defaults.max_sessions, metavar="N",
        help=f"WebSocket sessions (env instances) at a time per worker; more are refused (default {defaults.max_sessions})",
    )
    parser.add_argument(
        "--idle-timeout-s", type=float, default=defaults.idle_timeout_s, metavar="S",
        help=f"close a session after S seconds without a message from its client, or with the server's messages "
             f"unread (default {defaults.idle_timeout_s:g})",
    )
    parser.add_argument(
        "--workers", type=int, default=defaults.workers, metavar="W",
        help=f"uvicorn worker processes, each with its own sessions (default {defaults.workers})",
    )
    parser.add_argument(
        "--max-connections", type=int, default=defaults.max_connections, metavar="N",
        help=f"connections a worker takes at a time; more are answered 503 (default {defaults.max_connections})",
    )
    parser.add_argument(
        "--header-timeout-s", type=float, default=defaults.header_timeout_s, metavar="S",
        help=f"close a connection that has not sent a request's headers S seconds after opening or after its "
             f"previous response (default {defaults.header_timeout_s:g})",
    )
    parser.add_argument(
        "--max-body-bytes", type=int, default=defaults.max_body_bytes, metavar="B",
        help=f"largest HTTP request body; larger ones are answered 413 (default {defaults.max_body_bytes})",
    )
    parser.add_argument("--log-level", default=defaults.log_level, choices=["critical", "error", "warning", "info", "debug"], help="uvicorn's log level")
    parser.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Handler of ``affectgym serve``."""
    import affectgym  # noqa: F401  (registers the built-in envs and plugins)
    from affectgym.integrations.openenv.app import ServeConfig, serve

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


__all__ = ["register", "run_serve"]
