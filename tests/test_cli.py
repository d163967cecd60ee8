"""The ``affectgym`` command as a user runs it: a subprocess, its exit status, its output.

Errors that say what to do before anything runs (agent or algorithm against the env's kind,
options of another algorithm, ``--env-kwargs`` holding the split, a missing model folder,
an unreachable hub), one training configuration printed and read back for every algorithm,
and the conventions people expect (``python -m affectgym``, ``--version``, ``list TEXT``,
the results table without a progress bar, vf-eval's endpoint flags).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from openai_server import OpenAIServer

import affectgym

TESTS = Path(__file__).parent
FINAL_SINCERE = '<final>{"label": "sincere", "confidence": 0.6}</final>'


def affectgym_cli(*args: str, env: dict[str, str] | None = None, timeout_s: float = 300) -> subprocess.CompletedProcess:
    """``python -m affectgym ARGS`` in a fresh process (this checkout first on the path)."""
    variables = {**os.environ, **(env or {})}
    variables["PYTHONPATH"] = os.pathsep.join(
        [str(TESTS.parent), *[p for p in (env or {}).get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    return subprocess.run(
        [sys.executable, "-m", "affectgym", *args], capture_output=True, text=True, env=variables, timeout=timeout_s
    )


def error_line(result: subprocess.CompletedProcess) -> str:
    """The one error line the command ends with (and there is no traceback)."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("affectgym: error:"), result.stderr
    return lines[-1]


def toy_plugin(tmp_path: Path) -> dict[str, str]:
    """Environment variables under which the plug-in guide's ToyMoodEnv is a registered plug-in env."""
    (tmp_path / "toy_mood_plugin.py").write_text(
        textwrap.dedent(
            """
            import gymnasium as gym

            def register_envs():
                gym.register(id="toyplugin/ToyMood-v0", entry_point="toy_env:ToyMoodEnv")
            """
        )
    )
    dist_info = tmp_path / "toy_mood_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-mood-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[affectgym.envs]\ntoy = toy_mood_plugin:register_envs\n")
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(TESTS)])}


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# --------------------------------------------------------------------------- agent and algorithm vs env
@pytest.mark.parametrize(
    ("env_id", "agent"),
    [
        ("affectgym/EmotionStyle-v0", "random"),
        ("affectgym/EmpatheticDialogue-v0", "majority"),
        ("affectgym/EmotionStateText-v0", "probe"),
    ],
)
def test_a_label_baseline_on_an_env_without_labels_fails_at_once_naming_the_agents_that_can(tmp_path, env_id, agent):
    out = tmp_path / "run"
    line = error_line(affectgym_cli("eval", env_id, "--agent", agent, "-n", "2", "--out", str(out)))
    assert f"agent '{agent}' cannot play {env_id}" in line and "label_set is empty" in line
    assert "agents that can: " in line and "openai:<model>@<base_url>" in line
    assert not (out / "results.jsonl").exists()


def test_a_label_baseline_on_a_plugin_env_with_another_answer_format_says_so(tmp_path):
    line = error_line(
        affectgym_cli("eval", "toyplugin/ToyMood-v0", "--agent", "majority", "--out", str(tmp_path / "run"), env=toy_plugin(tmp_path))
    )
    assert "agent 'majority' cannot play toyplugin/ToyMood-v0" in line
    assert "does not accept that answer format" in line


def test_the_prosody_rule_on_a_five_label_env_names_the_labels_it_needs(tmp_path):
    line = error_line(affectgym_cli("eval", "affectgym/SpeechEmotion-v0", "--agent", "prosody-rule", "--out", str(tmp_path / "r")))
    assert "needs the labels sarcastic/sincere" in line and "'happy'" in line
    assert re.search(r"agents that can: baseline, feature-probe, majority, probe", line)


def test_the_abort_message_counts_the_failed_episodes_that_are_on_disk(tmp_path):
    out = tmp_path / "run"
    result = affectgym_cli(
        "eval", "affectgym/Sarcasm-v0", "-m", "test-model", "-b", closed_port_url(), "-n", "4",
        "--agent-kwargs", '{"max_retries": 0, "timeout_s": 5}', "--out", str(out), "--no-progress",
    )  # fmt: skip
    line = error_line(result)
    failed, total = map(int, re.search(r"error: (\d+) of the (\d+) episodes in", line).groups())
    records = [json.loads(row) for row in (out / "results.jsonl").read_text().splitlines()]
    assert total == len(records) and failed == sum(1 for r in records if r["error"]) == len(records) >= 3
    assert "APIConnectionError" in line and "--resume" in line


