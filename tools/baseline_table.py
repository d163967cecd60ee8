"""Print the baseline tables of the docs' Evaluation page (docs/evaluation.md): the LM-free agents, scored by the eval runner.

Each row of the first table is what ``affectgym eval affectgym/Sarcasm-v0 --agent NAME
--split eval`` prints (the same runner, config and number format), and the line under it
is the text-only memoriser of the leakage check that ``check_env`` runs. The second table
is the discrimination ladder of ``affectgym data report affectgym/Sarcasm-v0`` on the
embedded corpus v2 beside v1's. The third is ``affectgym eval ENV --agent baseline`` for
every built-in env (the baseline its class recommends), with ``random`` beside the
controller on the numeric env. Paste the output into docs/evaluation.md, between its baseline-table markers, whenever a corpus, a split
or a baseline changes::

    python tools/baseline_table.py
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ENV_ID = "affectgym/Sarcasm-v0"
#: (agent spec, what it is), in the order of the table.
BASELINES: tuple[tuple[str, str], ...] = (
    ("feature-probe", "logistic regression on every number of the prosody tool, speaker-relative ones included"),
    ("prosody-rule", "thresholds on F0 range, F0 sd and pauses, fitted on train"),
    ("probe", "logistic regression on TF-IDF of the transcript + the prosody numbers"),
    ("probe-prosody", "the same probe, prosody numbers only"),
    ("probe-text", "the same probe, transcript only"),
    ("majority", "the most frequent train label"),
    ("random", "a uniformly random label"),
)


def baseline_row(spec: str, description: str, summary: Mapping[str, Any]) -> str:
    """One table row from a run's ``summary.json``."""
    from affectgym.eval.summary import format_number

    classification = summary["classification"]
    pivots = classification["subsets"]["pivot"]["true"]
    reward = summary["reward"]
    return (
        f"| `{spec}` ({description}) | {format_number(reward['mean'])} ± {format_number(reward['ci95'])} "
        f"| {format_number(classification['accuracy'])} | {format_number(pivots['accuracy'])} (n={pivots['n']}) "
        f"| {format_number(classification['ece'])} |"
    )


#: (env id, agent spec, env kwargs) of the second table, in its order. EmotionStyle-v0 is
#: scored by the offline classifier, so the numbers do not depend on hub access.
ENV_BASELINES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("affectgym/Sarcasm-v0", "baseline", {}),
    ("affectgym/SpeechEmotion-v0", "baseline", {}),
    ("affectgym/EmotionStyle-v0", "baseline", {"classifier": "nade"}),
    ("affectgym/EmpatheticDialogue-v0", "baseline", {}),
    ("affectgym/EmotionStateText-v0", "baseline", {}),
    ("affectgym/EmotionState-v0", "baseline", {}),
    ("affectgym/EmotionState-v0", "random", {}),
)


def env_baseline_row(env_id: str, spec: str, env_kwargs: Mapping[str, Any], agent: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    """One row of the per-env table from a run's ``metadata.json`` agent entry and ``summary.json``."""
    from affectgym.eval.summary import format_mean_ci95

    name = agent["name"] if spec == "baseline" else spec
    shown = f"`{spec}` = `{name}`" if spec == "baseline" else f"`{spec}`"
    options = ", ".join(f"{key}={value!r}" for key, value in env_kwargs.items())
    return (
        f"| `{env_id.removeprefix('affectgym/')}`{f' ({options})' if options else ''} | {shown} "
        f"| {format_mean_ci95(summary['reward'])} | {summary['episodes']} |"
    )


def env_baseline_table(split: str = "eval", rows: Sequence[tuple[str, str, dict[str, Any]]] = ENV_BASELINES) -> str:
    """The markdown table of each env's recommended baseline on ``split``."""
    import json

    from affectgym.eval import EvalConfig, run_eval

    lines = ["| env | agent | mean reward ± 95% CI | episodes |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as scratch:
        for index, (env_id, spec, env_kwargs) in enumerate(rows):
            out = Path(scratch) / str(index)
            config = EvalConfig(env_id=env_id, agent=spec, out=out, split=split, env_kwargs=dict(env_kwargs), progress=False)
            summary = run_eval(config, fsync=False).summary
            agent = json.loads((out / "metadata.json").read_text(encoding="utf-8"))["agent"]
            lines.append(env_baseline_row(env_id, spec, env_kwargs, agent, summary))
    return "\n".join(lines)


def leakage_line(split: str) -> str:
    """The text-only memoriser's accuracy on ``split``, fitted on train (``check_leakage``)."""
    import affectgym
    from affectgym.envs.leakage import check_leakage

    report = check_leakage(affectgym.make(ENV_ID, split="train"), affectgym.make(ENV_ID, split=split))
    rules = ", ".join(f"`{rule}` {accuracy:.3f}" for rule, accuracy in report.accuracy_by_rule.items())
    return (
        f"Text-only memoriser of the leakage check (nearest train line by TF-IDF, `check_leakage`): "
        f"{rules} on {report.n_eval} eval clips ({report.exact_twins} with a verbatim twin in train); "
        f"chance {report.chance:.3f}."
    )


def baseline_table(split: str = "eval", baselines: Sequence[tuple[str, str]] = BASELINES) -> str:
    """The markdown table (and the leakage line) for ``baselines`` on ``split``."""
    from affectgym.eval import EvalConfig, run_eval

    lines = [
        "| agent | mean reward ± 95% CI | accuracy | pivot accuracy | ECE |",
        "|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        for spec, description in baselines:
            config = EvalConfig(env_id=ENV_ID, agent=spec, out=Path(scratch) / spec, split=split, progress=False)
            lines.append(baseline_row(spec, description, run_eval(config, fsync=False).summary))
    return "\n".join(lines) + "\n\n" + leakage_line(split)


#: The corpora of the ladder table, (column heading, env kwargs), the default first.
LADDER_CORPORA: tuple[tuple[str, dict[str, Any]], ...] = (
    ("v2 (default)", {}),
    ("v1 (`dataset=\"embedded-sarcasm-v1\"`)", {"dataset": "embedded-sarcasm-v1"}),
)


def ladder_table(split: str = "eval", corpora: Sequence[tuple[str, dict[str, Any]]] = LADDER_CORPORA) -> str:
    """The discrimination ladder on ``split`` of each corpus, one column each, and the cue the first one's rungs chose."""
    from affectgym.eval.difficulty import discrimination_ladder
    from affectgym.eval.summary import format_number

    ladders = [discrimination_ladder(ENV_ID, split, kwargs, progress=False) for _, kwargs in corpora]
    headings = " | ".join(f"{heading}: {split} accuracy" for heading, _ in corpora)
    lines = [f"| rung (fitted on train) | {headings} | cue chosen on {corpora[0][0]} |",
             "|---" * (len(corpora) + 2) + "|"]
    for rungs in zip(*(ladder["rungs"] for ladder in ladders), strict=True):
        cells = " | ".join(format_number(rung["accuracy"]) for rung in rungs)
        lines.append(f"| {rungs[0]['name']} | {cells} | {rungs[0]['chosen'] or ''} |")
    return "\n".join(lines)


def baseline_tables(split: str = "eval") -> str:
    """The three tables, as they sit in docs/evaluation.md between the baseline-table markers."""
    return baseline_table(split) + "\n\n" + ladder_table(split) + "\n\n" + env_baseline_table(split)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="eval", help="split to evaluate on (default: eval)")
    args = parser.parse_args(argv)
    print(baseline_tables(args.split))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
