"""``affectgym serve``: any registered env as an OpenEnv server (HTTP + WebSocket, uvicorn).

:func:`create_env_app` builds the FastAPI app with OpenEnv 0.10's ``create_app``, so
OpenEnv's clients (``GenericEnvClient``, ``EnvClient`` subclasses) and the trainers built on
them drive it unchanged:

* ``WS /ws``: one session per connection, one env per session (``reset`` with ``seed`` and
  ``options``, ``step`` with an ``AffectAction``, ``state``), all made from the data the
  server read when it started (:func:`session_env_kwargs`); at most ``max_sessions`` at a
  time per worker process (the next connection is refused with OpenEnv's
  ``CAPACITY_REACHED`` error), closed after ``idle_timeout_s`` seconds without a message
  (:mod:`affectgym.integrations.openenv.sockets`), freed when the client disconnects, even
  mid-episode;
* ``POST /reset``, ``POST /step``, ``GET /state``: OpenEnv's stateless HTTP forms (a fresh
  env per request: a first observation, not an episode);
* ``GET /health``, ``GET /schema``, ``GET /metadata``; and what
  :class:`~affectgym.integrations.openenv.client.RemoteEnv` needs to stand in for the env:
  ``GET /affectgym/env`` (id, kwargs, split, scenario ids, label set, tools, limits; never a
  gold label) and ``POST /affectgym/parse_final`` (the env's answer parser, a pure function
  of the text, for the agents that check an env accepts their answer format).

:func:`serve` runs it under uvicorn with ``workers`` processes; each worker builds its own
app, and reads the env's data once, from the settings in the environment variable :data:`CONFIG_VARIABLE`. Its connections
time out what uvicorn does not (:mod:`affectgym.serving.protocols`): request
headers that take over ``header_timeout_s``, and a WebSocket client that leaves the server's
messages unread for ``idle_timeout_s``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any

from affectgym.integrations.openenv.limits import MAX_HTTP_BODY_BYTES
from affectgym.serving.asgi import HEADER_TIMEOUT_S

#: Environment variable that carries the :class:`ServeConfig` (JSON) to each uvicorn worker.
CONFIG_VARIABLE = "AFFECTGYM_SERVE_CONFIG"
#: Where the env's description is served.
DESCRIPTION_PATH = "/affectgym/env"
#: Where the env's ``parse_final`` answers (``{"text": ...}`` in, ``{"answer", "problem"}`` out).
PARSE_FINAL_PATH = "/affectgym/parse_final"


@dataclasses.dataclass
class ServeConfig:
    """What ``affectgym serve`` serves and how (the fields of its command line).

    Attributes:
        env_id: A registered env id (``affectgym list``), built-in or from a plug-in.
        env_kwargs: Keyword arguments of ``affectgym.make`` (``split`` included).
        host: Address to bind. The default, 127.0.0.1, admits this machine only; any other
            address lets every host that reaches it play the env and read its scenarios.
        port: TCP port.
        max_sessions: WebSocket sessions (env instances) at a time, per worker process.
        idle_timeout_s: A session whose client sends no message, or leaves the server's
            messages unread, for this long is closed (``None``: never).
        workers: uvicorn worker processes; each has its own sessions.
        max_connections: Connections (and requests in flight) a worker takes at a time;
            more are answered ``503`` (uvicorn's ``limit_concurrency``), so that half-open
            requests from one client cannot use up the process's file descriptors.
        header_timeout_s: A connection that has not sent a whole request's headers this many
            seconds after opening (or after its previous response) is closed, so that half-open
            requests do not hold the ``max_connections`` for long; and such waiting connections
            hold at most half of ``max_connections`` at once (a newer one closes the oldest).
        max_body_bytes: Largest HTTP request body; a larger one is answered ``413``.
        log_level: uvicorn's log level.
    """

    env_id: str
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8000
    max_sessions: int = 64
    idle_timeout_s: float | None = 600.0
    workers: int = 1
    max_connections: int = 256
    header_timeout_s: float = HEADER_TIMEOUT_S
    max_body_bytes: int = MAX_HTTP_BODY_BYTES
    log_level: str = "info"

    def __post_init__(self) -> None:
        if not isinstance(self.max_sessions, int) or self.max_sessions < 1:
            raise ValueError(f"max_sessions must be a positive integer, got {self.max_sessions!r}")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"workers must be a positive integer, got {self.workers!r}")
        for name in ("max_connections", "max_body_bytes"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if isinstance(self.header_timeout_s, bool) or not isinstance(self.header_timeout_s, (int, float)) \
                or not 0 < self.header_timeout_s < float("inf"):
            raise ValueError(f"header_timeout_s must be a positive number of seconds, got {self.header_timeout_s!r}")
        if self.idle_timeout_s is not None and not self.idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be a positive number of seconds or None, got {self.idle_timeout_s!r}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port!r}")


def check_text_env(env: Any, env_id: str) -> None:
    """Fail in one line unless ``env`` exchanges text: served and verifiers envs carry messages.

    Raises:
        ValueError: Names the env's kind and spaces.
    """
    from affectgym.envs.spaces import env_kind

    kind = env_kind(env)
    if kind != "text":
        raise ValueError(
            f"{env_id} is a {kind} env (observations {type(env.observation_space).__name__}, actions "
            f"{type(env.action_space).__name__}); only text envs are served and loaded as messages "
            "(affectgym/EmotionStateText-v0 is the text form of affectgym/EmotionState-v0)"
        )


def describe_env(env: Any, env_id: str, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """What a client needs to stand in for ``env``: ids, split, scenario ids, labels, tools, limits.

    Args:
        env: An env made by ``affectgym.make(env_id, **env_kwargs)``.
        env_id: Its id.
        env_kwargs: Its keyword arguments.
    """
    from affectgym import __version__

    base = env.unwrapped
    return {
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "split": base.split,
        "scenario_ids": list(base.scenario_ids),
        "label_set": list(base.label_set),
        "outcome_summaries": list(base.outcome_summaries),
        "tools": base.tool_schemas,
        "max_turns": base.max_turns,
        "max_action_chars": base.action_space.max_length,
        "max_observation_chars": base.observation_space.max_length,
        "reward_weights": dict(base.rubric.weights) if getattr(base, "rubric", None) is not None else None,
        "affectgym_version": __version__,
    }


def session_env_kwargs(env: Any, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments every session's env is made with: ``env_kwargs``, and ``env``'s data as read once.

    A speech env's :class:`~affectgym.data.speech_datasets.LoadedSpeechDataset` is passed on
    as ``dataset=``, so that sessions read no file when made: every scenario id the server
    describes resets in every session, even after a clip's file is damaged or removed, and
    every session bands the delivery against the same norms.

    Args:
        env: The env the server made first, from ``env_kwargs``.
        env_kwargs: Keyword arguments of ``affectgym.make``.
    """
    from affectgym.data.speech_datasets import LoadedSpeechDataset

    loaded = getattr(env.unwrapped, "loaded_dataset", None)
    return {**env_kwargs, "dataset": loaded} if isinstance(loaded, LoadedSpeechDataset) else dict(env_kwargs)


def create_env_app(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    *,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    max_body_bytes: int = MAX_HTTP_BODY_BYTES,
) -> Any:
    """The OpenEnv FastAPI app of one env (see the module docstring).

    Args:
        env_id: A registered env id.
        env_kwargs: Keyword arguments of ``affectgym.make``; checked here by making the env once.
        max_sessions: WebSocket sessions at a time, and stateless HTTP ``/reset``/``/step``
            requests served at a time (:mod:`affectgym.integrations.openenv.limits`).
        idle_timeout_s: Seconds a session may stay silent before it is closed (``None``: never).
        max_body_bytes: Largest HTTP request body (a larger one is answered ``413``).

    Raises:
        ValueError: ``env_id`` is not registered (the message lists the affectgym ids), or its
            observations and actions are not text.
        ImportError: ``openenv`` is not installed (``pip install 'affectgym[openenv]'``).
    """
    from affectgym.integrations import require

    require("openenv", "openenv")
    import gymnasium as gym
    from fastapi import Body
    from openenv.core.env_server import ConcurrencyConfig, create_app

    import affectgym
    from affectgym.integrations.openenv.environment import environment_factory
    from affectgym.integrations.openenv.limits import RequestLimits
    from affectgym.integrations.openenv.models import AffectAction, AffectObservation, jsonable
    from affectgym.integrations.openenv.sockets import SessionSockets

    env_kwargs = dict(env_kwargs or {})
    if env_id not in gym.registry:
        raise ValueError(f"unknown env id {env_id!r}; registered affectgym envs: {', '.join(affectgym.list_envs())}")
    # Kept for the description and for parse_final, which is pure: it never starts an episode.
    probe = affectgym.make(env_id, **env_kwargs)
    check_text_env(probe, env_id)
    description = describe_env(probe, env_id, env_kwargs)
    app = create_app(
        environment_factory(env_id, session_env_kwargs(probe, env_kwargs), split=description["split"],
                            scenario_ids=description["scenario_ids"], components=list(description["reward_weights"] or ())),
        AffectAction,
        AffectObservation,
        env_name=openenv_name(env_id),
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s),
    )

    async def env_description() -> dict[str, Any]:
        return {**description, "max_sessions": max_sessions, "idle_timeout_s": idle_timeout_s}

    def parse_final(text: str = Body(..., embed=True)) -> dict[str, Any]:
        answer, problem = probe.unwrapped.parse_final(text)
        return {"answer": jsonable(answer), "problem": problem}

    app.get(DESCRIPTION_PATH, tags=["Environment Info"], summary="The affectgym env: id, split, scenario ids, tools")(env_description)
    app.post(PARSE_FINAL_PATH, tags=["Environment Info"], summary="The env's reading of a final answer")(parse_final)
    app.add_middleware(SessionSockets, idle_timeout_s=idle_timeout_s)
    app.add_middleware(RequestLimits, max_body_bytes=max_body_bytes, max_http_envs=max_sessions)
    return app


