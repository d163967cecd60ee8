"""Print the README's baseline table: the LM-free agents on Sarcasm-v0, scored by the eval runner.

Each row is what ``affectgym eval affectgym/Sarcasm-v0 --agent NAME --split eval`` prints
(the same runner, config and number format), and the line under the table is the
text-only memoriser of the leakage check that ``check_env`` runs. Paste the output into
README.md whenever the corpus, the split or a baseline changes::

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
    from affectgym.eval.runner import EvalConfig, run_eval

    lines = [
        "| agent | mean reward ± 95% CI | accuracy | pivot accuracy | ECE |",
        "|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        for spec, description in baselines:
            config = EvalConfig(env_id=ENV_ID, agent=spec, out=Path(scratch) / spec, split=split, progress=False)
            lines.append(baseline_row(spec, description, run_eval(config, fsync=False).summary))
    return "\n".join(lines) + "\n\n" + leakage_line(split)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="eval", help="split to evaluate on (default: eval)")
    args = parser.parse_args(argv)
    print(baseline_table(args.split))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
