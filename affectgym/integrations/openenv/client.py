"""A served affectgym env as a Gymnasium env: :class:`RemoteEnv`, over one OpenEnv WebSocket session.

``RemoteEnv("ws://127.0.0.1:8000")`` (or ``http://...``) reads the server's description
(``GET /affectgym/env``) and opens a session with OpenEnv's ``GenericEnvClient``; then
``reset`` and ``step`` are the env's own, played on the server: the same observation text,
reward and ``info`` (messages, tools, ``reward_components``, ``outcome`` at the end) as the
env made in process, so an evaluation scores a remote env and a local one identically.
It carries what agents and the eval runner read of an env (``scenario_ids``,
``label_set``, ``outcome_summaries``, ``tools`` and ``tool_schemas``, ``split``, text spaces,
and ``parse_final``, answered by the server), and ``unwrapped`` is itself. One instance is one session: give each worker its own.

>>> server_url("ws://127.0.0.1:8000/ws"), server_url("https://envs.example.org/")
('http://127.0.0.1:8000', 'https://envs.example.org')
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from typing import Any

import gymnasium as gym

from affectgym.envs.spaces import TextSpace
from affectgym.integrations.openenv.models import info_from_observation
from affectgym.integrations.openenv.sockets import FULL_CLOSE_CODE

#: What a served env's description holds (``GET /affectgym/env``).
DESCRIPTION_KEYS = frozenset({
    "env_id", "env_kwargs", "split", "scenario_ids", "label_set", "outcome_summaries", "tools", "max_turns",
    "max_observation_chars", "max_action_chars",
})
logger = logging.getLogger(__name__)
_SCHEMES = {"ws://": "http://", "wss://": "https://", "http://": "http://", "https://": "https://"}


def server_url(url: str) -> str:
    """The server's HTTP base URL for any accepted form of ``url`` (``ws(s)://`` or ``http(s)://``, ``/ws`` or not).

    Raises:
        ValueError: ``url`` has another scheme.
    """
    for scheme, http in _SCHEMES.items():
        if isinstance(url, str) and url.startswith(scheme):
            base = http + url[len(scheme):].rstrip("/")
            return base[: -len("/ws")] if base.endswith("/ws") else base
    raise ValueError(
        f"env URL {url!r} is not a served env's address; accepted: ws://HOST:PORT, wss://..., http://HOST:PORT "
        "or https://... (what `affectgym serve` prints)"
    )


def fetch_description(url: str, timeout_s: float = 10.0) -> dict[str, Any]:
    """The served env's description (``GET /affectgym/env``; see :func:`~affectgym.integrations.openenv.app.describe_env`).

    Raises:
        ConnectionError: Nothing answers at ``url``, or it is not an ``affectgym serve`` server.
    """
    from affectgym.integrations.openenv.app import DESCRIPTION_PATH

    description = _fetch_json(url, DESCRIPTION_PATH, None, timeout_s)
    missing = sorted(DESCRIPTION_KEYS - set(description)) if isinstance(description, dict) else sorted(DESCRIPTION_KEYS)
    if missing:
        raise ConnectionError(
            f"{server_url(url) + DESCRIPTION_PATH} answered without {', '.join(missing)}: {url} is not an "
            "`affectgym serve` endpoint (or one of another affectgym version)"
        )
    return description


def _fetch_json(url: str, path: str, body: dict[str, Any] | None, timeout_s: float) -> Any:
    """``GET`` (or, with a body, ``POST``) ``path`` on the server at ``url``: the decoded JSON answer."""
    address = server_url(url) + path
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(address, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            try:
                return json.load(response)
            except ValueError:
                raise ConnectionError(
                    f"{address} answered, but not in JSON: {url} is not an `affectgym serve` endpoint"
                ) from None
    except urllib.error.HTTPError as exc:
        raise ConnectionError(f"{address} answered HTTP {exc.code}: is {url} an `affectgym serve` server?") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConnectionError(f"no affectgym server answers at {url} ({reason}); start one with `affectgym serve ENV_ID`") from None


class ServerFullError(ConnectionError):
    """The server refused a session: every one of its ``--max-sessions`` slots is taken (close code 1013)."""


class SessionLost(ConnectionError):
    """The session ended under the episode: the server closed it, went away, or cannot be reached.

    The episode cannot go on; it can be played again from its start, on this server once it
    answers or on another replica (``affectgym eval`` does, see :mod:`affectgym.eval.runner`).
    """


class RemoteEnv(gym.Env[str, str]):
    """An env served by ``affectgym serve``, played over one OpenEnv WebSocket session.

    Args:
        url: The server: ``ws://HOST:PORT`` or ``http://HOST:PORT`` (``wss``/``https`` too).
        connect_timeout_s: Longest wait to connect.
        message_timeout_s: Longest wait for the server's answer to a reset or a step.
        capacity_wait_s: How long :meth:`reset` keeps asking a full server for a session
            (backing off from 0.25 s to 5 s between tries) before it gives up; 0: at once.

    Attributes:
        env_id: The served env's id.
        env_kwargs: Its keyword arguments on the server.
        split: Its split.
        scenario_ids: Ids of its scenarios, in order.
        label_set: Labels a hidden gold answer can take (empty when it hides none).
        outcome_summaries: The eval summaries it declares.
        tool_schemas: OpenAI function schemas of its tools.
        max_turns: Agent messages allowed per episode.
        reward_weights: Its rubric's weights by component (``None``: no rubric, or a server
            that does not publish them).
        idle_timeout_s: Seconds the server lets a session wait for its client before closing it.

    Raises:
        ConnectionError: Nothing answers at ``url`` (see :func:`fetch_description`).
    """

    metadata = {"render_modes": []}

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0, message_timeout_s: float = 60.0,
                 capacity_wait_s: float = 0.0):
        from affectgym.integrations import require

        require("openenv", "openenv")
        description = fetch_description(url, timeout_s=connect_timeout_s)
        self.url = url
        self.env_id: str = description["env_id"]
        self.env_kwargs: dict[str, Any] = description["env_kwargs"]
        self.split: str = description["split"]
        self.scenario_ids: list[str] = description["scenario_ids"]
        self.label_set: tuple[str, ...] = tuple(description["label_set"])
        self.outcome_summaries: tuple[str, ...] = tuple(description["outcome_summaries"])
        self.tool_schemas: list[dict[str, Any]] = description["tools"]
        self.max_turns: int = description["max_turns"]
        self.reward_weights: dict[str, float] | None = description.get("reward_weights")
        self.idle_timeout_s: float | None = description.get("idle_timeout_s")
        self._timeout_s = message_timeout_s
        self.capacity_wait_s = capacity_wait_s
        self._waited_for_capacity = False
        self.observation_space = TextSpace(max_length=description["max_observation_chars"])
        self.action_space = TextSpace(max_length=description["max_action_chars"])
        from openenv.core import GenericEnvClient

        self._client = GenericEnvClient(
            base_url=server_url(url), connect_timeout_s=connect_timeout_s, message_timeout_s=message_timeout_s
        )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on the server (``options`` as ``AffectEnv.reset`` takes them).

        Raises:
            RuntimeError: The server refused the reset (a bad option, no such scenario): the
                server's message, as OpenEnv's client reports it.
            ServerFullError: Every session slot stayed taken for ``capacity_wait_s``.
            SessionLost: The server closed the session (idle too long, shutting down) or
                cannot be reached; the message gives the reason.
        """
        super().reset(seed=seed)
        payload: dict[str, Any] = {"seed": seed}
        if options is not None:
            payload["options"] = options
        deadline, delay_s = time.monotonic() + self.capacity_wait_s, 0.25
        while True:
            try:
                result = self._call(self._client.reset, **payload)
                break
            except ServerFullError:
                if time.monotonic() + delay_s > deadline:
                    raise
                logger.log(logging.INFO if self._waited_for_capacity else logging.WARNING,
                           "the server at %s is full (all --max-sessions taken); asking again for a session in %.2f s, "
                           "for up to %.0f s", self.url, delay_s, self.capacity_wait_s)
                self._waited_for_capacity = True
                time.sleep(delay_s)
                delay_s = min(2 * delay_s, 5.0)
        return result.observation["text"], info_from_observation({**result.observation, "done": result.done})

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Send one agent message; the server's env answers it.

        Raises:
            SessionLost: The server closed the session or went away (see :meth:`reset`).
        """
        result = self._call(self._client.step, {"message": action})
        observation = {**result.observation, "done": result.done}
        if observation.get("scenario_id") is None:
            # Every step of an episode names its scenario. OpenEnv 0.10's client reconnects by itself
            # when the server has closed the socket, so this step reached a new, empty session.
            self._client.disconnect()
            idle = f"idle for more than {self.idle_timeout_s:g} s, " if self.idle_timeout_s else ""
            raise SessionLost(
                f"the server at {self.url} closed the session under the episode ({idle}or restarted); "
                "the next reset opens a new session"
            )
        reward = 0.0 if result.reward is None else float(result.reward)
        return observation["text"], reward, bool(observation["terminated"]), bool(observation["truncated"]), info_from_observation(observation)

    @property
    def tools(self) -> dict[str, dict[str, Any]]:
        """The env's tools by name (their OpenAI function schemas)."""
        return {schema["function"]["name"]: schema for schema in self.tool_schemas}

    def parse_final(self, text: str) -> tuple[Any, str | None]:
        """The served env's reading of a final answer: ``(answer, None)`` or ``(None, what was wrong)``."""
        from affectgym.integrations.openenv.app import PARSE_FINAL_PATH

        parsed = _fetch_json(self.url, PARSE_FINAL_PATH, {"text": text}, self._timeout_s)
        return parsed["answer"], parsed["problem"]

    def release_session(self) -> None:
        """Give the server its session slot back between episodes; the next :meth:`reset` opens a new one."""
        self._client.disconnect()

    def close(self) -> None:
        """End the session (the server frees its env)."""
        self._client.close()

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        from websockets.exceptions import ConnectionClosed

        try:
            return method(*args, **kwargs)
        except ConnectionClosed as exc:
            self._client.disconnect()  # the next reset connects a new session
            frame = exc.rcvd
            why = f"code {frame.code}: {frame.reason or 'no reason given'}" if frame is not None else "no close frame"
            error = ServerFullError if frame is not None and frame.code == FULL_CLOSE_CODE else SessionLost
            raise error(f"the server at {self.url} closed the session ({why})") from None
        except ConnectionError as exc:  # OpenEnv's client could not connect a new session
            self._client.disconnect()
            raise SessionLost(f"the server at {self.url} cannot be reached ({exc})") from None
        except RuntimeError as exc:
            # A full server sends CAPACITY_REACHED, then closes with FULL_CLOSE_CODE; whichever the
            # client reads first, the caller gets the same ConnectionError.
            message = str(exc)
            if "(code: CAPACITY_REACHED)" not in message:
                raise
            self._client.disconnect()
            reason = message.removeprefix("Server error: ").split(" (code:")[0]
            raise ServerFullError(
                f"the server at {self.url} closed the session (code {FULL_CLOSE_CODE}: {reason})"
            ) from None


__all__ = ["RemoteEnv", "ServerFullError", "SessionLost", "fetch_description", "server_url"]
