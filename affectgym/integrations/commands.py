"""The ``affectgym serve`` subcommand: an env over OpenEnv (see :mod:`affectgym.integrations.openenv.app`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Literal

from affectgym.cli_arguments import add_dataclass_command, json_object_argument
from affectgym.integrations.openenv.app import ServeConfig

#: ``ServeConfig``'s defaults, which are the options' defaults.
_SERVED = ServeConfig(env_id="")


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
    """Add ``serve`` to the ``affectgym`` command, its options those of :class:`ServeOptions`."""
    add_dataclass_command(
        subparsers, "serve", [ServeOptions], run_serve,
        help="serve an env over HTTP and WebSocket (OpenEnv), one env per session, for remote trainers and evals",
        description=(
            "Serve ENV_ID with openenv-core's server under uvicorn: OpenEnv clients reset and step it over "
            "WebSocket sessions (WS /ws), one env instance per session; `affectgym eval ENV_ID --env-url "
            "ws://HOST:PORT` plays it. Binds 127.0.0.1 unless --host says otherwise: any other address lets "
            "every host that reaches it play the env and read its scenarios and tool outputs."
        ),
    )


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


__all__ = ["ServeOptions", "register", "run_serve"]
