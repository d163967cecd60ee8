"""`affectgym report` on run folders the real runner wrote: what a stranger needs to read each figure.

Runs of the speech envs with the LLM-free baselines; an adapter run is the baseline run with
its metadata.json rewritten as the runner writes it for ``--adapter`` (the agent's
description and kwargs name the adapter folder), beside the training folder that holds it.
"""

from __future__ import annotations

import json
import logging

import pytest

from affectgym.eval import EvalConfig, run_eval
from affectgym.eval.report import write_report

SPEECH_ID = "affectgym/SpeechEmotion-v0"
ADAPTER = "runs/x/adapter"
#: Held-out evaluations of a training run: the t interval of 0.9 and of 0.1 over 10 episodes reaches past [0, 1].
HELDOUT_ROWS = [
    {"step": 0, "episodes": 10, "accuracy": 0.1, "answered_rate": 0.6, "pivot_accuracy": 0.0},
    {"step": 10, "episodes": 10, "accuracy": 0.5, "answered_rate": 1.0, "pivot_accuracy": 0.5},
    {"step": 20, "episodes": 10, "accuracy": 0.9, "answered_rate": 1.0, "pivot_accuracy": 1.0},
]


def evaluate(out, env_id=SPEECH_ID, agent="majority", n=4, **env_kwargs):
    run_eval(EvalConfig(env_id=env_id, agent=agent, out=out, n=n, env_kwargs=env_kwargs, progress=False, command="test"))
    return out


