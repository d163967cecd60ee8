"""Resuming an eval run: is the folder's run this config's, and were its episodes scored the same way?"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from affectgym.eval.results import METADATA_FILE, RESULTS_FILE

if TYPE_CHECKING:
    from affectgym.eval.config import EvalConfig


#: Agent arguments that change how replies are fetched, not what they are: a resumed run may
#: change them (a longer timeout or more retries once a crashed server is back).
CONNECTION_AGENT_KWARGS = frozenset({"api_key_env", "timeout_s", "max_retries", "max_concurrency"})


def check_resumable(config: EvalConfig, out: Path) -> dict[str, Any] | None:
    """The metadata of the run in ``out`` that ``config`` resumes (``None`` for a new run).

    A resumed run plays the env, split, seed, user simulator and agent of the episodes on
    disk, with the same agent arguments (``--agent-kwargs``, ``--adapter``, ``-t``, ``-T``,
    ``-S``) but for :data:`CONNECTION_AGENT_KWARGS`: one folder never mixes two agents.

    Raises:
        FileExistsError: ``out`` holds results and ``config`` does not resume.
        ValueError: The recorded run differs from ``config`` (each difference named, recorded
            and now, and what to do).
    """
    metadata_path = out / METADATA_FILE
    results_path = out / RESULTS_FILE
    has_results = results_path.exists() and results_path.stat().st_size > 0
    if not config.resume:
        if has_results:
            raise FileExistsError(f"{results_path} already holds results; pass --resume to finish that run, or choose another --out")
        return None
    if not metadata_path.exists():
        return None
    previous = json.loads(metadata_path.read_text())
    mine = {
        "env_id": config.env_id, "agent_spec": config.agent, "split": config.split, "seed": config.seed,
        "user_simulator": config.user_simulator,
    }
    if config.env_url is None:  # a served env's kwargs are the server's: checked once it answers
        mine["env_kwargs"] = config.env_kwargs
    clashes = [_change(_SHOWN_AS.get(key, key), previous[key], value) for key, value in mine.items()
               if key in previous and previous[key] != value]
    if "agent_kwargs" in previous:
        clashes += _agent_kwargs_changes(previous["agent_kwargs"] or {}, config.agent_kwargs)
    if clashes:
        raise ValueError(
            f"cannot resume the run in {out}: it was played with other settings (" + "; ".join(clashes)
            + "); resume it with the same env, agent and arguments (--agent/-m, --agent-kwargs, --adapter, -t, -T, -S; "
            f"its last command: {previous.get('command', 'in its metadata.json')}) or start a new run in another --out"
        )
    return previous


def _agent_kwargs_changes(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Each agent argument that differs between the recorded run and this one (connection settings aside)."""
    now = json.loads(json.dumps(now, default=str))  # compared as metadata.json records it
    keys = sorted((set(recorded) | set(now)) - CONNECTION_AGENT_KWARGS)
    return [_change(key, recorded.get(key, _UNSET), now.get(key, _UNSET)) for key in keys
            if recorded.get(key, _UNSET) != now.get(key, _UNSET)]


#: How a metadata key is named in a refusal (the user's word for it).
_SHOWN_AS = {"agent_spec": "agent"}
_UNSET = object()


def _change(key: str, recorded: Any, now: Any) -> str:
    def shown(value: Any) -> str:
        return "(unset)" if value is _UNSET else repr(value)

    return f"{key}: recorded {shown(recorded)}, now {shown(now)}"


def scoring_of(config: EvalConfig, probe_env: Any) -> tuple[dict[str, Any], dict[str, float] | None]:
    """``(env_kwargs, reward_weights)`` the episodes are scored with: the served env's own when it is served."""
    base = probe_env.unwrapped
    weights = getattr(base, "reward_weights", None) if config.env_url is not None \
        else getattr(getattr(base, "rubric", None), "weights", None)
    kwargs = dict(getattr(base, "env_kwargs", {}) or {}) if config.env_url is not None else dict(config.env_kwargs)
    return kwargs, None if weights is None else dict(weights)


def check_same_scoring(previous: Mapping[str, Any] | None, env_kwargs: Mapping[str, Any],
                        reward_weights: Mapping[str, float] | None, out: Path) -> None:
    """Refuse to resume a run whose episodes were scored by an env of other options or reward weights."""
    if not previous:
        return
    clashes = [
        f"{key}: recorded {previous[key]!r}, now {value!r}"
        for key, value in (("env_kwargs", dict(env_kwargs)), ("reward_weights", reward_weights))
        if previous.get(key) is not None and value is not None and previous[key] != value
    ]
    if clashes:
        raise ValueError(
            f"cannot resume the run in {out}: its episodes were scored by another env (" + "; ".join(clashes)
            + "); serve or make the env it was started with, or start a new run in another --out"
        )


__all__ = ["CONNECTION_AGENT_KWARGS", "check_resumable", "check_same_scoring", "scoring_of"]
