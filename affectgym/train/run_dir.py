"""A training run's output folder: one run per folder, checked before anything is loaded.

A second run into a folder another run wrote would replace some of its files and keep
others (an adapter of one seed beside the evaluation of another). :func:`claim_output_dir`
refuses such a folder, naming it and what is in it, unless the caller asks to overwrite:
then the earlier run's files are removed first, so the folder describes one run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

#: What a GRPO, SFT or PPO/SAC run writes in its output folder (files and folders).
RUN_OUTPUTS = (
    "config.yaml", "summary.json", "log_history.json", "heldout.jsonl", "demonstrations.jsonl", "adapter", "trainer",
    "eval", "rollouts", "figures", "model.zip", "monitor", "learning_curve.png",
)


class OutputDirInUseError(FileExistsError):
    """The output folder holds another run's files."""


def claim_output_dir(output_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Make ``output_dir`` the folder of a new run, or refuse when another run wrote there.

    Files other than a run's own (:data:`RUN_OUTPUTS`) are left alone either way.

    Args:
        output_dir: The run's folder (created when missing).
        overwrite: Remove an earlier run's files instead of refusing.

    Returns:
        The folder.

    Raises:
        OutputDirInUseError: It holds an earlier run's files and ``overwrite`` is false.
    """
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"--output-dir {str(folder)!r} is a file, not a folder; choose a folder")
    present = [name for name in RUN_OUTPUTS if (folder / name).exists() or (folder / name).is_symlink()]
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


__all__ = ["RUN_OUTPUTS", "OutputDirInUseError", "claim_output_dir"]
