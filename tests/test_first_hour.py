"""What a newcomer meets in the first hour: the README's claims about installing and testing hold."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_text() -> str:
    return " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())


def test_the_readme_names_every_core_dependency_setup_cfg_installs():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    required = [re.split(r"[<>=!~ ;\[]", line.strip())[0] for line in config["options"]["install_requires"].splitlines()
                if line.strip()]
    claim = re.search(r"The core \(`pip install affectgym`\) needs ([^;]+);", readme_text())
    assert claim, "README: 'The core (`pip install affectgym`) needs ...;' is gone"
    named = re.split(r", | and ", claim.group(1))
    assert sorted(named) == sorted(required)


def test_make_test_quick_runs_test_files_that_exist_and_the_readme_times_it():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    quick = re.search(r"^QUICK_TESTS := (.*?)\n\n", makefile, re.MULTILINE | re.DOTALL)
    assert quick and "$(QUICK_TESTS)" in makefile.split("test-quick: setup", 1)[1].split("\n\n", 1)[0]
    paths = quick.group(1).replace("\\", " ").split()
    assert paths and all((ROOT / path).is_file() for path in paths), [p for p in paths if not (ROOT / p).is_file()]
    text = readme_text()
    assert re.search(r"`make test-quick` \d+ min \d+ s", text)


def test_a_script_beside_the_clone_imports_the_package_not_the_clones_folder(tmp_path):
    # The clone's folder named like the package, next to the user's script: an editable
    # install must still give the package (a static .pth puts the clone on sys.path after the
    # script's folder, and a regular package wins over a namespace portion).
    (tmp_path / "affectgym").symlink_to(ROOT, target_is_directory=True)
    (tmp_path / "use.py").write_text("import affectgym\nprint(affectgym.__file__)\nprint(callable(affectgym.make))\n")
    result = subprocess.run([sys.executable, "use.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (
        "a script beside a clone named affectgym imported the clone's folder as an empty namespace package; "
        "reinstall with `make setup` (setup.cfg's package_dir makes the editable install a static .pth): "
        + result.stderr[-500:]
    )
    assert result.stdout.split() == [str(ROOT / "affectgym" / "__init__.py"), "True"]


def test_the_scripted_demo_episode_names_its_agent_and_shows_the_gold_label(capsys):
    from affectgym.cli import main

    assert main(["demo", "--no-train"]) == 0
    shown = capsys.readouterr().out
    assert "played by the env's reference agent" in shown
    assert re.search(r"^gold label '(sarcastic|sincere)', answered '(sarcastic|sincere)'$", shown, re.MULTILINE)


def test_check_env_prints_nothing_and_returns_its_report(capsys):
    import affectgym

    report = affectgym.check_env(affectgym.make("affectgym/Sarcasm-v0"), fuzz_actions=50)
    assert capsys.readouterr().out == "" and not report.problems


def test_the_demo_hides_the_libraries_bars_and_known_warnings_but_no_other_warning(capfd):
    import warnings

    import datasets

    from affectgym.library_output import library_noise_hidden

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with library_noise_hidden():
            warnings.warn("`is_gradient_checkpointing` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
            warnings.warn("a warning of your own", UserWarning, stacklevel=1)
            datasets.Dataset.from_dict({"x": list(range(3))}).map(lambda row: row, desc="Tokenizing")
    assert [str(warning.message) for warning in seen] == ["a warning of your own"]
    assert "Tokenizing" not in capfd.readouterr().err
    assert not datasets.are_progress_bars_disabled(), "the setting is put back after the block"


def test_the_checkers_own_check_env_prints_nothing_either(capsys):
    import affectgym
    from affectgym.envs.checker import check_env

    report = check_env(affectgym.make("affectgym/Sarcasm-v0"), fuzz_actions=20)
    assert capsys.readouterr().out == "" and not report.problems
