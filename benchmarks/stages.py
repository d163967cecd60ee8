"""What the staged benchmarks share: results files written as they go, stages that resume, and the Sarcasm ladder's forms.

A stage is a folder; it is done once its ``summary.json`` (the last file each stage writes)
is there, and a training stage that was started continues from its last checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from affectgym.eval.stats import Estimate, Observation
from affectgym.train.recipes import SARCASM_ENV_ID, SARCASM_SHORT_FORM

#: The data report's rungs that read one cue: one threshold (raw or vs the speaker) or one band word.
SINGLE_CUE_RUNGS = ("threshold", "threshold_vs_speaker", "band_word")


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


def load_policy(model: str, adapter: Path | None = None) -> tuple[Any, Any]:
    """A policy for held-out play: ``model`` (an alias or a folder) in float32, ``adapter`` merged into it when given, and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from affectgym.models import resolve_model

    path = resolve_model(model)
    policy = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if adapter is not None:
        from peft import PeftModel

        policy = PeftModel.from_pretrained(policy, str(adapter)).merge_and_unload()
    return policy, AutoTokenizer.from_pretrained(path)


def best_single_cue(report_path: Path, clips: Mapping[str, tuple[str, str]]) -> tuple[dict[str, Any], list[Observation]] | None:
    """The best single-cue rung of an ``affectgym data report`` JSON, clip by clip.

    Args:
        report_path: The report (``None`` is returned when it is missing or keeps no predictions).
        clips: Clip id -> (split group, gold label) of the clips scored.

    Returns:
        The rung's ``name``, ``rule`` and ``accuracy``, and one observation per clip (seed 0:
        a rule is the same on every seed), 1.0 where the rule's prediction is the label.
    """
    if not report_path.is_file():
        return None
    rungs = [r for r in json.loads(report_path.read_text(encoding="utf-8"))["rungs"]
             if r["key"] in SINGLE_CUE_RUNGS and r.get("predictions")]
    if not rungs:
        return None
    best = max(rungs, key=lambda r: r["accuracy"])
    return ({"name": best["name"], "rule": best["rule"], "accuracy": best["accuracy"]},
            [Observation(0, clip, group, float(best["predictions"].get(clip) == label))
             for clip, (group, label) in sorted(clips.items())])


def pivot_lines_right(pivot_clips: Iterable[tuple[Any, str, bool]]) -> list[Observation]:
    """One observation per (seed, pivot line) from its clips' ``(seed, line, correct)``: 1.0 when both deliveries are right.

    >>> pivot_lines_right([(0, "l1", True), (0, "l1", True), (0, "l2", True), (0, "l2", False)])
    [Observation(seed=0, item='l1', group='l1', value=1.0), Observation(seed=0, item='l2', group='l2', value=0.0)]
    """
    lines: dict[tuple[Any, str], list[bool]] = {}
    for seed, line, correct in pivot_clips:
        lines.setdefault((seed, line), []).append(bool(correct))
    return [Observation(seed, line, line, float(all(right))) for (seed, line), right in sorted(lines.items())
            if len(right) == 2]


def sarcasm_form(form: str) -> dict[str, Any]:
    """Sarcasm-v0's short form (the recipes' yes/no answer) with the delivery in ``form`` (``compact`` or ``full``)."""
    return {**SARCASM_SHORT_FORM, "task_format": {**SARCASM_SHORT_FORM["task_format"], "flat_prompt": form}}


def sarcasm_env(form: str, split: str) -> Any:
    """Sarcasm-v0 on ``split`` in :func:`sarcasm_form` ``form``, unwrapped."""
    import affectgym

    return affectgym.make(SARCASM_ENV_ID, split=split, **sarcasm_form(form)).unwrapped


def estimate_cell(entry: dict[str, Any] | None, digits: int = 3) -> str:
    """A table cell of an :class:`~affectgym.eval.stats.Estimate` written as a dict (``n/a`` when there is none)."""
    return Estimate.from_dict(entry).format(digits, scope=False) if entry else "n/a"
