"""The docs build that ``make test`` runs fails on a warning, and the docs pass it.

The command is read from the Makefile and run as it stands there (only the config file and
the site folder changed), on the real docs and on a copy with a broken page link and a broken
API cross-reference planted: ``--quiet`` once hid strict mode's warnings, so that a broken
reference in a docstring passed ``make test`` and failed ``mkdocs build --strict``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
#: A link to a page that does not exist, and a cross-reference to an object that does not exist.
PLANTED = ("[a page that is not there](no-such-page.md)", "[an object that is not there][affectgym.no_such_object]")


def makefile_docs_command() -> tuple[dict[str, str], list[str]]:
    """The environment variables and the ``mkdocs`` arguments of the Makefile's docs build."""
    line = next(line for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
                if "mkdocs build" in line and not line.lstrip().startswith("#"))
    words = shlex.split(line)
    at = next(index for index, word in enumerate(words) if word.endswith("/mkdocs"))
    return dict(word.split("=", 1) for word in words[:at]), words[at + 1:]


def build_docs(config_file: Path, site_dir: Path) -> subprocess.CompletedProcess[str]:
    variables, arguments = makefile_docs_command()
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", *arguments, "--config-file", str(config_file), "--site-dir", str(site_dir)],
        cwd=ROOT, env={**os.environ, **variables}, capture_output=True, text=True, timeout=300,
    )


def copy_of_the_docs(folder: Path) -> Path:
    """``mkdocs.yml`` and ``docs/`` copied into ``folder``, the API pages still read from this checkout; the config."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    shutil.copytree(ROOT / "docs", folder / "docs")
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    (folder / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return folder / "mkdocs.yml"


def test_the_makefile_builds_the_docs_in_strict_mode_with_its_warnings_shown():
    _, arguments = makefile_docs_command()
    assert arguments[0] == "build" and "--strict" in arguments
    assert not {"-q", "--quiet"} & set(arguments), "--quiet hides strict mode's warnings and the build passes"


def test_the_docs_build_with_no_warning(tmp_path):
    built = build_docs(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    assert (tmp_path / "site" / "api" / "index.html").is_file()


def test_a_broken_link_or_cross_reference_fails_the_build_naming_it(tmp_path):
    config_file = copy_of_the_docs(tmp_path)
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\n" + "\n\n".join(PLANTED) + "\n", encoding="utf-8")
    built = build_docs(config_file, tmp_path / "site")
    assert built.returncode != 0
    warnings = [line for line in built.stderr.splitlines() if line.startswith("WARNING")]
    assert any("no-such-page.md" in line for line in warnings), built.stderr
    assert any("affectgym.no_such_object" in line for line in warnings), built.stderr
    assert "Aborted with 2 warnings in strict mode" in built.stdout
