"""Resuming an eval run: is the folder's run this config's, and were its episodes scored the same way?"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from affectgym.eval.results import METADATA_FILE, RESULTS_FILE

if TYPE_CHECKING:
    from affectgym.eval.runner import EvalConfig


def check_resumable(config: EvalConfig, out: Path) -> dict[str, Any] | None:
    """The metadata of the run in ``out`` that ``config`` resumes (``None`` for a new run).

    Raises:
        FileExistsError: ``out`` holds results and ``config`` does not resume.
        ValueError: The recorded run differs from ``config`` (each difference named).
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
    clashes = [f"{key}: recorded {previous.get(key)!r}, now {value!r}" for key, value in mine.items() if key in previous and previous[key] != value]
    if clashes:
        raise ValueError(f"cannot resume the run in {out}: it differs in " + "; ".join(clashes))
    return previous


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


__all__ = ["check_resumable", "check_same_scoring", "scoring_of"]
