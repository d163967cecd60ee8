"""Does RLAIF in affectgym teach? SFT, then online DPO from the env's rubric, on held-out dialogues.

The emotional-RLAIF recipe on ``affectgym/EmpatheticDialogue-v0`` (tagged three-sentence
turns, each scored by the env's per-turn rubric), with the embedded SmolLM2-135M-Instruct:

* ``base``: the untrained model (greedy: the same on every seed, so played once);
* ``sft``: supervised fine-tuning on the train split's reference replies
  (:func:`affectgym.train.recipes.dialogue_reference_sft_config`): what imitation alone
  gives, the control;
* ``sft+dpo``: the same adapter, then online DPO in rounds
  (:func:`affectgym.train.recipes.dialogue_dpo_config`): the policy samples replies to train
  turns, the env's rubric ranks them (the AI feedback), and TRL's ``DPOTrainer`` trains on
  the best vs the worst.

Every arm plays the whole held-out split (27 turns of 9 dialogues, none seen in training,
nor their references) through the eval runner as it is deployed: each episode starts at one
turn with the dialogue's history, the model answers every remaining turn (greedy, at most
:data:`~affectgym.train.recipes.DIALOGUE_MAX_NEW_TOKENS` tokens). Per turn: the rubric's
reward, structure validity (three tagged sentences), tag accuracy (overall and per slot),
the emotion each sentence expresses (the rubric's classifier term), length in range (20-25
words), open questions, BLEU-4 and ROUGE-1/2/L against the reference reply, and words per
reply; mean ± 95% CI over seeds, and each arm's paired difference to ``sft``.

Results are written as they come: ``benchmarks/results/dialogue_learning_runs.jsonl`` (one
line per arm and seed; a rerun skips what is there and resumes unfinished stages from their
checkpoints), every held-out turn of every arm to ``benchmarks/results/dialogue_samples.jsonl``
(the episode, which starts at one turn with the dataset's history, the user's line, the
required tags, the reply, the reference, the reward and its components), the summary to
``benchmarks/results/dialogue_learning.json``. ``--sft-steps N`` and ``--dpo-rounds R`` other
than the recipe's 90 and 3 keep their summary apart (``dialogue_learning_sftN_rR.json``; the
base model's row is shared); rows and turns carry their ``sft_steps`` and ``dpo_rounds``, and
folders end ``-sftN`` and ``-rR`` except at the benchmark's first settings (30 and 2). A run
of more rounds starts from a copy of the same seed's run of fewer (its first rounds are the
same) and adds the rest.

Usage (two processes, one core each, fill one results file; a DPO process peaks at ~10 GB,
so no more than two on 24 GB; about 3.5 hours)::

    taskset -c 0 python benchmarks/bench_dialogue_learning.py --seeds 0 2 --threads 1 &
    taskset -c 1 python benchmarks/bench_dialogue_learning.py --seeds 1 --threads 1 &
    python benchmarks/bench_dialogue_learning.py --report-only
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stages import append_jsonl, done, read_jsonl, rerun_options, run_missing, use_threads

from affectgym.train.recipes import (
    DIALOGUE_ENV_ID,
    DIALOGUE_MAX_NEW_TOKENS,
    dialogue_dpo_config,
    dialogue_reference_sft_config,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUNS_FILE = RESULTS / "dialogue_learning_runs.jsonl"
SAMPLES_FILE = RESULTS / "dialogue_samples.jsonl"
SUMMARY_FILE = RESULTS / "dialogue_learning.json"
WORK = ROOT / "runs" / "bench_dialogue"
ARMS = ("base", "sft", "sft+dpo")
#: Per-turn metrics of the held-out turns, in the table's order.
METRICS = ("reward", "structure_valid", "tag_accuracy", "tag_accuracy_slot1_user_emotion",
           "tag_accuracy_slot2_requested_emotion", "tag_accuracy_slot3_neutral", "expressed_emotion",
           "length_in_range", "open_question", "bleu4", "rouge1", "rouge2", "rougeL", "words")
SFT_STEPS = 90
DPO_ROUNDS = 3
#: The SFT steps and DPO rounds whose runs' folders carry no suffix (the benchmark's first
#: settings); other settings' folders end ``-sftN`` and ``-rR``.
PLAIN_FOLDER_SFT_STEPS = 30
PLAIN_FOLDER_DPO_ROUNDS = 2
DPO_STEPS = 12


def steps_suffix(sft_steps: int, dpo_rounds: int = 0) -> str:
    """What the folders of runs of ``sft_steps`` SFT steps and ``dpo_rounds`` DPO rounds (0: none) end with."""
    return (("" if sft_steps == PLAIN_FOLDER_SFT_STEPS else f"-sft{sft_steps}")
            + ("" if dpo_rounds in (0, PLAIN_FOLDER_DPO_ROUNDS) else f"-r{dpo_rounds}"))


def arm_settings(arm: str, sft_steps: int, dpo_rounds: int) -> dict[str, int]:
    """The SFT steps and DPO rounds an arm's rows and turns record: 0 for a stage it does not run."""
    return {"sft_steps": 0 if arm == "base" else sft_steps, "dpo_rounds": dpo_rounds if arm == "sft+dpo" else 0}


