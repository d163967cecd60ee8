"""Results files: the outcome nested in each record, and run folders of the older flat format still loading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eval_runner import config, happy_reader, keys

from affectgym.agents.base import FunctionAgent
from affectgym.eval.report import load_run, write_report
from affectgym.eval.results import read_results, rewrite_results, upgrade_record, write_json
from affectgym.eval.runner import run_eval

#: Top-level keys of the older flat records that were the runner's own; a clashing outcome key got an ``outcome_`` prefix.
FLAT_FORMAT_RUNNER_KEYS = {
    "scenario_id", "rollout", "seed", "messages", "final_text", "final_answer", "reward", "reward_components",
    "step_rewards", "terminated", "truncated", "turns", "tool_calls", "timings", "error", "agent", "env_id",
}

#: One line as the older runner wrote it: the outcome spliced into the top level, listed in outcome_keys.
FLAT_FORMAT_LINE = {
    "scenario_id": "n02", "rollout": 0, "seed": 1204, "reward": 0.2, "reward_components": {"correct": 0.0, "read_first": 0.2},
    "step_rewards": [0.0, 0.2], "terminated": True, "truncated": False, "turns": 2, "final_answer": "happy",
    "final_text": "<answer>happy</answer>", "tool_calls": ["read_note"],
    "timings": {"total_s": 0.001, "env_s": 0.0005, "agent_s": 0.0005}, "error": None, "messages": [],
    "prediction": "happy", "label": "sad", "correct": False, "confidence": 0.8, "pivot": True, "outcome_turns": 7,
    "outcome_keys": ["prediction", "label", "correct", "confidence", "pivot", "outcome_turns"],
}


def without_judge_failures(record):
    """A current record without what the older runner did not count (``judge_failures``, at the top and in the outcome)."""
    kept = {key: value for key, value in record.items() if key != "judge_failures"}
    kept["outcome"] = {key: value for key, value in record["outcome"].items() if key != "judge_failures"}
    return kept


def to_flat_format(record):
    """A current record as the older runner wrote it."""
    record = without_judge_failures(record)
    flat = {key: value for key, value in record.items() if key != "outcome"}
    names = []
    for key, value in record["outcome"].items():
        name = f"outcome_{key}" if key in FLAT_FORMAT_RUNNER_KEYS else key
        flat[name] = value
        names.append(name)
    flat["outcome_keys"] = names
    return flat


@pytest.fixture
def flat_format_run(tmp_path):
    """A finished run folder rewritten as the older runner left it (flat records, no outcome_summaries in the metadata)."""
    result = run_eval(config(tmp_path, rollouts=2), agent=FunctionAgent(happy_reader))
    records, _ = read_results(result.out / "results.jsonl")
    (result.out / "results.jsonl").write_text("".join(json.dumps(to_flat_format(r)) + "\n" for r in records))
    metadata = json.loads((result.out / "metadata.json").read_text())
    for key in ("outcome_summaries", "user_simulator"):
        del metadata[key]
    (result.out / "metadata.json").write_text(json.dumps(metadata))
    return result.out, [without_judge_failures(r) for r in records], result.summary


def test_each_record_nests_the_env_outcome_and_keeps_no_outcome_field_at_the_top(tmp_path):
    result = run_eval(config(tmp_path, n=2), agent=FunctionAgent(happy_reader))
    for line in (result.out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert set(record["outcome"]) == {"prediction", "label", "correct", "confidence", "pivot", "judge_failures"}
        assert not set(record) & {"prediction", "label", "correct", "confidence", "pivot", "outcome_keys"}


def test_a_flat_format_record_is_converted_on_read():
    record = upgrade_record(FLAT_FORMAT_LINE)
    assert record["outcome"] == {"prediction": "happy", "label": "sad", "correct": False, "confidence": 0.8, "pivot": True, "turns": 7}
    assert record["turns"] == 2 and "outcome_keys" not in record and "prediction" not in record
    assert upgrade_record(record) is record  # a current record is left as it is
    hand_written = upgrade_record({"scenario_id": "a", "rollout": 0, "reward": 1.0, "label": "x"})
    assert hand_written["outcome"] == {"label": "x"} and hand_written["reward"] == 1.0


def test_the_report_of_a_flat_format_run_has_the_same_numbers(flat_format_run, tmp_path):
    out, records, summary = flat_format_run
    run = load_run(out)
    assert run.records == records
    (out / "summary.json").unlink()  # recomputed from the converted records, with the env's declared summaries
    recomputed = load_run(out).summary
    assert recomputed["classification"] == summary["classification"] and recomputed["reward"] == summary["reward"]
    assert recomputed["pass_at_k"] == summary["pass_at_k"]
    text = write_report([out], tmp_path / "report").read_text()
    assert "| accuracy | 0.500 |" in text


def test_resuming_a_flat_format_run_converts_its_file_and_plays_only_the_missing_episodes(flat_format_run, tmp_path):
    out, records, _ = flat_format_run
    path = out / "results.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:5]))  # as if killed after five episodes
    result = run_eval(config(tmp_path, rollouts=2, resume=True), agent=FunctionAgent(happy_reader))
    assert result.episodes_played == 7
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all("outcome_keys" not in r and isinstance(r["outcome"], dict) for r in lines)  # one format in the file
    assert lines[:5] == records[:5] and keys(lines) == keys(records)
    assert result.summary["classification"]["accuracy"] == pytest.approx(0.5)


def test_a_lone_surrogate_is_stored_as_u_fffd_in_results_and_json_files_as_the_judge_sends_it(tmp_path: Path) -> None:
    rewrite_results(tmp_path / "results.jsonl", [{"scenario_id": "n01", "rollout": 0, "final_text": "Yay \ud83d", "outcome": {}}])
    write_json(tmp_path / "summary.json", {"command": "eval --note 'cut \udc00'"})
    (record,), _ = read_results(tmp_path / "results.jsonl")
    assert record["final_text"] == "Yay \ufffd" and record["replaced_lone_surrogates"] == 1
    assert json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))["command"] == "eval --note 'cut \ufffd'"
