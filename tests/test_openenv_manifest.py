"""``affectgym manifest``: an OpenEnv ``openenv.yaml`` per served env, from its registration, docstring and validate's report.

The manifest of Sarcasm-v0 is built from a real validate run (2 scenarios, 2 replays: about
a second); OpenEnv's own parser and catalog producer read what is written (in ``.venv-openenv``;
they skip in ``.venv``); and the committed manifests under ``deploy/envs`` are held to what the
registration says now, through their static fields only (making each env: a few seconds, where
validating them all takes minutes).
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import affectgym
from affectgym.cli import build_parser, main
from affectgym.envs.registration import BUILTIN_ENVS, env_summary
from affectgym.envs.spaces import env_kind
from affectgym.envs.validation import validate
from affectgym.integrations.commands import MANIFEST_SPLIT
from affectgym.integrations.openenv.app import CONFIG_VARIABLE, ServeConfig, openenv_name
from affectgym.integrations.openenv.manifest import (
    DISCOVERY_FILE,
    MANIFEST_FILE,
    build_manifest,
    write_manifest,
)

SARCASM = "affectgym/Sarcasm-v0"
EVAL = {"split": "eval"}
#: Where the manifests of the built-in envs are committed, and the notes on how they were made.
COMMITTED = Path(__file__).resolve().parents[1] / "deploy" / "envs"
NEEDS_OPENENV = "needs openenv>=0.10: make test-openenv"
#: Scorers that change neither an env's tools nor its splits, chosen so that making the env is quick:
#: EmotionStyle-v0's default classifier "auto" builds the offline probe, 35 s on the tests' empty cache.
QUICK_SCORERS = {"affectgym/EmotionStyle-v0": {"classifier": "nade"}}


@pytest.fixture
def sarcasm_report():
    return validate(SARCASM, env_kwargs=EVAL, max_scenarios=2, replays=2)


@pytest.fixture
def sarcasm_manifest(sarcasm_report):
    return build_manifest(SARCASM, EVAL, sarcasm_report, max_scenarios=2, replays=2)


def results_without_durations(report) -> list[dict]:
    """The report's results as ``affectgym validate --json`` prints them, less the time each check took."""
    results = json.loads(report.to_json())["results"]
    return [{key: value for key, value in result.items() if key != "duration_s"} for result in results]


def committed_manifests() -> dict[str, dict]:
    """Every committed manifest, by its folder's name."""
    return {path.parent.name: yaml.safe_load(path.read_text(encoding="utf-8"))
            for path in sorted(COMMITTED.glob(f"*/{MANIFEST_FILE}"))}


def test_the_manifest_names_the_env_and_its_app_and_carries_validates_block_and_report(
    sarcasm_report, sarcasm_manifest, tmp_path
):
    path = write_manifest(sarcasm_manifest, tmp_path)
    assert path == tmp_path / "affectgym-sarcasm-v0" / MANIFEST_FILE
    manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert list(manifest)[:8] == ["spec_version", "name", "version", "description", "type", "runtime", "app", "port"]
    assert manifest["spec_version"] == 1 and manifest["name"] == "affectgym-sarcasm-v0"
    assert manifest["version"] == affectgym.__version__ and manifest["description"] == env_summary(SARCASM)
    assert (manifest["type"], manifest["runtime"], manifest["port"]) == ("space", "fastapi", 8000)
    module, attribute = manifest["app"].split(":")
    assert (module, attribute) == ("affectgym.integrations.openenv.app", "app_from_environment")
    assert callable(getattr(importlib.import_module(module), attribute))
    assert manifest["validation"] == sarcasm_report.validation_block()

    block = manifest["affectgym"]
    assert block["env_id"] == SARCASM and block["env_kwargs"] == EVAL
    report = block["validate"]["report"]
    assert report["verdict"] == sarcasm_report.verdict == "pass"
    assert report["results"] == results_without_durations(sarcasm_report)
    assert report["validation"] == manifest["validation"] and report["target"] == SARCASM


def test_the_manifest_says_how_to_serve_the_env_by_command_by_app_factory_and_by_the_env_image(sarcasm_manifest):
    served = sarcasm_manifest["affectgym"]["serve"]
    assert served["command"] == "affectgym serve affectgym/Sarcasm-v0 --split eval --port 8000"
    assert served["app_config"]["variable"] == CONFIG_VARIABLE
    config = ServeConfig(**json.loads(served["app_config"]["value"]))
    assert (config.env_id, config.env_kwargs) == (SARCASM, EVAL)
    assert served["image_variables"] == {"AFFECTGYM_ENV_ID": SARCASM, "AFFECTGYM_SPLIT": "eval"}


