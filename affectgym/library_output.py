"""Keeping the libraries' own progress bars and known warnings out of affectgym's output.

Loading a model prints transformers' "Loading weights" bar, and TRL's dataset preparation
prints datasets' "Tokenizing" and "Map" bars: noise in a command that shows its own
progress, and in a log file each bar is a wall of carriage returns.
:func:`hf_progress_bars_hidden` turns them off for a block and restores what was set before;
:func:`library_noise_hidden` also drops the warnings listed in :data:`KNOWN_LIBRARY_WARNINGS`
(raised by one library about another's use of it, nothing a user can act on).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

#: ``(category, message regex)`` of library warnings a user cannot act on: transformers 5 warns
#: when TRL and PEFT read its deprecated ``is_gradient_checkpointing`` (three times a run).
KNOWN_LIBRARY_WARNINGS: tuple[tuple[type[Warning], str], ...] = (
    (FutureWarning, r"`is_gradient_checkpointing` is deprecated"),
)


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


@contextmanager
def library_noise_hidden() -> Iterator[None]:
    """:func:`hf_progress_bars_hidden`, and the :data:`KNOWN_LIBRARY_WARNINGS` ignored, inside the block.

    Other warnings still show. Warning filters are process-wide: use it around a command's
    work, not in code that runs beside other threads' warnings.
    """
    with hf_progress_bars_hidden(), warnings.catch_warnings():
        for category, message in KNOWN_LIBRARY_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=category)
        yield


__all__ = ["KNOWN_LIBRARY_WARNINGS", "hf_progress_bars_hidden", "library_noise_hidden"]
