"""The ``affectgym`` commands of the docs' shell blocks parse, and every ``affectgym train`` one builds a valid config."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from doc_blocks import PAGES, page_name

from affectgym.cli import build_parser
from affectgym.train.commands import config_from_args
from affectgym.train.config import ALGOS

_SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)
_ASSIGNMENT = re.compile(r"^(?P<name>[A-Z_][A-Z0-9_]*)=(?P<value>'[^']*'|\"[^\"]*\"|\S+)$")


def shell_commands(page: Path) -> list[tuple[str, list[str]]]:
    """``(command line, argv)`` of every ``affectgym ...`` command in the page's shell blocks, variables expanded."""
    commands = []
    for block in _SHELL_BLOCK.finditer(page.read_text(encoding="utf-8")):
        variables: dict[str, str] = {}
        for line in block.group("code").replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            assignment = _ASSIGNMENT.match(line)
            if assignment:
                variables[assignment["name"]] = shlex.split(assignment["value"])[0]
                continue
            for part in re.split(r"\s*(?:;|&&|\|)\s*", line):
                words = shlex.split(re.sub(r"\s*(?:>\s*\S+|&)$", "", part)) if part.startswith("affectgym ") else []
                if words:
                    expanded = [expand(word, variables) for word in words]
                    commands.append((part, expanded[1:]))
    return commands


def expand(word: str, variables: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced by the block's assignments (others left as written)."""
    return re.sub(r"\$\{?(\w+)\}?", lambda match: variables.get(match[1], match[0]), word)


COMMANDS = [(page_name(page), line, argv) for page in PAGES for line, argv in shell_commands(page)]


def test_the_docs_have_affectgym_commands_and_train_ones_among_them():
    assert len(COMMANDS) > 10 and any(argv[0] == "train" for _, _, argv in COMMANDS)


@pytest.mark.parametrize(("page", "line", "argv"), COMMANDS, ids=[f"{p}: {line[:70]}" for p, line, _ in COMMANDS])
def test_every_documented_command_parses_and_train_commands_build_a_valid_config(page, line, argv, tmp_path):
    args = build_parser().parse_args(argv)
    if argv[0] == "train" and "--config" not in argv:  # --config reads the file a line before wrote
        config = config_from_args(args)
        assert config.algo in ALGOS
