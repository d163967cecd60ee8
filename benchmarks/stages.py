"""What the staged benchmarks share: results files written as they go, and stages that resume.

A stage is a folder; it is done once its ``summary.json`` (the last file each stage writes)
is there, and a training stage that was started continues from its last checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every row of a JSONL results file (none when it does not exist yet)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def append_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append rows, one JSON line each (flushed at once: a kill loses no finished row)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def done(path: Path) -> bool:
    """Whether a stage's folder holds its summary."""
    return (path / "summary.json").is_file()


def rerun_options(path: Path) -> dict[str, bool]:
    """An unfinished training stage continues from its last checkpoint; one never started starts afresh."""
    started = (path / "config.yaml").is_file()
    return {"resume": started, "overwrite": not started}


def use_threads(threads: int | None) -> None:
    """Run torch on ``threads`` threads (one when two benchmark processes share the machine)."""
    if threads:
        import os

        import torch

        torch.set_num_threads(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)


def run_missing(seeds: list[int], arms: list[str], finished: Callable[[str, int], bool],
                run_arm: Callable[[str, int], None]) -> None:
    """Run every (arm, seed) not ``finished`` yet, timed; ``base`` on seed 0 only (greedy: the same on every seed)."""
    import time

    for seed in seeds:
        for arm in arms:
            if (arm == "base" and seed != 0) or finished(arm, seed):
                continue
            start_s = time.perf_counter()
            run_arm(arm, seed)
            print(f"  ({(time.perf_counter() - start_s) / 60:.1f} min)", flush=True)