def test_extra_env_kwargs_reach_the_serve_command_and_the_image_but_a_manifest_needs_a_split(sarcasm_report):
    manifest = build_manifest(SARCASM, {"split": "eval", "max_turns": 4}, sarcasm_report, max_scenarios=2, replays=2)
    served = manifest["affectgym"]["serve"]
    assert shlex.split(served["command"])[3:] == ["--split", "eval", "--env-kwargs", '{"max_turns": 4}', "--port", "8000"]
    assert served["image_variables"]["AFFECTGYM_ENV_KWARGS"] == '{"max_turns": 4}'
    with pytest.raises(ValueError, match="name no split"):
        build_manifest(SARCASM, {"max_turns": 4}, sarcasm_report, max_scenarios=2, replays=2)


def test_the_validate_command_in_the_manifest_reproduces_its_report(sarcasm_manifest, capsys):
    recorded = sarcasm_manifest["affectgym"]["validate"]
    argv = shlex.split(recorded["command"])
    assert argv[:3] == ["affectgym", "validate", SARCASM]
    assert main(argv[1:]) == 0
    printed = json.loads(capsys.readouterr().out)
    printed["results"] = [{k: v for k, v in result.items() if k != "duration_s"} for result in printed["results"]]
    assert printed == recorded["report"]


def test_the_command_writes_the_bytes_the_library_does_one_line_a_manifest_and_the_licence_beside_it(
    sarcasm_manifest, tmp_path, capsys
):
    expected = write_manifest(sarcasm_manifest, tmp_path / "library")
    assert main(["manifest", SARCASM, "--max-scenarios", "2", "--replays", "2", "--out", str(tmp_path / "cli")]) == 0
    written = tmp_path / "cli" / "affectgym-sarcasm-v0" / MANIFEST_FILE
    assert written.read_bytes() == expected.read_bytes()  # a second validate run, the same bytes: no times, no dates
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"wrote {written} ({SARCASM}, split eval: validate pass")
    assert json.loads((written.parent / DISCOVERY_FILE).read_text(encoding="utf-8")) == {"license": "Apache-2.0"}


def test_openenvs_own_parser_reads_the_written_manifest(sarcasm_report, sarcasm_manifest, tmp_path):
    parsers = pytest.importorskip("openenv.validation.parsers.openenv_yaml", reason=NEEDS_OPENENV)
    folder = write_manifest(sarcasm_manifest, tmp_path).parent
    parsed = parsers.OpenEnvYamlParser().parse(folder)
    assert (parsed.manifest_schema_version, parsed.name, parsed.version) == ("1", "affectgym-sarcasm-v0", affectgym.__version__)
    assert parsed.reward.range == (-0.2, 1.0) and parsed.resources.memory_mb == 2048
    assert parsed.capabilities.declared_tools == sarcasm_report.tools
    assert parsed.capabilities.declared_task_count == sarcasm_report.task_count == {"eval": 46}
    assert parsed.types.tags == ["affectgym"] and parsed.judge is None


def test_openenvs_catalog_makes_one_environment_card_per_committed_manifest_without_an_error(tmp_path):
    producer = pytest.importorskip("openenv.discovery.producer", reason=NEEDS_OPENENV)
    git = shutil.which("git") or pytest.skip("build_catalog reads a git repository: git is not installed")
    repository = tmp_path / "repository"
    shutil.copytree(COMMITTED, repository / "deploy" / "envs")
    for arguments in (["init", "-q"], ["add", "-A"],
                      ["-c", "user.name=affectgym", "-c", "user.email=tests@affectgym.invalid", "-c", "commit.gpgsign=false",
                       "commit", "-q", "-m", "the env manifests"]):
        subprocess.run([git, "-C", str(repository), *arguments], check=True, capture_output=True, timeout=60)
    snapshot = producer.build_catalog(repository, repository_uri="https://github.com/affectgym/affectgym.git",
                                      publisher="affectgym.example", root="deploy/envs")
    assert snapshot.complete and not [issue for issue in snapshot.issues if issue.severity == "error"], snapshot.issues
    manifests = committed_manifests()
    cards = {Path(entry.data.source.path).name: entry.data for entry in snapshot.entries}
    assert set(cards) == set(manifests) and len(snapshot.entries) == len(manifests) >= 5
    for folder, card in cards.items():
        assert (card.name, card.description) == (manifests[folder]["name"], manifests[folder]["description"])
        assert card.license == "Apache-2.0" and card.manifest_spec_version == 1


