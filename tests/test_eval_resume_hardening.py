"""``affectgym eval --resume`` as a user runs it: one agent per run folder, and a run that stopped on errors.

A resumed run plays the same agent with the same arguments as the episodes already on disk
(the agent, ``--agent-kwargs``, ``--adapter``, ``-t``, ``-T``, ``-S``): other ones are refused
before anything plays, naming what changed and what to do. A run that stopped on failed
episodes is not resumed into the same stop: ``--resume`` alone, which keeps them, is refused
before playing and names ``--resume --retry-errors``.
"""

from __future__ import annotations

import json

import pytest
from openai_server import OpenAIServer

from affectgym.cli import main

SARCASM = "affectgym/Sarcasm-v0"
FINAL_SINCERE = '<final>{"label": "sincere", "confidence": 0.6}</final>'


def eval_cli(capsys, *args: str) -> tuple[int, str]:
    """``affectgym eval ARGS`` through the real entry point: its exit status and its last stderr line."""
    capsys.readouterr()
    status = main(["eval", *args, "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    return status, lines[-1] if lines else ""


def test_resuming_a_random_agent_with_another_seed_is_refused_naming_old_and_new_and_what_to_do(tmp_path, capsys):
    out = tmp_path / "run"
    started = ("--agent", "random", "--agent-kwargs", '{"seed": 0}', "--out", str(out))
    assert eval_cli(capsys, SARCASM, *started, "-n", "2")[0] == 0
    before = (out / "results.jsonl").read_bytes()
    status, line = eval_cli(capsys, SARCASM, "--agent", "random", "--agent-kwargs", '{"seed": 7}', "--out", str(out),
                            "-n", "4", "--resume")  # fmt: skip
    assert status == 1
    assert "seed: recorded 0, now 7" in line
    assert "--agent-kwargs" in line and "the same env, agent and arguments" in line and "another --out" in line
    assert (out / "results.jsonl").read_bytes() == before
    assert json.loads((out / "metadata.json").read_text())["agent_kwargs"] == {"seed": 0}
    assert eval_cli(capsys, SARCASM, *started, "-n", "4", "--resume")[0] == 0  # the same arguments finish it


def test_resuming_with_another_agent_is_refused_naming_both(tmp_path, capsys):
    out = tmp_path / "run"
    assert eval_cli(capsys, SARCASM, "--agent", "random", "--out", str(out), "-n", "2")[0] == 0
    status, line = eval_cli(capsys, SARCASM, "--agent", "majority", "--out", str(out), "-n", "4", "--resume")
    assert status == 1
    assert "agent: recorded 'random', now 'majority'" in line and "another --out" in line


@pytest.mark.parametrize(
    ("changed", "difference"),
    [
        (("-t", "64"), "max_tokens: recorded 33, now 64"),
        (("-T", "0.3"), "temperature: recorded 0.7, now 0.3"),
        (("-S", '{"top_p": 0.5}'), "top_p: recorded (unset), now 0.5"),
        (("--agent-kwargs", '{"max_tokens": 33, "temperature": 0.7}'), None),  # the same values, given another way
    ],
)
def test_resuming_an_endpoint_agent_with_other_sampling_flags_is_refused(tmp_path, capsys, changed, difference):
    out = tmp_path / "run"
    with OpenAIServer(default_reply=FINAL_SINCERE) as server:
        endpoint = ("-m", "test-model", "-b", server.url, "--out", str(out))
        assert eval_cli(capsys, SARCASM, *endpoint, "-t", "33", "-T", "0.7", "-n", "2")[0] == 0
        calls = server.calls
        status, line = eval_cli(capsys, SARCASM, *endpoint, *changed, "-n", "4", "--resume")
        if difference is None:
            assert status == 0 and server.calls == calls + 2
            return
        assert status == 1 and server.calls == calls
    assert difference in line and "the same env, agent and arguments" in line


def test_a_resumed_run_may_change_how_replies_are_fetched_but_not_what_they_are(tmp_path, capsys):
    out = tmp_path / "run"
    with OpenAIServer(default_reply=FINAL_SINCERE) as server:
        endpoint = ("-m", "test-model", "-b", server.url, "--out", str(out))
        assert eval_cli(capsys, SARCASM, *endpoint, "--agent-kwargs", '{"timeout_s": 5, "max_retries": 0}', "-n", "2")[0] == 0
        resumed = eval_cli(capsys, SARCASM, *endpoint, "--agent-kwargs", '{"timeout_s": 60, "max_retries": 5}', "-n", "4",
                           "--resume")  # fmt: skip
    assert resumed[0] == 0, resumed[1]
    assert json.loads((out / "metadata.json").read_text())["agent_kwargs"] == {"timeout_s": 60, "max_retries": 5}


def test_resuming_a_local_model_with_another_adapter_is_refused_naming_both_folders(tmp_path, capsys):
    from peft import LoraConfig, get_peft_model
    from tiny_models import tiny_causal_lm
    from transformers import AutoModelForCausalLM

    model = tiny_causal_lm(tmp_path)
    adapters = []
    for seed in (0, 1):
        import torch

        torch.manual_seed(seed)
        lora = get_peft_model(AutoModelForCausalLM.from_pretrained(model), LoraConfig(r=2, target_modules=["q_proj"]))
        lora.save_pretrained(tmp_path / f"adapter-{seed}")
        adapters.append(str(tmp_path / f"adapter-{seed}"))
    out = tmp_path / "run"
    local = ("--agent", f"hf:{model}", "-t", "4", "--out", str(out))
    assert eval_cli(capsys, SARCASM, *local, "--adapter", adapters[0], "-n", "1")[0] == 0
    status, line = eval_cli(capsys, SARCASM, *local, "--adapter", adapters[1], "-n", "2", "--resume")
    assert status == 1
    assert f"adapter: recorded {adapters[0]!r}, now {adapters[1]!r}" in line and "--adapter" in line


def test_resume_alone_after_a_server_crash_is_refused_before_playing_and_names_retry_errors(tmp_path, capsys):
    out = tmp_path / "run"
    with OpenAIServer(default_reply=FINAL_SINCERE, fail_first=1000, fail_status=503) as server:
        args = (SARCASM, "-m", "test-model", "-b", server.url, "-n", "6", "--out", str(out),
                "--agent-kwargs", '{"max_retries": 0}')  # fmt: skip
        status, line = eval_cli(capsys, *args)
        assert status == 1 and "--resume --retry-errors" in line  # the server is down: the run stops
        server.fail_first = 0  # the server is back
        calls, before = server.calls, (out / "results.jsonl").read_bytes()
        status, line = eval_cli(capsys, *args, "--resume")
        assert status == 1 and server.calls == calls  # nothing played into the same stop
        assert (out / "results.jsonl").read_bytes() == before
        assert "stopped on errors" in line and "503" in line
        assert "--resume alone keeps them" in line and "rerun with --resume --retry-errors" in line
        status, line = eval_cli(capsys, *args, "--resume", "--retry-errors")
    assert status == 0, line
    assert json.loads((out / "summary.json").read_text())["errors"]["count"] == 0


def test_a_run_that_finishes_with_failed_episodes_says_how_to_play_them_again(tmp_path, capsys):
    out = tmp_path / "run"
    with OpenAIServer(default_reply=FINAL_SINCERE, fail_first=1, fail_status=503) as server:
        capsys.readouterr()
        status = main(["eval", SARCASM, "-m", "test-model", "-b", server.url, "-n", "4", "--out", str(out),
                       "--agent-kwargs", '{"max_retries": 0}', "--no-progress"])  # fmt: skip
    printed = capsys.readouterr().out
    assert status == 0
    assert "1 of the 4 episodes failed" in printed and "--resume --retry-errors" in printed
