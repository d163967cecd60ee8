"""What an eval run records of itself in ``metadata.json``: config, env scoring, agent, host, versions, sessions."""

from __future__ import annotations

import platform
import shlex
import socket
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from affectgym.agents.base import Agent
    from affectgym.eval.config import EvalConfig

#: Packages whose versions go into metadata.json (when installed).
VERSIONED_PACKAGES = (
    "affectgym", "gymnasium", "numpy", "torch", "transformers", "peft", "trl", "openai", "httpx", "dspy", "scikit-learn",
)


def run_metadata(
    config: EvalConfig, agent: Agent, previous: Mapping[str, Any] | None, outcome_summaries: Sequence[str],
    planned_episodes: int, resumed_records: int, scorers: Mapping[str, Any] | None = None,
    reward_weights: Mapping[str, float] | None = None, env_kwargs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What ``metadata.json`` records of a run (see :mod:`affectgym.eval.runner`); each resumed session appends itself."""
    from importlib import metadata as importlib_metadata

    versions = {}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            continue
    session = {
        "started_at": utc_now(),
        "command": config.command if config.command is not None else shlex.join(sys.argv),
        "resumed_records": resumed_records,
        "concurrency": config.concurrency,
        "host": socket.gethostname(),
    }
    sessions = list((previous or {}).get("sessions", [])) + [session]
    return {
        "env_id": config.env_id,
        "env_kwargs": dict(config.env_kwargs if env_kwargs is None else env_kwargs),  # a served env's: the server's
        "env_url": config.env_url,
        "split": config.split,
        "agent_spec": config.agent,
        "agent": agent.describe(),
        "agent_kwargs": config.agent_kwargs,
        "user_simulator": config.user_simulator,
        "scorers": dict(scorers) if scorers is not None else None,  # which classifier/judge an env scored with
        "reward_weights": dict(reward_weights) if reward_weights is not None else None,  # of an AffectEnv's rubric
        "outcome_summaries": list(outcome_summaries),
        "seed": config.seed,
        "n": config.n,
        "rollouts": config.rollouts,
        "planned_episodes": planned_episodes,
        "max_fail_fraction": config.max_fail_fraction,
        "started_at": (previous or {}).get("started_at", session["started_at"]),
        "finished_at": None,
        "status": "running",
        "host": session["host"],
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": versions,
        "command": session["command"],
        "sessions": sessions,
    }


def utc_now() -> str:
    """Now, in UTC, to the second (ISO 8601)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


__all__ = ["VERSIONED_PACKAGES", "run_metadata", "utc_now"]
