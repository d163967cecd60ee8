"""A training run's output folder: one run per folder, checked before anything is loaded, resumable.

A second run into a folder another run wrote would replace some of its files and keep
others (an adapter of one seed beside the evaluation of another). :func:`claim_output_dir`
refuses such a folder, naming it and what is in it, unless the caller asks to overwrite
(the earlier run's files are removed first, so the folder describes one run) or to resume
the same run: then its ``config.yaml`` must be the one the caller would write, and
:func:`resume_checkpoint` finds the last checkpoint to continue from (``transformers``'
own, in ``trainer/``), dropping the lines that the interrupted run logged after it.

Two trainers writing one folder at once would mix their files (one's ``config.yaml``,
another's adapter): :func:`hold_output_dir` holds the folder for one process while it
trains, with the OS lock ``affectgym eval`` holds its ``--out`` folder with
(:func:`~affectgym.eval.results.lock_run_folder`), and a second trainer is refused at once,
naming the first one's pid.
"""

from __future__ import annotations

import difflib
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: What a GRPO, SFT, DPO or PPO/SAC run writes in its output folder (files and folders).
RUN_OUTPUTS = (
    "config.yaml", "summary.json", "log_history.json", "heldout.jsonl", "demonstrations.jsonl", "best_of.jsonl",
    "adapter", "trainer", "eval", "rollouts", "figures", "pairs", "rounds", "model.zip", "monitor", "learning_curve.png",
)


#: What a trainer refused a busy ``--output-dir`` is told to do, after the holder is named.
BUSY_OUTPUT_DIR_ADVICE = (
    "two trainers in one --output-dir would mix their files (one's config.yaml, the other's adapter): wait for it "
    "to finish (or stop it) and --resume, or choose another --output-dir"
)


class OutputDirInUseError(FileExistsError):
    """The output folder holds another run's files."""


@contextmanager
def hold_output_dir(output_dir: str | Path) -> Iterator[Path]:
    """Hold ``output_dir`` for this process's training run until the block ends (created when missing).

    Raises:
        affectgym.eval.results.RunFolderLocked: Another process trains (or evaluates) into
            the folder; the message names its pid.
    """
    from affectgym.eval.results import lock_run_folder

    with lock_run_folder(output_dir, advice=BUSY_OUTPUT_DIR_ADVICE):
        yield Path(output_dir)


def claim_output_dir(output_dir: str | Path, *, overwrite: bool = False, resume_config: str | None = None) -> Path:
    """Make ``output_dir`` the folder of a new run (or of the resumed one), or refuse when another run wrote there.

    Files other than a run's own (:data:`RUN_OUTPUTS`) are left alone either way.

    Args:
        output_dir: The run's folder (created when missing).
        overwrite: Remove an earlier run's files instead of refusing.
        resume_config: Resume: the ``config.yaml`` text of the run; the folder's must set the same values.

    Returns:
        The folder.

    Raises:
        OutputDirInUseError: It holds an earlier run's files and neither ``overwrite`` nor
            ``resume_config`` is given, or the resumed run's config differs (the lines that differ are named).
        ValueError: Both ``overwrite`` and ``resume_config``.
    """
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"--output-dir {str(folder)!r} is a file, not a folder; choose a folder")
    if overwrite and resume_config is not None:
        raise ValueError("--overwrite deletes the run that --resume continues; give one of them")
    present = [name for name in RUN_OUTPUTS if (folder / name).exists() or (folder / name).is_symlink()]
    if resume_config is not None and present:
        written = folder / "config.yaml"
        earlier = _settings(written.read_text(encoding="utf-8")) if written.is_file() else []
        wanted = _settings(resume_config)
        if earlier != wanted:
            changed = [line for line in difflib.unified_diff(earlier, wanted, lineterm="", n=0)
                       if line[:1] in "+-" and not line.startswith(("+++", "---"))]
            raise OutputDirInUseError(
                f"--resume: the run in {str(folder)!r} was started with other options ({'; '.join(changed) or 'no config.yaml'}); "
                "resume it with the same options, or pass --overwrite to train anew"
            )
        return folder
    if present and not overwrite:
        raise OutputDirInUseError(
            f"--output-dir {str(folder)!r} already holds a run ({', '.join(present)}); choose another --output-dir, "
            "or pass --overwrite to delete that run's files and train anew"
        )
    for name in present:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _settings(config_text: str) -> list[str]:
    """The lines of a ``config.yaml`` that set something (its help comments may change between versions)."""
    return [line for line in config_text.splitlines() if not line.lstrip().startswith("#")]


def resume_checkpoint(output_dir: str | Path, *, trim_logs: bool = True) -> tuple[str | None, int]:
    """The last checkpoint of the run in ``output_dir`` and its step (``None, 0``: none, start from the beginning).

    With ``trim_logs`` (one process of a run), the lines the interrupted run wrote after that
    step (``heldout.jsonl``, ``rollouts/rank*.jsonl``) are dropped, so the resumed run writes
    them once.
    """
    from transformers.trainer_utils import get_last_checkpoint

    folder = Path(output_dir)
    trainer_dir = folder / "trainer"
    checkpoint = get_last_checkpoint(str(trainer_dir)) if trainer_dir.is_dir() else None
    step = 0
    if checkpoint is not None:
        step = int(json.loads((Path(checkpoint) / "trainer_state.json").read_text(encoding="utf-8"))["global_step"])
    logs = [folder / "heldout.jsonl", *sorted((folder / "rollouts").glob("rank*.jsonl"))] if trim_logs else []
    for log in logs:
        if log.is_file():
            rows = [line for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
            kept = [line for line in rows if _step_of(line) <= step and (step > 0 or log.name != "heldout.jsonl")]
            log.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    return checkpoint, step


def _step_of(line: str) -> int:
    try:
        return int(json.loads(line).get("step", 0))
    except (ValueError, AttributeError):
        return 1 << 62  # an unreadable (half-written) line goes


__all__ = ["BUSY_OUTPUT_DIR_ADVICE", "RUN_OUTPUTS", "OutputDirInUseError", "claim_output_dir", "hold_output_dir", "resume_checkpoint"]