def sft_stage(seed: int, steps: int) -> tuple[Path, dict[str, Any]]:
    """The reference SFT adapter and its summary."""
    from affectgym.train.sft import train_sft

    out = WORK / f"s{seed}" / f"sft{steps_suffix(steps)}"
    if not done(out):
        train_sft(dialogue_reference_sft_config(out, seed=seed, max_steps=steps), progress=True, **rerun_options(out))
    return out / "adapter", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def dpo_stage(seed: int, rounds: int, steps: int, sft_adapter: Path, sft_steps: int) -> tuple[Path, dict[str, Any]]:
    """The DPO adapter trained from the SFT adapter (of ``sft_steps`` steps), and its summary."""
    from affectgym.train.config import config_to_yaml, load_config
    from affectgym.train.dpo import train_dpo

    out = WORK / f"s{seed}" / f"dpo{steps_suffix(sft_steps, rounds)}"
    if not dpo_done(out, rounds):
        shorter = ((WORK / f"s{seed}" / f"dpo{steps_suffix(sft_steps, fewer)}", fewer) for fewer in range(rounds - 1, 0, -1))
        start = next((run for run, fewer in shorter if dpo_done(run, fewer)), None)
        if start is not None and not out.exists():
            shutil.copytree(start, out)
            started = load_config(out / "config.yaml")
            (out / "config.yaml").write_text(config_to_yaml(dataclasses.replace(started, output_dir=str(out))),
                                             encoding="utf-8")
        config = dialogue_dpo_config(out, str(sft_adapter), seed=seed, rounds=rounds, max_steps=steps)
        train_dpo(config, progress=True, **rerun_options(out))
    return out / "adapter", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def dpo_done(run: Path, rounds: int) -> bool:
    """Whether the DPO run in ``run`` has finished all ``rounds`` (a copy of a shorter run has not)."""
    return done(run) and len(json.loads((run / "summary.json").read_text(encoding="utf-8"))["rounds"]) == rounds


def dpo_split_s(dpo_dir: Path) -> dict[str, float]:
    """Seconds the DPO rounds spent in the trainer (TRL's ``train_runtime``), summed over rounds."""
    history = json.loads((dpo_dir / "log_history.json").read_text(encoding="utf-8"))
    return {"dpo_trainer_s": sum(row.get("train_runtime", 0.0) for row in history)}


def turn_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every played turn of the eval records, with the user's line that opened it and its episode's id.

    The episode's replies are its last assistant messages (the history before them holds
    the dataset's reference replies); each answers the user message before it.
    """
    rows = []
    for record in records:
        messages = record.get("messages", [])
        openers = [messages[i - 1].get("content") if i and messages[i - 1].get("role") == "user" else None
                   for i, m in enumerate(messages) if m.get("role") == "assistant"]
        played = (record.get("outcome") or {}).get("dialogue_turns") or []
        rows += [{**turn, "user": user, "episode": record.get("scenario_id")}
                 for turn, user in zip(played, openers[len(openers) - len(played):], strict=True)]
    return rows


def turn_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The per-turn metrics of :data:`METRICS`, averaged over the turns."""
    from affectgym.eval.dialogue_metrics import dialogue_summary

    summary = dialogue_summary(rows)
    components = [row.get("reward_components") or {} for row in rows]

    def share(flags: list[bool]) -> float:
        return sum(flags) / len(flags)

    return {
        "reward": sum(float(r["reward"]) for r in rows) / len(rows),
        "structure_valid": share([r.get("parse_error") is None for r in rows]),
        **{name: summary[name] for name in METRICS if name.startswith("tag_accuracy")},
        "expressed_emotion": sum(c.get("expressed_emotion", 0.0) for c in components) / len(rows),
        "length_in_range": share([c.get("length", 0.0) >= 1.0 for c in components]),
        "open_question": share([c.get("open_question", 0.0) >= 1.0 for c in components]),
        **{name: summary[name] for name in ("bleu4", "rouge1", "rouge2", "rougeL")},
        "words": sum(len((r.get("reply") or "").split()) for r in rows) / len(rows),
    }