def test_every_builtin_text_env_has_a_committed_manifest_that_matches_its_registration_now():
    expected = {}
    for env_id in BUILTIN_ENVS:
        env = affectgym.make(env_id, split=MANIFEST_SPLIT, **QUICK_SCORERS.get(env_id, {}))
        try:
            if env_kind(env) != "text":  # affectgym serve serves text envs only
                continue
            base = env.unwrapped
            expected[openenv_name(env_id)] = {
                "env_id": env_id, "env_kwargs": {"split": MANIFEST_SPLIT}, "name": openenv_name(env_id),
                "description": env_summary(env_id), "declared_tools": list(base.tools),
                "declared_task_count": {base.split: len(base.scenario_ids)},
            }
        finally:
            env.close()
    found = {
        folder: {
            "env_id": manifest["affectgym"]["env_id"], "env_kwargs": manifest["affectgym"]["env_kwargs"],
            "name": manifest["name"], "description": manifest["description"],
            "declared_tools": manifest["validation"]["capabilities"]["declared_tools"],
            "declared_task_count": manifest["validation"]["capabilities"]["declared_task_count"],
        }
        for folder, manifest in committed_manifests().items()
    }
    assert found == expected, "deploy/envs is out of date: regenerate it with the command in deploy/envs/README.md"


def test_the_readme_records_the_command_that_wrote_the_committed_manifests():
    readme = (COMMITTED / "README.md").read_text(encoding="utf-8")
    shell = [line for block in re.findall(r"^```bash\n(.*?)^```", readme, re.MULTILINE | re.DOTALL) for line in block.splitlines()]
    recorded = [shlex.split(line) for line in shell if "manifest" in shlex.split(line)]
    assert len(recorded) == 1, "deploy/envs/README.md should name one `affectgym manifest` command"
    argv = recorded[0]
    args = build_parser().parse_args(argv[argv.index("affectgym") + 1:])
    assert args.all and args.out == Path("deploy/envs") and args.split == MANIFEST_SPLIT
    for manifest in committed_manifests().values():
        validate_argv = shlex.split(manifest["affectgym"]["validate"]["command"])
        assert validate_argv[validate_argv.index("--max-scenarios") + 1] == str(args.max_scenarios)
        assert validate_argv[validate_argv.index("--replays") + 1] == str(args.replays)


@pytest.mark.parametrize(("argv", "message"), [
    (["affectgym/NoSuchEnv-v0"], "unknown env id 'affectgym/NoSuchEnv-v0'; registered: affectgym/Sarcasm-v0, "),
    ([], "name at least one env id, or give --all; registered: affectgym/Sarcasm-v0"),
    (["--all", SARCASM], "name the envs (ENV_ID ...) or give --all, not both"),
    ([SARCASM, "--max-scenarios", "0"], "--max-scenarios must be a positive integer, got 0"),
    ([SARCASM, "--replays", "1"], "--replays must be an integer of at least 2, got 1"),
    ([SARCASM, "--split", "nope"], "affectgym/Sarcasm-v0 cannot be made with --split nope: unknown split 'nope'; accepted: 'train'"),
    (["affectgym/EmotionState-v0"], "affectgym/EmotionStateText-v0 is the text form of affectgym/EmotionState-v0"),
])
def test_bad_input_exits_2_with_one_line_naming_what_was_wrong_and_what_is_accepted(argv, message, tmp_path, capsys):
    assert main(["manifest", *argv, "--out", str(tmp_path / "envs")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("affectgym manifest: ") and message in error and error.count("\n") == 1, error
    assert not (tmp_path / "envs").exists()


def test_an_out_that_is_a_file_exits_2_before_any_env_is_validated(tmp_path, capsys):
    taken = tmp_path / "envs.txt"
    taken.write_text("not a folder\n", encoding="utf-8")
    for out in (taken, taken / "inside"):
        assert main(["manifest", SARCASM, "--out", str(out)]) == 2
        error = capsys.readouterr().err
        assert f"--out {out}: {taken} is a file, not a folder; name a folder" in error and "Traceback" not in error
