"""Keeping the libraries' own progress bars out of affectgym's output.

Loading a model prints transformers' "Loading weights" bar, and TRL's dataset preparation
prints datasets' "Tokenizing" and "Map" bars: noise in a command that shows its own
progress, and in a log file each bar is a wall of carriage returns.
:func:`hf_progress_bars_hidden` turns them off for a block and restores what was set before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hf_progress_bars_hidden() -> Iterator[None]:
    """Hide transformers' and datasets' progress bars inside the block, then put back each library's setting.

    >>> import transformers.utils.logging as transformers_logging
    >>> with hf_progress_bars_hidden():
    ...     transformers_logging.is_progress_bar_enabled()
    False
    >>> transformers_logging.is_progress_bar_enabled()
    True
    """
    import datasets
    import transformers.utils.logging as transformers_logging

    transformers_was_on = transformers_logging.is_progress_bar_enabled()
    datasets_was_on = not datasets.are_progress_bars_disabled()
    transformers_logging.disable_progress_bar()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if transformers_was_on:
            transformers_logging.enable_progress_bar()
        if datasets_was_on:
            datasets.enable_progress_bars()


__all__ = ["hf_progress_bars_hidden"]