def test_ppo_on_a_text_env_fails_at_once_naming_the_language_model_algorithms():
    line = error_line(affectgym_cli("train", "affectgym/Sarcasm-v0", "--algo", "ppo", "--timesteps", "64"))
    assert "--algo ppo trains on numeric envs" in line and "affectgym/Sarcasm-v0 is text" in line
    assert line.endswith("use --algo grpo, sft or dpo (rerun with --debug for the traceback)")


def test_grpo_on_the_numeric_env_fails_at_once_naming_ppo_and_sac():
    line = error_line(affectgym_cli("train", "affectgym/EmotionState-v0", "--max-steps", "1"))
    assert "--algo grpo trains on text envs" in line and "affectgym/EmotionState-v0 is numeric" in line
    assert "use --algo ppo or sac" in line


# --------------------------------------------------------------------------- --split and --env-kwargs
def test_env_kwargs_holding_the_split_is_refused_naming_the_split_option(tmp_path):
    line = error_line(
        affectgym_cli("eval", "affectgym/Sarcasm-v0", "--agent", "majority", "--env-kwargs", '{"split": "all"}',
                      "--out", str(tmp_path / "run"))
    )  # fmt: skip
    assert "env_kwargs sets split='all'" in line and "pass --split all instead" in line
    assert "--env-kwargs may not hold 'split'" in " ".join(affectgym_cli("eval", "--help").stdout.split())


# --------------------------------------------------------------------------- models and the hub
def test_an_hf_agent_with_a_missing_folder_says_folder_not_found(tmp_path):
    line = error_line(affectgym_cli("eval", "affectgym/Sarcasm-v0", "--agent", "hf:/nonexistent", "--out", str(tmp_path / "r")))
    assert "folder '/nonexistent' not found" in line and "validation" not in line.lower()


def test_an_uncached_hub_model_fails_at_once_when_the_hub_is_offline(tmp_path):
    line = error_line(
        affectgym_cli("eval", "affectgym/Sarcasm-v0", "--agent", "hf:affectgym-test/no-such-model", "--out", str(tmp_path / "r"),
                      env={"HF_HUB_OFFLINE": "1"})
    )  # fmt: skip
    assert "'affectgym-test/no-such-model' is no local folder and not in the local hub cache" in line
    assert "unreachable (HF_HUB_OFFLINE is set)" in line


# --------------------------------------------------------------------------- one training config
def test_print_config_with_algo_ppo_prints_timesteps_and_n_envs_and_trains_nothing(tmp_path):
    out = tmp_path / "never"
    printed = affectgym_cli("train", "affectgym/EmotionState-v0", "--algo", "ppo", "--timesteps", "2048",
                            "--n-envs", "2", "--output-dir", str(out), "--print-config")  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    values = yaml.safe_load(printed.stdout)
    assert values == {
        "env_id": "affectgym/EmotionState-v0", "algo": "ppo", "timesteps": 2048, "n_envs": 2, "output_dir": str(out),
        "eval_episodes": 20, "env_kwargs": {}, "seed": 0,
    }  # fmt: skip
    assert not out.exists()
    path = tmp_path / "ppo.yaml"
    path.write_text(printed.stdout)
    again = affectgym_cli("train", "--config", str(path), "--print-config")
    assert again.returncode == 0 and again.stdout == printed.stdout


def test_grpo_options_with_algo_ppo_are_refused_by_name(tmp_path):
    line = error_line(affectgym_cli("train", "affectgym/EmotionState-v0", "--algo", "ppo", "--max-steps", "3", "--model", "x"))
    assert "--model ('x'), --max-steps (3) apply only to --algo dpo/grpo/sft, not to --algo ppo" in line
    path = tmp_path / "mixed.yaml"
    path.write_text("env_id: affectgym/Sarcasm-v0\ntimesteps: 5000\n")
    line = error_line(affectgym_cli("train", "--config", str(path), "--print-config"))
    assert "--timesteps (5000) applies only to --algo ppo/sac, not to --algo grpo" in line


