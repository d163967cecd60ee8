"""Training progress: a bar on a terminal, whole plain lines in a log file or a pipe."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from affectgym.train.progress import progress_callback


def test_off_a_terminal_training_progress_is_whole_plain_lines_never_a_cut_bar():
    console = Console(file=io.StringIO(), width=30)  # narrower than a line: nothing may be cut
    callback = progress_callback("SFT on 206 demonstrations", ("loss",), console=console)
    state = SimpleNamespace(global_step=0, max_steps=20)
    callback.on_train_begin(None, state, None)
    state.global_step = 10
    callback.on_log(None, state, None, logs={"loss": 0.51234, "step": 10})
    state.global_step = 20
    callback.on_train_end(None, state, None)
    lines = console.file.getvalue().splitlines()
    assert [line.split("  ")[0] for line in lines] == [
        "SFT on 206 demonstrations: step 0/20",
        "SFT on 206 demonstrations: step 10/20",
        "SFT on 206 demonstrations: done, step 20/20",
    ]
    assert lines[1].split("  ")[1] == "loss 0.512" and all(line.endswith(" elapsed") for line in lines)
    assert "━" not in console.file.getvalue()


def test_on_a_terminal_training_progress_is_a_bar():
    console = Console(file=io.StringIO(), width=120, force_terminal=True)
    callback = progress_callback("GRPO", ("reward",), console=console)
    state = SimpleNamespace(global_step=0, max_steps=4)
    callback.on_train_begin(None, state, None)
    state.global_step = 4
    callback.on_train_end(None, state, None)
    assert "━" in console.file.getvalue() and "GRPO" in console.file.getvalue()
