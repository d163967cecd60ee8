"""Which offline emotion scorer reads the seven labels? Each one on a held-out set written for it.

The scorers (:data:`SCORERS`) are the offline backends of
:class:`~affectgym.rewards.classifier.EmotionClassifier`: ``nade`` at the EmotionStyle recipes'
neutral weight (0.25) and at the default (1), and ``probe``, the linear probe on SmolLM2-135M's
hidden states (:mod:`affectgym.rewards.emotion_probe`). Each is measured on:

1. **The validation set** (``affectgym/data/emotion_validation/``): 7 emotions x 20 situations
   x 3 paraphrases, replies that show the emotion and never name it, on situations that are
   none of the env's instructions, written apart from every reply the probe was fitted on.
   Reported: the confusion matrix, per-emotion recall, macro recall with a 95% interval
   (bootstrap over situations), calibration of the top label (ECE over 10 bins, Brier), and the
   spread of P(target) over the three paraphrases of a situation (the mean over situations of
   their standard deviation; the share of situations whose top label flips).
2. **The env's references**: on EmotionStyle-v0's eval split, the share of the 308 reference
   replies whose top label is their target, and their mean P(target).

The goals: macro recall >= 0.70, every emotion >= 0.50, references topped by their target on at
least 60% of the eval scenarios. Writes ``benchmarks/results/emotion_scorers.json`` and ``.md``,
and the figure ``docs/img/emotion_scorers_confusion.png``; every reply's distribution goes to
``emotion_scorers_rows.jsonl`` so it can be read and rescored.

    python benchmarks/bench_emotion_scorers.py
    python benchmarks/bench_emotion_scorers.py --report-only    # the tables and figure from the rows
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
FIGURE = Path(__file__).resolve().parents[1] / "docs" / "img" / "emotion_scorers_confusion.png"
ROWS = RESULTS / "emotion_scorers_rows.jsonl"
#: Scorer name -> EmotionClassifier arguments.
SCORERS: dict[str, dict[str, Any]] = {
    "nade@0.25": {"backend": "nade", "neutral_weight": 0.25},
    "nade@1": {"backend": "nade"},
    "probe": {"backend": "probe"},
}
GOAL_MACRO, GOAL_EACH, GOAL_REFERENCES = 0.70, 0.50, 0.60
BOOTSTRAP_REPLICATES = 2000


def score_rows() -> list[dict]:
    """Every scorer's distribution of every validation reply and eval reference."""
    import affectgym
    from affectgym.data.emotion_validation_set import load_emotion_validation
    from affectgym.rewards.classifier import EmotionClassifier

    replies = load_emotion_validation()
    env = affectgym.make("affectgym/EmotionStyle-v0", split="eval", classifier="nade").unwrapped
    references = [(scenario, env.reference_answer(scenario)[0]) for scenario in env.scenarios]
    rows = []
    for name, arguments in SCORERS.items():
        arguments = dict(arguments)
        classifier = EmotionClassifier(arguments.pop("backend"), **arguments)
        for reply, distribution in zip(replies, classifier.scores([r.reply for r in replies]), strict=True):
            rows.append({"scorer": name, "set": "validation", "id": reply.id, "group": reply.group, "target": reply.emotion,
                         "text": reply.reply, "distribution": distribution})
        for (scenario, text), distribution in zip(references, classifier.scores([t for _, t in references]), strict=True):
            rows.append({"scorer": name, "set": "references", "id": scenario.id, "group": scenario.id, "target": scenario.emotion,
                         "text": text, "distribution": distribution})
        print(f"scored with {name}", file=sys.stderr, flush=True)
    return rows


def summarise(rows: list[dict]) -> dict[str, dict]:
    """Per scorer: the measurements of the module docstring."""
    import numpy as np

    from affectgym.emotions import EMOTIONS
    from affectgym.eval.metrics import brier_score, expected_calibration_error

    summary = {}
    for name in dict.fromkeys(row["scorer"] for row in rows):
        validation = [row for row in rows if row["scorer"] == name and row["set"] == "validation"]
        top = [max(row["distribution"], key=row["distribution"].get) for row in validation]
        correct = [t == row["target"] for t, row in zip(top, validation, strict=True)]
        recall = {e: statistics.fmean(c for c, row in zip(correct, validation, strict=True) if row["target"] == e) for e in EMOTIONS}
        confusion = {e: {p: sum(1 for t, row in zip(top, validation, strict=True) if row["target"] == e and t == p) for p in EMOTIONS}
                     for e in EMOTIONS}
        groups: dict[str, list[int]] = defaultdict(list)
        for index, row in enumerate(validation):
            groups[row["group"]].append(index)
        keys = sorted(groups)
        by_emotion = {e: [k for k in keys if validation[groups[k][0]]["target"] == e] for e in EMOTIONS}
        rng = np.random.default_rng(0)
        macro_draws = []
        for _ in range(BOOTSTRAP_REPLICATES):  # resample situations within each emotion
            drawn = [statistics.fmean(correct[i] for k in rng.choice(own, size=len(own)) for i in groups[k])
                     for own in by_emotion.values()]
            macro_draws.append(statistics.fmean(drawn))
        p_target = [row["distribution"][row["target"]] for row in validation]
        confidence = [max(row["distribution"].values()) for row in validation]
        spreads = [statistics.pstdev([p_target[i] for i in groups[k]]) for k in keys]
        flips = [len({top[i] for i in groups[k]}) > 1 for k in keys]
        references = [row for row in rows if row["scorer"] == name and row["set"] == "references"]
        reference_top = [max(r["distribution"], key=r["distribution"].get) == r["target"] for r in references]
        macro = statistics.fmean(recall.values())
        summary[name] = {
            "replies": len(validation), "accuracy": statistics.fmean(correct), "macro_recall": macro,
            "macro_recall_ci95": [float(np.quantile(macro_draws, 0.025)), float(np.quantile(macro_draws, 0.975))],
            "recall": recall, "confusion": confusion,
            "ece": expected_calibration_error(confidence, correct), "brier": brier_score(confidence, correct),
            "mean_p_target": statistics.fmean(p_target),
            "paraphrase_sd_mean": statistics.fmean(spreads), "paraphrase_top_flips": statistics.fmean(flips),
            "references": len(references), "references_top_is_target": statistics.fmean(reference_top),
            "references_mean_p_target": statistics.fmean(r["distribution"][r["target"]] for r in references),
            "goals_met": macro >= GOAL_MACRO and min(recall.values()) >= GOAL_EACH
            and statistics.fmean(reference_top) >= GOAL_REFERENCES,
        }
    return summary