def test_a_ppo_run_writes_the_config_it_ran_with(tmp_path):
    out = tmp_path / "ppo"
    result = affectgym_cli("train", "affectgym/EmotionState-v0", "--algo", "ppo", "--timesteps", "256", "--n-envs", "1",
                           "--eval-episodes", "1", "--output-dir", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["timesteps"] == 256
    written = yaml.safe_load((out / "config.yaml").read_text())
    assert (written["algo"], written["timesteps"], written["n_envs"], written["eval_episodes"]) == ("ppo", 256, 1, 1)
    assert (out / "model.zip").is_file()


# --------------------------------------------------------------------------- conventions
def test_python_dash_m_affectgym_prints_the_version():
    result = affectgym_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"affectgym {affectgym.__version__}"


def test_list_verbose_prints_each_envs_manual_naming_every_rubric_and_task_format_it_takes_by_name():
    from affectgym.envs.dialogue_format import DIALOGUE_FORMATS
    from affectgym.envs.emotion_style import STYLE_RUBRICS
    from affectgym.envs.label_format import LABEL_FORMATS
    from affectgym.envs.speech_rubrics import SPEECH_RUBRICS
    from affectgym.envs.state_text_format import STATE_TEXT_FORMATS
    from affectgym.envs.style_format import STYLE_FORMATS

    result = affectgym_cli("list", "-v")
    assert result.returncode == 0
    ids = affectgym.list_envs()
    starts = sorted(result.stdout.index(f"{env_id}\n") for env_id in ids)
    manuals = {result.stdout[start:].split("\n", 1)[0]: result.stdout[start:end]
               for start, end in zip(starts, [*starts[1:], len(result.stdout)], strict=True)}
    assert set(manuals) == set(ids)
    for env_id, manual in manuals.items():
        for section in ("## Description", "## Rewards", "## Episode End", "## Arguments"):
            assert section in manual, f"{env_id}: no {section}"
    speech = manuals["affectgym/SpeechEmotion-v0"]
    assert all(f'"{name}"' in speech for name in (*SPEECH_RUBRICS, *LABEL_FORMATS))
    assert all(f'"{name}"' in manuals["affectgym/EmotionStyle-v0"] for name in (*STYLE_RUBRICS, *STYLE_FORMATS))
    assert all(f'"{name}"' in manuals["affectgym/EmpatheticDialogue-v0"] for name in DIALOGUE_FORMATS)
    assert all(f'"{name}"' in manuals["affectgym/EmotionStateText-v0"] for name in STATE_TEXT_FORMATS)


def test_list_filters_by_text_in_the_id_or_the_summary():
    result = affectgym_cli("list", "state")
    assert result.returncode == 0
    assert sorted(line.split()[0] for line in result.stdout.splitlines()) == [
        "affectgym/EmotionState-v0", "affectgym/EmotionStateText-v0",
    ]  # fmt: skip
    assert "affectgym/Sarcasm-v0" in affectgym_cli("list", "SARCASTIC").stdout
    nothing = affectgym_cli("list", "no-such-env")
    assert nothing.returncode == 1 and "no environment id or summary contains 'no-such-env'" in nothing.stdout


def test_list_datasets_lists_every_kind_with_the_envs_that_read_it_and_its_plug_ins(tmp_path):
    from affectgym.data import dialogues, instructions  # noqa: F401 - importing them registers their built-ins
    from affectgym.data.registry import KINDS, datasets

    (tmp_path / "my_dialogues_plugin.py").write_text(
        'def load(*, data_file, hub_name):\n    """Dialogues of my lab, from ``data_file``.\n\n    More.\n    """\n'
        "    return []\n"
    )
    dist_info = tmp_path / "my_dialogues_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-dialogues-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[affectgym.datasets.dialogue]\nmy-dialogues = my_dialogues_plugin:load\n")
    result = affectgym_cli("list", "--datasets", env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    sections = result.stdout.strip().split("\n\n")
    assert [section.split(" ", 1)[0] for section in sections] == list(KINDS)
    for (kind, declared), section in zip(KINDS.items(), sections, strict=True):
        heading, *rows = section.splitlines()
        assert f"{declared.argument}= of {', '.join(declared.envs)}" in heading and declared.group in heading
        assert set(datasets(kind)) <= {row.split()[0] for row in rows}, kind
        assert all(row.startswith("  ") and len(row.split()) > 1 for row in rows), "each dataset has a line about it"
    speech, dialogue = sections[0], sections[1]
    assert "(no data_dir)" in speech and "(data_dir needed)" in speech
    plug_in = [row.split(None, 1) for row in dialogue.splitlines() if row.split()[0] == "my-dialogues"]
    assert plug_in == [["my-dialogues", "Dialogues of my lab, from data_file."]]  # its docstring's first line


def test_eval_help_shows_the_reply_token_defaults_of_a_local_and_an_api_model():
    from affectgym.agents.openai_agent import OpenAIAgent
    from affectgym.agents.transformers_agent import TransformersAgent

    shown = " ".join(affectgym_cli("eval", "--help", env={"COLUMNS": "400"}).stdout.split())
    local = inspect.signature(TransformersAgent).parameters["max_new_tokens"].default
    api = inspect.signature(OpenAIAgent).parameters["max_tokens"].default
    assert f"(default {api} for an OpenAI-compatible agent, {local} a message for a local model)" in shown
    assert local <= 128, "a base model that never ends its turn costs this much a message on a CPU"


def test_no_progress_prints_plain_progress_lines_and_the_results_table_but_no_bar(tmp_path):
    result = affectgym_cli("eval", "affectgym/Sarcasm-v0", "--agent", "majority", "-n", "2", "--no-progress",
                           "--out", str(tmp_path / "run"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    progress = [line for line in result.stdout.splitlines() if line.startswith("eval ")]
    assert [line.split("  ")[0] for line in progress] == ["eval 0/2 episodes", "eval 1/2 episodes", "eval 2/2 episodes"]
    assert not any("━" in line for line in progress) and "accuracy" in result.stdout


# --------------------------------------------------------------------------- vf-eval's flags
def test_vf_eval_flags_reach_a_real_openai_compatible_server(tmp_path):
    with OpenAIServer(default_reply=FINAL_SINCERE, api_key="sk-test") as server:
        url = server.url
        result = affectgym_cli(
            "eval", "affectgym/Sarcasm-v0", "-m", "test-model", "-b", url, "-k", "AFFECTGYM_TEST_KEY",
            "-t", "33", "-T", "0.7", "-S", '{"top_p": 0.9, "min_p": 0.05, "temperature": 0.3}', "-n", "2",
            "--out", str(tmp_path / "run"), "--no-progress", env={"AFFECTGYM_TEST_KEY": "sk-test"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 2
    request = server.requests[0]
    assert (request["model"], request["max_tokens"], request["temperature"]) == ("test-model", 33, 0.3)
    assert (request["top_p"], request["min_p"]) == (0.9, 0.05)
    metadata = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert metadata["agent_spec"] == f"openai:test-model@{url}"
    assert metadata["agent_kwargs"] == {"api_key_env": "AFFECTGYM_TEST_KEY", "max_tokens": 33, "temperature": 0.3,
                                        "top_p": 0.9, "extra_body": {"min_p": 0.05}}  # fmt: skip


def test_an_unset_api_key_variable_is_named(tmp_path):
    line = error_line(
        affectgym_cli("eval", "affectgym/Sarcasm-v0", "-m", "m", "-b", closed_port_url(), "-k", "AFFECTGYM_NO_SUCH_KEY",
                      "--out", str(tmp_path / "run"))
    )  # fmt: skip
    assert "'AFFECTGYM_NO_SUCH_KEY'" in line and "is not set" in line


def test_sampling_flags_for_an_agent_that_is_not_openai_compatible_are_refused(tmp_path):
    line = error_line(affectgym_cli("eval", "affectgym/Sarcasm-v0", "--agent", "majority", "-T", "0.7", "--out", str(tmp_path / "r")))
    assert "-k/-t/-T/-S set an OpenAI-compatible agent" in line and "--agent-kwargs" in line
    line = error_line(affectgym_cli("eval", "affectgym/Sarcasm-v0", "--agent", "majority", "-m", "gpt-4o-mini"))
    assert "name the agent once" in line
    line = error_line(affectgym_cli("eval", "affectgym/Sarcasm-v0"))
    assert "name an agent: --agent SPEC" in line and "-m MODEL" in line


def test_push_to_hub_fails_before_the_run_when_the_hub_is_offline(tmp_path):
    out = tmp_path / "run"
    line = error_line(
        affectgym_cli("eval", "affectgym/Sarcasm-v0", "--agent", "majority", "-n", "2", "--out", str(out),
                      "--push-to-hub", "my-org/sarcasm-evals", env={"HF_HUB_OFFLINE": "1"})
    )  # fmt: skip
    assert "--push-to-hub: pushing to my-org/sarcasm-evals needs the Hugging Face hub" in line
    assert "HF_HUB_OFFLINE is set" in line and not out.exists()
