"""Publish an evaluation run's results as a Hugging Face dataset (``affectgym eval --push-to-hub``).

:func:`results_dataset` turns ``results.jsonl`` into a ``datasets.Dataset``, one row per
episode: the scalar fields as columns (``scenario_id``, ``rollout``, ``seed``, ``reward``,
``terminated``, ``truncated``, ``turns``, ``final_text``), the env id and agent spec of the
run, and every nested field (``messages``, ``reward_components``, ``outcome``, ``error``...)
as a JSON string, so episodes of any env share one schema. :func:`push_results_to_hub`
uploads it; the upload is a parameter, so it can be replaced (and tested) without the hub.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from affectgym.eval.results import METADATA_FILE, RESULTS_FILE, read_results
from affectgym.hub import hub_offline_reason, is_hub_id

#: Record fields that stay columns of their own; the rest are JSON strings.
SCALAR_FIELDS = ("scenario_id", "rollout", "seed", "reward", "terminated", "truncated", "turns", "final_text")

Uploader = Callable[[Any, str], Any]


def hub_push_problem(repo_id: str) -> str | None:
    """Why ``repo_id`` cannot be pushed to from here (a malformed id, no hub), or ``None``.

    >>> hub_push_problem("not a repo id!")
    "'not a repo id!' is not a hub dataset id; write namespace/name, e.g. my-org/sarcasm-evals"
    """
    if not is_hub_id(repo_id):
        return f"{repo_id!r} is not a hub dataset id; write namespace/name, e.g. my-org/sarcasm-evals"
    reason = hub_offline_reason()
    if reason is not None:
        return f"pushing to {repo_id} needs the Hugging Face hub, which is unreachable ({reason})"
    return None


def results_dataset(run_dir: str | Path) -> Any:
    """The episodes of an eval output folder as a ``datasets.Dataset`` (see the module docstring).

    Args:
        run_dir: A folder written by ``affectgym eval``.

    Raises:
        FileNotFoundError: The folder holds no results.
    """
    from datasets import Dataset

    run_dir = Path(run_dir)
    records, _ = read_results(run_dir / RESULTS_FILE)
    if not records:
        raise FileNotFoundError(f"{run_dir / RESULTS_FILE} holds no episodes to push")
    metadata_path = run_dir / METADATA_FILE
    metadata = json.loads(metadata_path.read_text(encoding="utf-8")) if metadata_path.is_file() else {}
    rows = []
    for record in records:
        row: dict[str, Any] = {"env_id": metadata.get("env_id"), "agent": metadata.get("agent_spec")}
        row.update({name: record.get(name) for name in SCALAR_FIELDS})
        row.update(
            {name: json.dumps(value, ensure_ascii=False) for name, value in record.items() if name not in SCALAR_FIELDS}
        )
        rows.append(row)
    return Dataset.from_list(rows)


def push_results_to_hub(run_dir: str | Path, repo_id: str, *, upload: Uploader | None = None) -> str:
    """Upload an eval run's episodes as the dataset ``repo_id``.

    Args:
        run_dir: A folder written by ``affectgym eval``.
        repo_id: The hub dataset, ``namespace/name``.
        upload: ``upload(dataset, repo_id)``; default ``dataset.push_to_hub(repo_id)``, after
            checking that the hub is reachable.

    Returns:
        The dataset's URL.

    Raises:
        RuntimeError: The default upload and no hub (the message says why).
    """
    dataset = results_dataset(run_dir)
    if upload is None:
        problem = hub_push_problem(repo_id)
        if problem is not None:
            raise RuntimeError(f"{problem}; the results stay in {run_dir}")

        def upload(data: Any, repo: str) -> Any:
            return data.push_to_hub(repo)

    upload(dataset, repo_id)
    return f"https://huggingface.co/datasets/{repo_id}"


__all__ = ["SCALAR_FIELDS", "hub_push_problem", "push_results_to_hub", "results_dataset"]
