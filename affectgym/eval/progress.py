"""How an eval run shows it is alive: episodes done, the running mean reward, errors and tokens per second.

On a terminal it is a rich progress bar. Where the output is a file, a pipe or CI, or the bar
is turned off (``--no-progress``) but a console is given, it is plain lines, one per finished
episode and one at least every ``heartbeat_s`` while none finishes (a local model on a CPU
can take minutes before its first episode ends). A library call with neither stays quiet.

Training shows its steps with the same bar and clock (:func:`progress_bar`, :func:`elapsed_clock`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from affectgym.eval.summary import format_number

#: Longest silence of the plain progress lines, in seconds.
HEARTBEAT_S = 30.0


def progress_bar(title: str, console: Any, *, refresh_per_second: float) -> Any:
    """A rich progress bar on ``console``: ``title`` in bold, the bar, steps done of all, the time elapsed
    and left, then the task's description (the running numbers)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn(f"[bold]{title}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TimeRemainingColumn(), TextColumn("{task.description}"), console=console, refresh_per_second=refresh_per_second,
    )


def elapsed_clock(started_s: float) -> str:
    """The time since ``started_s`` (a :func:`time.monotonic` reading) as ``HH:MM:SS``.

    >>> elapsed_clock(time.monotonic() - 3725)
    '01:02:05'
    """
    return time.strftime("%H:%M:%S", time.gmtime(time.monotonic() - started_s))


class EvalProgress:
    """The run's progress: a rich bar, plain lines, or nothing (see the module docstring).

    Args:
        enabled: Show progress on ``console`` (stdout when ``None``): a bar on a terminal,
            lines elsewhere.
        console: A ``rich.console.Console``. Given with ``enabled=False``, progress is plain lines.
        total: Episodes the run plays, those done before included.
        done: Episodes done before this session (a resumed run).
        rewards: Their rewards.
        tokens_generated: Returns the agent's generated tokens so far, or ``None`` when it
            counts none (:meth:`~affectgym.agents.base.Agent.tokens_generated`).
        heartbeat_s: With lines, the longest time without one.
    """

    def __init__(
        self, enabled: bool, console: Any, total: int, done: int, rewards: list[float],
        tokens_generated: Callable[[], int | None] | None = None, heartbeat_s: float = HEARTBEAT_S,
    ):
        self.rewards = list(rewards)
        self.errors = 0
        self.total = total
        self.done = done
        self.tokens_generated = tokens_generated or (lambda: None)
        self.heartbeat_s = heartbeat_s
        self._tokens_at_start = self.tokens_generated() or 0
        self._started = self._last_line = time.monotonic()
        self._bar: Any = None
        self._console: Any = None
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._lock = threading.Lock()
        if not enabled and console is None:
            return
        if console is None:
            from rich.console import Console

            console = Console()
        if enabled and console.is_terminal:
            self._bar = progress_bar("eval", console, refresh_per_second=4)
            self._task = self._bar.add_task(self.describe(), total=total, completed=done)
        else:
            self._console = console

    def __enter__(self) -> EvalProgress:
        self._started = time.monotonic()
        self._tokens_at_start = self.tokens_generated() or 0
        if self._bar is not None:
            self._bar.start()
        elif self._console is not None:
            self._print_line()
            self._heartbeat = threading.Thread(target=self._beat, name="affectgym-eval-progress", daemon=True)
            self._heartbeat.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self._heartbeat is not None:
            self._stop.set()
            self._heartbeat.join()

    def advance(self, record: Mapping[str, Any]) -> None:
        """Count one finished episode (its reward, or its error) and show it."""
        if record.get("reward") is not None:
            self.rewards.append(float(record["reward"]))
        self.errors += record.get("error") is not None
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=self.describe())
        elif self._console is not None:
            self._print_line()

    def describe(self) -> str:
        """The running mean reward, the errors and, for a model agent, its tokens per second."""
        mean = math.fsum(self.rewards) / len(self.rewards) if self.rewards else math.nan
        text = f"mean reward {format_number(mean)}  errors {self.errors}"
        tokens = self.tokens_generated()
        if tokens is not None:
            elapsed_s = max(time.monotonic() - self._started, 1e-9)
            text += f"  {tokens:,} tokens, {(tokens - self._tokens_at_start) / elapsed_s:.1f} tokens/s"
        return text

    def _print_line(self) -> None:
        with self._lock:
            line = f"eval {self.done}/{self.total} episodes  {self.describe()}  {elapsed_clock(self._started)} elapsed"
            self._console.print(line, markup=False, highlight=False, soft_wrap=True)
            self._last_line = time.monotonic()

    def _beat(self) -> None:
        while not self._stop.wait(max(self._last_line + self.heartbeat_s - time.monotonic(), 0.0)):
            if time.monotonic() - self._last_line >= self.heartbeat_s:
                self._print_line()


__all__ = ["HEARTBEAT_S", "EvalProgress", "elapsed_clock", "progress_bar"]
