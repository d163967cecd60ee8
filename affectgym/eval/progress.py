"""The eval run's progress bar: episodes done, the running mean reward and the errors."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from affectgym.eval.summary import format_number


class EvalProgress:
    """A rich progress bar with the running mean reward (or nothing when disabled)."""

    def __init__(self, enabled: bool, console: Any, total: int, done: int, rewards: list[float]):
        self.enabled = enabled
        self.rewards = list(rewards)
        self.errors = 0
        self._bar: Any = None
        if enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                TimeRemainingColumn(), console=console, refresh_per_second=4,
            )
            self._task = self._bar.add_task(self._describe(), total=total, completed=done)

    def __enter__(self) -> EvalProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, record: Mapping[str, Any]) -> None:
        """Count one finished episode (its reward, or its error) and redraw the bar."""
        if record.get("reward") is not None:
            self.rewards.append(float(record["reward"]))
        self.errors += record.get("error") is not None
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=self._describe())

    def _describe(self) -> str:
        mean = math.fsum(self.rewards) / len(self.rewards) if self.rewards else math.nan
        return f"mean reward {format_number(mean)}  errors {self.errors}"


__all__ = ["EvalProgress"]