def openenv_name(env_id: str) -> str:
    """The env's name in OpenEnv: its id in lower case, each run of other characters a ``-``
    (the Task API's routes, ``/{name}/tasks``, take no ``/``).

    >>> openenv_name("affectgym/Sarcasm-v0")
    'affectgym-sarcasm-v0'
    """
    return re.sub(r"[^a-z0-9]+", "-", env_id.lower()).strip("-")


def app_from_environment() -> Any:
    """The app of the :class:`ServeConfig` in :data:`CONFIG_VARIABLE` (uvicorn's factory in each worker)."""
    raw = os.environ.get(CONFIG_VARIABLE)
    if not raw:
        raise RuntimeError(f"{CONFIG_VARIABLE} is not set: start the server with `affectgym serve ENV_ID`")
    config = ServeConfig(**json.loads(raw))
    return create_env_app(
        config.env_id, config.env_kwargs, max_sessions=config.max_sessions, idle_timeout_s=config.idle_timeout_s,
        max_body_bytes=config.max_body_bytes,
    )


def serve(config: ServeConfig) -> None:
    """Run the server until interrupted (uvicorn, ``config.workers`` processes).

    The app is built once here first, so that a bad env id or kwargs fails at once, before
    uvicorn starts its workers.
    """
    from affectgym.integrations import require

    require("uvicorn", "serve")
    import uvicorn

    from affectgym.serving.protocols import protocol_options

    create_env_app(config.env_id, config.env_kwargs, max_sessions=config.max_sessions, idle_timeout_s=config.idle_timeout_s,
                   max_body_bytes=config.max_body_bytes)
    os.environ[CONFIG_VARIABLE] = json.dumps(dataclasses.asdict(config))
    uvicorn.run(
        f"{__name__}:app_from_environment", factory=True, host=config.host, port=config.port,
        workers=config.workers, limit_concurrency=config.max_connections, log_level=config.log_level,
        **protocol_options(config.header_timeout_s, config.idle_timeout_s, config.max_connections),
    )


__all__ = [
    "CONFIG_VARIABLE", "DESCRIPTION_PATH", "PARSE_FINAL_PATH", "ServeConfig", "app_from_environment", "check_text_env",
    "create_env_app", "describe_env", "openenv_name", "serve", "session_env_kwargs",
]
