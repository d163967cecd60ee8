"""A training progress bar: the step, the time left and a few numbers of the last logged step.

:func:`progress_callback` gives a ``transformers.TrainerCallback`` that draws a rich
progress bar over ``max_steps`` and writes, after each log, the named values of the last
logged row (e.g. ``reward``, ``loss``) and the held-out accuracy when the run measures it;
the raw log stays in ``log_history.json``. Where stdout is no terminal (a log file, a pipe,
CI) a bar would be cut to its width, so the same is printed as whole plain lines, one a log.

>>> describe_log({"loss": 0.51234, "reward": -0.2, "step": 3}, ("reward", "loss", "answered"))
'reward -0.200  loss 0.512'
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from affectgym.eval.progress import elapsed_clock, progress_bar


def describe_log(row: Mapping[str, Any], names: Sequence[str]) -> str:
    """The named numbers of one log row, three decimals each (names missing from the row are left out)."""
    parts = []
    for name in names:
        value = row.get(name)
        if isinstance(value, int | float) and math.isfinite(value):
            parts.append(f"{name} {value:.3f}")
    return "  ".join(parts)


def show_progress(trainer: Any, label: str, names: Sequence[str]) -> None:
    """Replace the trainer's printed log dictionaries by :func:`progress_callback`'s bar."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(progress_callback(label, names))


def progress_callback(label: str, names: Sequence[str], console: Any = None) -> Any:
    """A ``TrainerCallback`` that shows training as a progress bar, or plain lines off a terminal (see the module docstring).

    Args:
        label: What is being trained, shown before the bar.
        names: Log keys to show after the bar, e.g. ``("reward", "loss")``.
        console: The ``rich.console.Console`` to show it on; default stdout.
    """
    from rich.console import Console
    from transformers import TrainerCallback

    shown_on = console or Console()

    class PlainLines(TrainerCallback):
        """One whole line when training starts, after each log and at the end (see :func:`progress_callback`)."""

        def __init__(self) -> None:
            self.started = time.monotonic()

        def say(self, text: str) -> None:
            shown_on.print(f"{text}  {elapsed_clock(self.started)} elapsed", markup=False, highlight=False, soft_wrap=True)

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started = time.monotonic()
            self.say(f"{label}: step {state.global_step}/{state.max_steps}")

        def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
            text = describe_log(logs or {}, names)
            if text:
                self.say(f"{label}: step {state.global_step}/{state.max_steps}  {text}")

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.say(f"{label}: done, step {state.global_step}/{state.max_steps}")

    class ProgressCallback(TrainerCallback):
        """A rich progress bar over the run's steps (see :func:`progress_callback`)."""

        def __init__(self) -> None:
            self.bar: Any = None
            self.task: Any = None
            self.numbers = ""

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.bar = progress_bar(label, shown_on, refresh_per_second=2)
            self.task = self.bar.add_task("", total=state.max_steps, completed=state.global_step)
            self.bar.start()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.bar is not None:
                self.bar.update(self.task, completed=state.global_step, description=self.numbers)

        def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
            text = describe_log(logs or {}, names)
            if text and self.bar is not None:
                self.numbers = text
                self.bar.update(self.task, description=text)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.bar is not None:
                self.bar.update(self.task, completed=state.global_step, description=self.numbers)
                self.bar.stop()
                self.bar = None

    return ProgressCallback() if shown_on.is_terminal else PlainLines()


__all__ = ["describe_log", "progress_callback", "show_progress"]