def markdown(summary: dict[str, dict]) -> str:
    """The summary table, then each scorer's confusion matrix."""
    from affectgym.emotions import EMOTIONS

    lines = ["# Offline emotion scorers on the held-out validation set", "",
             "Generated by `python benchmarks/bench_emotion_scorers.py`. Goals: macro recall >= 0.70, every emotion >= 0.50, "
             "EmotionStyle-v0's eval references topped by their target on >= 60%.", "",
             "| scorer | macro recall (95% CI) | lowest emotion | ECE | Brier | P(target) SD over paraphrases | top flips | "
             "references topped by target | goals |", "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for name, s in summary.items():
        low = min(s["recall"], key=s["recall"].get)
        lines.append(f"| `{name}` | {s['macro_recall']:.3f} ({s['macro_recall_ci95'][0]:.3f} to {s['macro_recall_ci95'][1]:.3f}) | "
                     f"{low} {s['recall'][low]:.2f} | {s['ece']:.3f} | {s['brier']:.3f} | {s['paraphrase_sd_mean']:.3f} | "
                     f"{s['paraphrase_top_flips']:.0%} | {s['references_top_is_target']:.1%} of {s['references']} | "
                     f"{'met' if s['goals_met'] else 'missed'} |")
    lines += ["", "Per-emotion recall:", "", "| scorer | " + " | ".join(EMOTIONS) + " |", "|---|" + "---:|" * len(EMOTIONS)]
    for name, s in summary.items():
        lines.append(f"| `{name}` | " + " | ".join(f"{s['recall'][e]:.2f}" for e in EMOTIONS) + " |")
    for name, s in summary.items():
        lines += ["", f"Confusion of `{name}` (rows: the emotion shown; columns: the top label; {s['replies']} replies):", "",
                  "| shown \\ read | " + " | ".join(EMOTIONS) + " |", "|---|" + "---:|" * len(EMOTIONS)]
        lines += [f"| {e} | " + " | ".join(str(s["confusion"][e][p]) for p in EMOTIONS) + " |" for e in EMOTIONS]
    return "\n".join(lines) + "\n"


def figure(summary: dict[str, dict], path: Path) -> None:
    """One confusion matrix per scorer, row-normalised, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from affectgym.emotions import EMOTIONS

    fig, axes = plt.subplots(1, len(summary), figsize=(4.6 * len(summary), 4.4), constrained_layout=True)
    for ax, (name, s) in zip(np.atleast_1d(axes), summary.items(), strict=True):
        matrix = np.array([[s["confusion"][e][p] for p in EMOTIONS] for e in EMOTIONS], dtype=float)
        matrix /= matrix.sum(axis=1, keepdims=True)
        ax.imshow(matrix, vmin=0, vmax=1, cmap="Blues")
        for i in range(len(EMOTIONS)):
            for j in range(len(EMOTIONS)):
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if matrix[i, j] > 0.5 else "black")
        ax.set_xticks(range(len(EMOTIONS)), EMOTIONS, rotation=45, ha="right")
        ax.set_yticks(range(len(EMOTIONS)), EMOTIONS)
        ax.set_xlabel("top label read")
        ax.set_ylabel("emotion shown")
        ax.set_title(f"{name}: macro recall {s['macro_recall']:.2f}")
    fig.suptitle("Offline emotion scorers on the validation set (share of each row)")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report-only", action="store_true", help="rebuild the tables and the figure from the committed rows")
    args = parser.parse_args(argv)
    if args.report_only:
        rows = [json.loads(line) for line in ROWS.read_text(encoding="utf-8").splitlines() if line]
    else:
        rows = score_rows()
        ROWS.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    summary = summarise(rows)
    (RESULTS / "emotion_scorers.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (RESULTS / "emotion_scorers.md").write_text(markdown(summary), encoding="utf-8")
    figure(summary, FIGURE)
    print(markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
