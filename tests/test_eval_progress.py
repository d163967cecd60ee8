"""The eval run's progress: a bar on a terminal, plain whole lines elsewhere, a line while nothing finishes."""

from __future__ import annotations

import io
import threading

from rich.console import Console

from affectgym.eval.progress import EvalProgress


def file_console(width: int = 40) -> Console:
    """A console writing to a string, as stdout does to a file or a pipe (narrower than a progress line)."""
    return Console(file=io.StringIO(), width=width)


def test_without_a_terminal_each_finished_episode_is_one_whole_plain_line():
    console = file_console()
    with EvalProgress(True, console, total=3, done=0, rewards=[]) as progress:
        progress.advance({"reward": 1.0, "error": None})
        progress.advance({"reward": None, "error": {"type": "ValueError"}})
    lines = console.file.getvalue().splitlines()
    assert [line.split("  ")[:3] for line in lines] == [
        ["eval 0/3 episodes", "mean reward -", "errors 0"],
        ["eval 1/3 episodes", "mean reward 1.000", "errors 0"],
        ["eval 2/3 episodes", "mean reward 1.000", "errors 1"],
    ]
    assert all(line.endswith(" elapsed") for line in lines) and "━" not in console.file.getvalue()


def test_a_model_agents_lines_show_its_tokens_and_tokens_per_second():
    generated = [100]  # before the run (another run of the same agent)
    console = file_console()
    with EvalProgress(False, console, total=1, done=0, rewards=[], tokens_generated=lambda: generated[0]) as progress:
        generated[0] = 340
        progress.advance({"reward": 0.5, "error": None})
    last = console.file.getvalue().splitlines()[-1]
    assert "  340 tokens, " in last and " tokens/s  " in last


def test_a_resumed_run_counts_from_the_episodes_already_done():
    console = file_console()
    with EvalProgress(True, console, total=4, done=2, rewards=[0.0, 1.0]) as progress:
        progress.advance({"reward": 1.0, "error": None})
    assert console.file.getvalue().splitlines()[-1].startswith("eval 3/4 episodes  mean reward 0.667  errors 0")


def test_lines_keep_coming_while_no_episode_finishes():
    console = file_console()
    enough = threading.Event()

    class CountingFile(io.StringIO):
        def write(self, text: str) -> int:
            if self.getvalue().count("\n") >= 3:
                enough.set()
            return super().write(text)

    console.file = CountingFile()
    with EvalProgress(True, console, total=8, done=0, rewards=[], heartbeat_s=0.01):
        assert enough.wait(timeout=60)
    assert all(line.startswith("eval 0/8 episodes") for line in console.file.getvalue().splitlines())


def test_a_library_run_without_a_console_prints_nothing(capsys):
    with EvalProgress(False, None, total=2, done=0, rewards=[], heartbeat_s=0.01) as progress:
        progress.advance({"reward": 1.0, "error": None})
    assert capsys.readouterr() == ("", "")


def test_on_a_terminal_it_is_a_bar_with_the_running_mean():
    console = Console(file=io.StringIO(), width=120, force_terminal=True)
    with EvalProgress(True, console, total=2, done=0, rewards=[], tokens_generated=lambda: 7) as progress:
        progress.advance({"reward": 1.0, "error": None})
    shown = console.file.getvalue()
    assert "━" in shown and "mean reward 1.000" in shown and "7 tokens" in shown