def as_local_model_run(run, adapter):
    """Rewrite ``run``'s metadata as ``affectgym eval --agent smollm2-135m [--adapter ADAPTER]`` records it."""
    path = run / "metadata.json"
    metadata = json.loads(path.read_text())
    metadata["agent_spec"] = "smollm2-135m"
    metadata["agent"] = {"class": "affectgym.agents.transformers_agent.TransformersAgent",
                         "name": "smollm2-135m" if adapter is None else f"smollm2-135m+{adapter}",
                         "model": "smollm2-135m", "adapter": adapter, "max_new_tokens": 256, "temperature": 0.0}
    metadata["agent_kwargs"] = {} if adapter is None else {"adapter": adapter}
    path.write_text(json.dumps(metadata))
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A training folder ``x`` (adapter, held-out curve) with its base and trained evals; a reweighted run."""
    root = tmp_path_factory.mktemp("runs")
    training = root / "x"
    (training / "adapter").mkdir(parents=True)
    (training / "heldout.jsonl").write_text("".join(json.dumps(row) + "\n" for row in HELDOUT_ROWS))
    base = as_local_model_run(evaluate(training / "eval" / "base"), adapter=None)
    trained = as_local_model_run(evaluate(training / "eval" / "trained"), adapter=ADAPTER)
    reweighted = evaluate(root / "reweighted", dataset="embedded", reward_weights={"correctness": 1.0})
    return {"base": base, "trained": trained, "reweighted": reweighted}


def title_of(figure):
    return " ".join(figure._suptitle.get_text().split())


def test_an_adapter_run_is_labelled_with_its_adapter_so_base_and_trained_read_apart(runs, tmp_path, drawn):
    text = write_report([runs["base"], runs["trained"]], tmp_path / "report").read_text()
    assert f"agent smollm2-135m + adapter {ADAPTER}" in title_of(drawn["trained-confusion.png"])
    assert "agent smollm2-135m" in title_of(drawn["base-confusion.png"])
    assert "adapter" not in title_of(drawn["base-confusion.png"])
    legend = [entry.get_text() for entry in drawn["compare-rewards.png"].legends[0].get_texts()]
    assert legend == ["base: smollm2-135m", f"trained: smollm2-135m + adapter {ADAPTER}"]
    assert f"| agent | smollm2-135m | smollm2-135m + adapter {ADAPTER} |" in text
    assert f"- agent: `smollm2-135m + adapter {ADAPTER}`" in text


def test_titles_name_the_env_the_dataset_its_kwargs_choose_and_the_split(runs, tmp_path, drawn):
    write_report([runs["base"], runs["reweighted"]], tmp_path / "report")
    assert "base: SpeechEmotion-v0, split eval" in title_of(drawn["base-reliability.png"])
    assert "reweighted: SpeechEmotion-v0 (dataset embedded), split eval" in title_of(drawn["reweighted-rewards.png"])
    assert title_of(drawn["compare-f1.png"]).startswith(
        "SpeechEmotion-v0, split eval vs SpeechEmotion-v0 (dataset embedded), split eval: F1 per label")


def test_reliability_bars_say_how_many_episodes_each_bin_holds(runs, tmp_path, drawn):
    write_report([runs["base"]], tmp_path / "report")
    summary = json.loads((runs["base"] / "summary.json").read_text())
    counts = [b["count"] for b in summary["classification"]["reliability"]]
    figure = drawn["base-reliability.png"]
    count_axes = figure.axes[1]
    assert count_axes.get_ylabel() == "episodes" and count_axes.containers[0].datavalues.tolist() == counts == [4]
    assert [text.get_text() for text in count_axes.texts] == ["4"]
    assert "4 episodes, per bin below" in title_of(figure)


def test_the_held_out_learning_curve_of_a_trained_run_stays_inside_zero_and_one(runs, tmp_path, drawn):
    text = write_report([runs["base"], runs["trained"]], tmp_path / "report").read_text()
    assert "(trained-heldout-curve.png)" in text and "base-heldout-curve.png" not in text
    axes = drawn["trained-heldout-curve.png"].axes[0]
    band = axes.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == 0.0 and band[:, 1].max() == 1.0  # 0.1 - 0.23 and 0.9 + 0.23, clipped
    assert [line.get_label() for line in axes.lines] == ["accuracy", "answered rate", "pivot-only accuracy"]
    assert axes.get_ylim()[0] >= -0.05 and axes.get_ylim()[1] <= 1.05


def test_runs_scored_with_other_reward_weights_get_a_warning_and_no_side_by_side_reward_chart(runs, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="affectgym.eval.report"):
        text = write_report([runs["base"], runs["reweighted"]], tmp_path / "report").read_text()
    warning = next(line for line in text.splitlines() if line.startswith("> **Warning:**"))
    assert "reward weights differ" in warning and '"correctness": 1.0' in warning
    assert "env kwarg reward_weights differ" in warning and "dataset" not in warning
    assert any("reward weights differ" in record.getMessage() for record in caplog.records)
    assert "compare-rewards.png" not in text and not (tmp_path / "report" / "compare-rewards.png").exists()
    assert "(reweighted-rewards.png)" in text


def test_runs_scored_alike_get_the_side_by_side_reward_chart_and_no_warning(runs, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="affectgym.eval.report"):
        text = write_report([runs["base"], runs["trained"]], tmp_path / "report").read_text()
    assert "Warning" not in text and not [record for record in caplog.records if record.name == "affectgym.eval.report"]
    assert "(compare-rewards.png)" in text


def test_a_corpus_without_pivots_gets_no_pivot_or_has_audio_rows(runs, tmp_path):
    summary = json.loads((runs["base"] / "summary.json").read_text())
    assert set(summary["classification"]["subsets"]) == {"pivot", "has_audio"}  # each one-sided: all false, all true
    text = write_report([runs["base"]], tmp_path / "report").read_text()
    assert "| accuracy, pivot=" not in text and "| accuracy, has_audio=" not in text


def test_a_flag_that_splits_the_episodes_keeps_its_rows(tmp_path):
    # v1's eval split holds pivot pairs and lines said one way only
    run = evaluate(tmp_path / "sarcasm", env_id="affectgym/Sarcasm-v0", agent="random", n=None,
                   dataset="embedded-sarcasm-v1")
    subsets = json.loads((run / "summary.json").read_text())["classification"]["subsets"]
    text = write_report([run], tmp_path / "report").read_text()
    assert "| accuracy, pivot=true |" in text and "| accuracy, pivot=false |" in text
    assert set(subsets["has_audio"]) == {"true"} and "| accuracy, has_audio=" not in text