def play(arm: str, seed: int, adapter: Path | None, settings: dict[str, int]) -> dict[str, Any]:
    """The arm's held-out turns through the eval runner: its metrics and every turn (``settings``: :func:`arm_settings`)."""
    from affectgym.eval.results import read_results
    from affectgym.eval.runner import EvalConfig, run_eval

    out = WORK / ("eval-base" if adapter is None else f"s{seed}/eval-{arm}{steps_suffix(**settings)}")
    agent_kwargs: dict[str, Any] = {"max_new_tokens": DIALOGUE_MAX_NEW_TOKENS, "temperature": 0.0, "max_batch_size": 16}
    if adapter is not None:
        agent_kwargs["adapter"] = str(adapter)
    if not done(out):
        run_eval(EvalConfig(env_id=DIALOGUE_ENV_ID, agent="hf:smollm2-135m", out=out, split="eval", seed=seed,
                            agent_kwargs=agent_kwargs, concurrency=16, progress=False, max_fail_fraction=1.0,
                            resume=out.exists()))
    records, _ = read_results(out / "results.jsonl")
    rows = turn_rows(records)
    samples = [
        {"arm": arm, "seed": seed, **settings, "episode": r["episode"], "turn_id": r["turn_id"], "user": r["user"],
         "required_tags": r["required_tags"],
         "reply": r["reply"], "reference": r["reference"], "reward": r["reward"],
         "reward_components": r["reward_components"], "parse_error": r.get("parse_error")}
        for r in rows
    ]
    return {"metrics": {**turn_metrics(rows), "turns": len(rows), "episodes": len(records)}, "samples": samples}


def run_arm(arm: str, seed: int, sft_steps: int, dpo_rounds: int, dpo_steps: int) -> None:
    """Train (as needed) and evaluate one arm of one seed; append its row and its turns."""
    cost: dict[str, Any] = {"steps": 0, "train_s": 0.0}
    adapter = None
    if arm != "base":
        adapter, sft = sft_stage(seed, sft_steps)
        cost = {"steps": sft["steps"], "train_s": sft["train_s"]}
        if arm == "sft+dpo":
            adapter, dpo = dpo_stage(seed, dpo_rounds, dpo_steps, adapter, sft_steps)
            cost = {"steps": dpo["steps"], "train_s": dpo["train_s"], "pairs": [r["pairs"] for r in dpo["rounds"]],
                    **dpo_split_s(adapter.parent)}
    settings = arm_settings(arm, sft_steps, dpo_rounds)
    played = play(arm, seed, adapter, settings)
    row = {"arm": arm, "seed": seed, **settings, "dpo_steps_per_round": dpo_steps if arm == "sft+dpo" else 0,
           **played["metrics"], **cost,
           "steps_per_min": 60 * cost["steps"] / cost["train_s"] if cost["train_s"] else None}
    append_jsonl(SAMPLES_FILE, played["samples"])
    append_jsonl(RUNS_FILE, [row])
    print(f"{arm} seed {seed}: " + ", ".join(f"{k} {row[k]:.3f}" for k in METRICS), flush=True)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean ± 95% CI over seeds of every metric, and each arm's paired difference to ``sft``."""
    from affectgym.eval.metrics import mean_ci95

    by_arm: dict[str, dict[int, dict[str, Any]]] = {}
    for row in rows:
        by_arm.setdefault(row["arm"], {})[row["seed"]] = row
    sft = by_arm.get("sft", {})
    arms: dict[str, Any] = {}
    for arm in ARMS:
        seeds = by_arm.get(arm)
        if not seeds:
            continue
        entry: dict[str, Any] = {"seeds": sorted(seeds), "turns": next(iter(seeds.values()))["turns"]}
        for metric in (*METRICS, "steps_per_min"):
            values = [seeds[s][metric] for s in sorted(seeds) if seeds[s].get(metric) is not None]
            if values:
                entry[f"{metric}_mean"], entry[f"{metric}_ci95"] = mean_ci95(values)
        paired = sorted(set(seeds) & set(sft))
        if arm == "sft+dpo" and paired:
            entry["delta_vs_sft"] = {"seeds": len(paired)}
            for metric in METRICS:
                mean, half = mean_ci95([seeds[s][metric] - sft[s][metric] for s in paired])
                entry["delta_vs_sft"][metric] = {"mean": mean, "ci95_low": mean - half, "ci95_high": mean + half}
        arms[arm] = entry
    return {
        "env_id": DIALOGUE_ENV_ID, "split": "eval", "multi_step": True,
        "decoding": {"greedy": True, "max_new_tokens": DIALOGUE_MAX_NEW_TOKENS},
        "sft_steps": max((r["sft_steps"] for r in rows), default=0),
        "dpo_rounds": max((r["dpo_rounds"] for r in rows), default=0),
        "dpo_steps_per_round": max((r["dpo_steps_per_round"] for r in rows), default=0), "arms": arms,
    }


