"""Packaging: a light import, the CLI, and third-party plugins found through entry points."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

HEAVY_MODULES = (
    "torch", "transformers", "librosa", "parselmouth", "dspy", "trl", "datasets", "sklearn", "openenv", "verifiers", "fastapi", "uvicorn",
)


def _modules_after(imports: str) -> set[str]:
    code = f"import sys; {imports}; print(chr(10).join(sys.modules))"
    return set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split())


def test_import_affectgym_loads_at_most_half_as_many_modules_again_as_gymnasium():
    # Counted, not timed: a module count does not move with the machine's load.
    python = _modules_after("pass")
    gymnasium = _modules_after("import gymnasium")
    affectgym = _modules_after("import affectgym")
    assert gymnasium <= affectgym
    assert len(affectgym - gymnasium) <= len(gymnasium - python) // 2, sorted(affectgym - gymnasium)


def test_import_affectgym_loads_no_heavy_library():
    code = f"import sys, affectgym; print([m for m in {HEAVY_MODULES!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "affectgym.cli", *args], capture_output=True, text=True, env=env
    )


def test_cli_list_prints_each_id_with_its_summary():
    import affectgym

    result = _cli("list")
    assert result.returncode == 0
    for env_id in affectgym.list_envs():
        assert env_id in result.stdout


def test_cli_errors_are_one_line_without_traceback():
    result = _cli("demo", "--env", "affectgym/NoSuchEnv-v0")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("affectgym: error:")


def test_plugin_registered_through_entry_point_is_listed(tmp_path):
    package = tmp_path / "affect_plugin_demo"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            '''
            import gymnasium as gym

            def register_envs():
                gym.register(id="plugindemo/Echo-v0", entry_point="affect_plugin_demo:EchoEnv")

            class EchoEnv(gym.Env):
                """Echo: a plugin environment found through the affectgym.envs entry point."""
            '''
        )
    )
    dist_info = tmp_path / "affect_plugin_demo-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: affect-plugin-demo\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[affectgym.envs]\ndemo = affect_plugin_demo:register_envs\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = _cli("list", env=env)
    assert result.returncode == 0, result.stderr
    assert "plugindemo/Echo-v0" in result.stdout
    assert "Echo: a plugin environment" in result.stdout


def test_broken_plugin_is_reported_and_does_not_break_import(tmp_path):
    dist_info = tmp_path / "broken_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[affectgym.envs]\nbroken = no_such_module:register\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = _cli("list", env=env)
    assert result.returncode == 0
    assert "plugin 'broken'" in result.stderr


def test_demo_without_training_lists_envs_and_plays_one_scored_episode():
    result = _cli("demo", "--no-train")
    assert result.returncode == 0, result.stderr
    assert "affectgym/Sarcasm-v0" in result.stdout
    assert "[TOOL (get_prosody_features)]" in result.stdout and "episode reward" in result.stdout