#: The README table's columns: metric and heading.
TABLE_COLUMNS = (("reward", "reward"), ("structure_valid", "structure valid"), ("tag_accuracy", "tag accuracy"),
                 ("expressed_emotion", "expressed emotion"), ("length_in_range", "20-25 words"),
                 ("open_question", "open question"), ("bleu4", "BLEU-4"), ("rouge1", "ROUGE-1"),
                 ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L"), ("words", "words"))


def _cell(entry: dict[str, Any], metric: str) -> str:
    if f"{metric}_mean" not in entry:
        return "-"
    digits = 1 if metric in ("bleu4", "rouge1", "rouge2", "rougeL", "words") else 3
    return f"{entry[f'{metric}_mean']:.{digits}f} ± {entry[f'{metric}_ci95']:.{digits}f}"


def markdown_table(summary: dict[str, Any]) -> str:
    """The README's table of the summary."""
    lines = ["| arm | seeds | " + " | ".join(head for _, head in TABLE_COLUMNS) + " | reward vs `sft` (95% CI) | steps/min |",
             "|---|---|" + "---|" * len(TABLE_COLUMNS) + "---|---|"]
    for arm, entry in summary["arms"].items():
        delta = (entry.get("delta_vs_sft") or {}).get("reward")
        versus = f"{delta['mean']:+.3f} ({delta['ci95_low']:+.3f} to {delta['ci95_high']:+.3f})" if delta else "-"
        speed = f"{entry['steps_per_min_mean']:.2f}" if "steps_per_min_mean" in entry else "-"
        cells = [_cell(entry, metric) for metric, _ in TABLE_COLUMNS]
        lines.append(f"| `{arm}` | {len(entry['seeds'])} | " + " | ".join(cells) + f" | {versus} | {speed} |")
    return "\n".join(lines)


def summary_file(sft_steps: int, dpo_rounds: int = DPO_ROUNDS) -> Path:
    """Where the summary of the runs of ``sft_steps`` SFT steps and ``dpo_rounds`` DPO rounds goes (the recipe's: :data:`SUMMARY_FILE`)."""
    if (sft_steps, dpo_rounds) == (SFT_STEPS, DPO_ROUNDS):
        return SUMMARY_FILE
    return SUMMARY_FILE.with_name(f"{SUMMARY_FILE.stem}_sft{sft_steps}_r{dpo_rounds}.json")


def report(sft_steps: int = SFT_STEPS, dpo_rounds: int = DPO_ROUNDS) -> dict[str, Any]:
    """Summarise the runs of ``sft_steps`` SFT steps and ``dpo_rounds`` rounds (and the base model), write the summary, print the table."""
    summary = summarise([r for r in read_jsonl(RUNS_FILE)
                         if r["sft_steps"] in (0, sft_steps) and r["dpo_rounds"] in (0, dpo_rounds)])
    target = summary_file(sft_steps, dpo_rounds)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(markdown_table(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--sft-steps", type=int, default=SFT_STEPS,
                        help=f"SFT optimizer steps (default {SFT_STEPS}); other counts' runs are kept apart")
    parser.add_argument("--dpo-rounds", type=int, default=DPO_ROUNDS,
                        help=f"DPO rounds (default {DPO_ROUNDS}); other counts' runs are kept apart")
    parser.add_argument("--dpo-steps", type=int, default=DPO_STEPS, help="DPO optimizer steps per round")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 when two runs share the machine)")
    parser.add_argument("--report-only", action="store_true", help="summarise the results file and train nothing")
    args = parser.parse_args(argv)
    if not args.report_only:
        use_threads(args.threads)
        finished = {(r["arm"], r["seed"], r["sft_steps"], r["dpo_rounds"]) for r in read_jsonl(RUNS_FILE)}
        run_missing(args.seeds, args.arms,
                    lambda arm, seed: (arm, seed, *arm_settings(arm, args.sft_steps, args.dpo_rounds).values()) in finished,
                    lambda arm, seed: run_arm(arm, seed, args.sft_steps, args.dpo_rounds, args.dpo_steps))
    report(args.sft_steps, args.dpo_rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "markdown_table", "summarise", "turn_metrics", "turn_rows"]
