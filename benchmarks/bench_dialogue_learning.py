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
reply. Each is the mean over the turns of every seed with its 95% interval by a hierarchical
bootstrap over seeds and dialogues (:mod:`affectgym.eval.stats`; the turns of one dialogue
are one group), and ``sft+dpo``'s paired difference to ``sft`` on the same (seed, turn), with
the exact McNemar p of structure validity. Two more separate structure from affect: the
expressed emotion among each arm's valid replies only, and the comparison on the turns both
arms answer in valid structure; the table's last sentence splits the reward gain into the
part from turns whose structure differs and the part from turns valid on both, and says how
much of that the expressed-emotion term gives. ``--report-only`` recomputes every number from
the runs and samples files.

Results are written as they come: ``benchmarks/results/dialogue_listening_runs.jsonl`` (one
line per arm and seed; a rerun skips what is there and resumes unfinished stages from their
checkpoints), every held-out turn of every arm to ``benchmarks/results/dialogue_listening_samples.jsonl``
(the episode, which starts at one turn with the dataset's history, the user's line, the
required tags, the reply, the reference, the reward and its components), the summary to
``benchmarks/results/dialogue_listening.json``. ``--sft-steps N`` and ``--dpo-rounds R`` other
than the recipe's 90 and 3 keep their summary apart (``dialogue_listening_sftN_rR.json``; the
base model's row is shared); rows and turns carry their ``sft_steps`` and ``dpo_rounds``, and
folders end ``-sftN`` and ``-rR`` except at the benchmark's first settings (30 and 2). A run
of more rounds starts from a copy of the same seed's run of fewer (its first rounds are the
same) and adds the rest; a run of fewer rounds than a finished one is that run's adapter after
those rounds (``rounds/<k>/adapter``), trained no more.

``--validation`` chooses the number of DPO rounds on the validation split (4 dialogues, 12
episodes, 24 replies): each finished seed's adapter after 0 (the SFT adapter), 1, 2 and 3 rounds plays it,
and the count with the highest mean reward over the seeds is chosen (a tie to fewer rounds).
Its turns go to ``dialogue_listening_validation_runs.jsonl`` and ``..._validation_samples.jsonl``,
its table below the eval table.

Usage (two processes, one core each, fill one results file; a DPO process peaks at ~10 GB,
so no more than two on 24 GB; about 3.5 hours)::

    taskset -c 0 python benchmarks/bench_dialogue_learning.py --seeds 0 2 --threads 1 &
    taskset -c 1 python benchmarks/bench_dialogue_learning.py --seeds 1 --threads 1 &
    python benchmarks/bench_dialogue_learning.py --validation --seeds 0 1 2 --threads 1
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

from affectgym.envs.dialogue import DEFAULT_REWARD_WEIGHTS
from affectgym.eval.stats import (
    Estimate,
    Observation,
    format_p_value,
    hierarchical_bootstrap,
    mcnemar_counts,
    mcnemar_exact_p,
    method_text,
    paired_difference,
)
from affectgym.train.recipes import (
    DIALOGUE_ENV_ID,
    DIALOGUE_MAX_NEW_TOKENS,
    dialogue_dpo_config,
    dialogue_reference_sft_config,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: The record of the rubric that reads listening (each tagged sentence scored as itself, its
#: expressed emotion gated by how well the reply answers the user's turn).
RUNS_FILE = RESULTS / "dialogue_listening_runs.jsonl"
SAMPLES_FILE = RESULTS / "dialogue_listening_samples.jsonl"
SUMMARY_FILE = RESULTS / "dialogue_listening.json"
#: Each seed's adapters after 0 to :data:`DPO_ROUNDS` DPO rounds on the validation split (``--validation``).
VALIDATION_RUNS_FILE = RESULTS / "dialogue_listening_validation_runs.jsonl"
VALIDATION_SAMPLES_FILE = RESULTS / "dialogue_listening_validation_samples.jsonl"
#: The summary of the earlier rubric's runs, which paid for replies that ignore the user (kept as its record).
EARLIER_RUBRIC_SUMMARY_FILE = RESULTS / "dialogue_learning.json"
WORK = ROOT / "runs" / "bench_dialogue_listening"
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
#: What the bootstrap resamples besides the seeds: the dialogues (``ed030`` of turn ``ed030/t2``).
GROUPS = "dialogues"


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
    """The DPO adapter trained from the SFT adapter (of ``sft_steps`` steps), and its cost: optimizer steps,
    seconds (``None`` when the adapter is a longer run's round, whose sampling time is not kept apart), pairs a
    round and the seconds in TRL's trainer."""
    from affectgym.train.config import config_to_yaml
    from affectgym.train.config_parser import load_config
    from affectgym.train.dpo import train_dpo

    out = WORK / f"s{seed}" / f"dpo{steps_suffix(sft_steps, rounds)}"
    longer = next((run for more in range(rounds + 1, rounds + 10)
                   if dpo_done(run := WORK / f"s{seed}" / f"dpo{steps_suffix(sft_steps, more)}", more)), None)
    if not dpo_done(out, rounds) and longer is not None:
        # Its first rounds are this run: the same seed, each round a trainer of its own.
        summary = json.loads((longer / "summary.json").read_text(encoding="utf-8"))
        return longer / "rounds" / str(rounds - 1) / "adapter", {
            "steps": rounds * steps, "train_s": None, "pairs": [r["pairs"] for r in summary["rounds"][:rounds]],
            **dpo_split_s(longer, rounds)}
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
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return out / "adapter", {"steps": summary["steps"], "train_s": summary["train_s"],
                             "pairs": [r["pairs"] for r in summary["rounds"]], **dpo_split_s(out, rounds)}


def dpo_done(run: Path, rounds: int) -> bool:
    """Whether the DPO run in ``run`` has finished all ``rounds`` (a copy of a shorter run has not)."""
    return done(run) and len(json.loads((run / "summary.json").read_text(encoding="utf-8"))["rounds"]) == rounds


def dpo_split_s(dpo_dir: Path, rounds: int) -> dict[str, float]:
    """Seconds the first ``rounds`` DPO rounds spent in the trainer (TRL's ``train_runtime``), summed."""
    history = json.loads((dpo_dir / "log_history.json").read_text(encoding="utf-8"))
    return {"dpo_trainer_s": sum(row.get("train_runtime", 0.0) for row in history if row.get("round", 0) < rounds)}


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


def play(arm: str, seed: int, adapter: Path | None, settings: dict[str, int], split: str = "eval") -> dict[str, Any]:
    """The arm's turns of ``split`` (held out: ``"eval"``, or ``"validation"`` to choose settings) through the eval
    runner: its metrics and every turn (``settings``: :func:`arm_settings`)."""
    from affectgym.eval import EvalConfig, run_eval
    from affectgym.eval.results import read_results

    out = WORK / (f"{split}-base" if adapter is None else f"s{seed}/{split}-{arm}{steps_suffix(**settings)}")
    agent_kwargs: dict[str, Any] = {"max_new_tokens": DIALOGUE_MAX_NEW_TOKENS, "temperature": 0.0, "max_batch_size": 16}
    if adapter is not None:
        agent_kwargs["adapter"] = str(adapter)
    if not done(out):
        run_eval(EvalConfig(env_id=DIALOGUE_ENV_ID, agent="hf:smollm2-135m", out=out, split=split, seed=seed,
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
            adapter, cost = dpo_stage(seed, dpo_rounds, dpo_steps, adapter, sft_steps)
    settings = arm_settings(arm, sft_steps, dpo_rounds)
    played = play(arm, seed, adapter, settings)
    row = {"arm": arm, "seed": seed, **settings, "dpo_steps_per_round": dpo_steps if arm == "sft+dpo" else 0,
           **played["metrics"], **cost,
           "steps_per_min": 60 * cost["steps"] / cost["train_s"] if cost["train_s"] else None}
    append_jsonl(SAMPLES_FILE, played["samples"])
    append_jsonl(RUNS_FILE, [row])
    print(f"{arm} seed {seed}: " + ", ".join(f"{k} {row[k]:.3f}" for k in METRICS), flush=True)


def round_adapter(seed: int, sft_steps: int, dpo_rounds: int, after: int) -> Path:
    """The adapter of the seed's run of ``dpo_rounds`` DPO rounds after its first ``after`` (0: the SFT adapter)."""
    if after == 0:
        return WORK / f"s{seed}" / f"sft{steps_suffix(sft_steps)}" / "adapter"
    return WORK / f"s{seed}" / f"dpo{steps_suffix(sft_steps, dpo_rounds)}" / "rounds" / str(after - 1) / "adapter"


def run_validation(seed: int, sft_steps: int, dpo_rounds: int, finished: set[tuple[int, int]]) -> None:
    """Play the seed's adapters after 0 to ``dpo_rounds`` rounds on the validation split (those not ``finished``:
    (seed, rounds) pairs); append each one's turns, then its row. A seed whose DPO run has not finished is skipped."""
    run = WORK / f"s{seed}" / f"dpo{steps_suffix(sft_steps, dpo_rounds)}"
    if not dpo_done(run, dpo_rounds):
        print(f"seed {seed}: no finished DPO run of {dpo_rounds} rounds in {run}; train it first (without --validation)")
        return
    for after in range(dpo_rounds + 1):
        if (seed, after) in finished:
            continue
        arm = "sft" if after == 0 else "sft+dpo"
        settings = {"sft_steps": sft_steps, "dpo_rounds": after}
        played = play(arm, seed, round_adapter(seed, sft_steps, dpo_rounds, after), settings, split="validation")
        row = {"arm": arm, "seed": seed, **settings, "split": "validation", **played["metrics"]}
        append_jsonl(VALIDATION_SAMPLES_FILE, played["samples"])
        append_jsonl(VALIDATION_RUNS_FILE, [row])
        print(f"validation, seed {seed}, {after} DPO rounds: reward {row['reward']:.3f}, structure valid "
              f"{row['structure_valid']:.3f}", flush=True)


def validation_summary(rows: Sequence[dict[str, Any]], turns: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Each number of DPO rounds on the validation split (reward, structure validity, expressed emotion over the
    turns of every seed) and the number chosen: the highest mean reward, a tie to fewer rounds. ``None`` until every
    count has the same seeds."""
    by_rounds: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_rounds.setdefault(row["dpo_rounds"], []).append(row)
    seeds = {after: sorted(row["seed"] for row in found) for after, found in by_rounds.items()}
    if not by_rounds or len({tuple(found) for found in seeds.values()}) != 1 or set(by_rounds) != set(range(max(by_rounds) + 1)):
        return None
    played = turns_of(rows, turns)
    counts = {after: {metric: hierarchical_bootstrap(observations(
        found, [t for row in found for t in played.get(run_key(row), [])], metric)).to_dict()
        for metric in ("reward", "structure_valid", "expressed_emotion")} for after, found in sorted(by_rounds.items())}
    chosen = max(counts, key=lambda after: (counts[after]["reward"]["mean"], -after))
    return {"split": "validation", "seeds": seeds[0], "turns": by_rounds[0][0]["turns"], "dpo_rounds": counts,
            "chosen_dpo_rounds": chosen}


def validation_lines(validation: dict[str, Any] | None) -> list[str]:
    """The validation table of DPO rounds and the count chosen (nothing before ``--validation`` ran)."""
    if validation is None:
        return []
    lines = ["", f"DPO rounds on the validation split ({len(validation['seeds'])} seeds × {validation['turns']} turns; "
                 "the count with the highest mean reward is chosen, a tie to fewer rounds):", "",
             "| DPO rounds | reward | structure valid | expressed emotion |", "|---|---|---|---|"]
    for after, entry in validation["dpo_rounds"].items():
        cells = " | ".join(Estimate.from_dict(entry[m]).format(scope=False)
                           for m in ("reward", "structure_valid", "expressed_emotion"))
        lines.append(f"| {after} | {cells} |")
    chosen = validation["chosen_dpo_rounds"]
    return lines + ["", f"Chosen: {chosen} DPO round{'' if chosen == 1 else 's'}."]


def turn_values(turn: dict[str, Any]) -> dict[str, float]:
    """One held-out turn's value of each of :data:`METRICS` (BLEU and ROUGE only with a reply and a reference)."""
    from affectgym.eval.dialogue_metrics import SLOTS
    from affectgym.eval.dialogue_metrics import turn_metrics as reference_metrics

    components = turn.get("reward_components") or {}
    reference = reference_metrics(turn.get("reply"), turn.get("reference"), turn["required_tags"])
    values = {
        "reward": float(turn["reward"]),
        "structure_valid": float(turn.get("parse_error") is None),
        "tag_accuracy": sum(reference["tag_correct"]) / len(reference["tag_correct"]),
        **{f"tag_accuracy_{slot}": float(correct) for slot, correct in zip(SLOTS, reference["tag_correct"], strict=True)},
        "expressed_emotion": float(components.get("expressed_emotion", 0.0)),
        "length_in_range": float(components.get("length", 0.0) >= 1.0),
        "open_question": float(components.get("open_question", 0.0) >= 1.0),
        "words": float(len((turn.get("reply") or "").split())),
    }
    return {**values, **{name: float(reference[name]) for name in ("bleu4", "rouge1", "rouge2", "rougeL")
                         if reference[name] is not None}}


def run_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """What names one arm's run: its arm, seed, SFT steps and DPO rounds (rows and turns carry all four)."""
    return row["arm"], row["seed"], row["sft_steps"], row["dpo_rounds"]


def observations(rows: Sequence[dict[str, Any]], turns: Sequence[dict[str, Any]], metric: str,
                 valid_only: bool = False) -> list[Observation]:
    """One arm's turns as the bootstrap's ``(seed, (episode, turn), dialogue, value)`` of ``metric``.

    Without any turns (rows alone, as a test gives them) each seed's row is one observation:
    the interval is then over the seeds alone.
    """
    if not turns:
        return [Observation(row["seed"], "all turns", "all turns", float(row[metric])) for row in rows]
    found = [(turn, turn_values(turn)) for turn in turns if not valid_only or turn.get("parse_error") is None]
    return [Observation(turn["seed"], (turn["episode"], turn["turn_id"]), turn["turn_id"].split("/")[0], values[metric])
            for turn, values in found if metric in values]


def turns_of(rows: Sequence[dict[str, Any]], turns: Sequence[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Each row's turns, by :func:`run_key`; none at all when ``turns`` is empty.

    Raises:
        ValueError: A row whose turns are not all in ``turns`` or whose mean reward is not the row's.
    """
    if not turns:
        return {}
    keys = {run_key(row) for row in rows}
    by_run: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for turn in turns:
        if run_key(turn) in keys:
            by_run.setdefault(run_key(turn), []).append(turn)
    for row in rows:
        played = by_run.get(run_key(row), [])
        if len(played) != row["turns"] or abs(sum(t["reward"] for t in played) / len(played) - row["reward"]) > 1e-9:
            raise ValueError(f"{SAMPLES_FILE.name} does not hold the {row['turns']} turns of the run {run_key(row)}")
    return by_run


def valid_both(control: Sequence[dict[str, Any]], compared: Sequence[dict[str, Any]]) -> tuple[list, list]:
    """The turns of two arms of the same seeds that both answer in valid structure, paired by (seed, episode, turn)."""
    def key(turn: dict[str, Any]) -> tuple[Any, ...]:
        return turn["seed"], turn["episode"], turn["turn_id"]

    valid = ({key(t) for t in control if t.get("parse_error") is None}
             & {key(t) for t in compared if t.get("parse_error") is None})
    return [t for t in control if key(t) in valid], [t for t in compared if key(t) in valid]


def versus_sft(rows: dict[str, list[dict[str, Any]]], turns: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``sft+dpo`` - ``sft`` paired by (seed, turn): every metric, McNemar of structure, the valid-both turns, the gain's parts."""
    control, compared = rows["sft"], rows["sft+dpo"]
    delta: dict[str, Any] = {"seeds": len(compared)}
    for metric in METRICS:
        delta[metric] = paired_difference(observations(control, turns["sft"], metric),
                                          observations(compared, turns["sft+dpo"], metric)).to_dict()
    if not turns["sft"]:
        return delta
    only_sft, only_dpo = mcnemar_counts(observations(control, turns["sft"], "structure_valid"),
                                        observations(compared, turns["sft+dpo"], "structure_valid"))
    delta["structure_valid_mcnemar"] = {"only_reference": only_sft, "only_arm": only_dpo,
                                        "p": mcnemar_exact_p(only_sft, only_dpo)}
    both_sft, both_dpo = valid_both(turns["sft"], turns["sft+dpo"])
    share = len(both_dpo) / len(turns["sft+dpo"])
    delta["valid_both"] = {"turns": len(both_dpo), "of_turns": len(turns["sft+dpo"])}
    for metric in ("reward", "expressed_emotion"):
        delta["valid_both"][metric] = paired_difference(observations(control, both_sft, metric),
                                                        observations(compared, both_dpo, metric)).to_dict()
    weight = DEFAULT_REWARD_WEIGHTS["expressed_emotion"]
    within_valid = share * delta["valid_both"]["reward"]["mean"]
    delta["reward_gain_parts"] = {
        "structure": delta["reward"]["mean"] - within_valid, "valid_both": within_valid,
        "expressed_emotion_valid_both": share * weight * delta["valid_both"]["expressed_emotion"]["mean"],
        "expressed_emotion_weight": weight,
    }
    return delta


#: How the settings were chosen: fixed before any run of this rubric (eval played once a run), but
#: taken from the earlier rubric's runs, which chose them on these eval turns before the env had a
#: validation split. Tables and summaries say so.
SELECTION = ("not a frozen recipe in the strict sense: its settings (90 SFT steps, 3 DPO rounds) were fixed before "
             "any run of this rubric and eval was played once a run, but they were chosen on these eval turns "
             "under the earlier rubric (the env had no validation split then)")
#: The DPO round count the validation split chose (``--validation``, :func:`validation_summary`); its eval runs are
#: each seed's adapter after that many rounds of the 3-round run.
CHOSEN_DPO_ROUNDS = 1
CHOSEN_SELECTION = (f"not a frozen recipe in the strict sense: the DPO round count ({CHOSEN_DPO_ROUNDS}) was chosen "
                    f"on the validation split among 0 to {DPO_ROUNDS} and eval played once for it, but the SFT steps "
                    "(90) and DPO's other settings are the earlier rubric's, chosen on these eval turns before the env "
                    "had a validation split")


def summarise(rows: list[dict[str, Any]], turns: Sequence[dict[str, Any]] = (),
              validation: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every metric of every arm over the turns of all its seeds, and ``sft+dpo``'s paired difference to ``sft``.

    Args:
        rows: The runs file's rows to summarise (one setting's; the base model's shared).
        turns: The samples file's turns (those of other runs are left alone); without any, the
            intervals are over the rows' seeds alone.
        validation: The DPO rounds compared on the validation split (:func:`validation_summary`), if played.
    """
    by_arm: dict[str, dict[int, dict[str, Any]]] = {}
    for row in rows:
        by_arm.setdefault(row["arm"], {})[row["seed"]] = row
    played = turns_of(rows, turns)
    arm_rows = {arm: [seeds[s] for s in sorted(seeds)] for arm, seeds in by_arm.items()}
    arm_turns = {arm: [t for row in arm_rows[arm] for t in played.get(run_key(row), [])] for arm in arm_rows}
    arms: dict[str, Any] = {}
    for arm in ARMS:
        if arm not in by_arm:
            continue
        entry: dict[str, Any] = {"seeds": sorted(by_arm[arm]), "turns": arm_rows[arm][0]["turns"]}
        for metric in METRICS:
            entry[metric] = hierarchical_bootstrap(observations(arm_rows[arm], arm_turns[arm], metric)).to_dict()
        valid = observations(arm_rows[arm], arm_turns[arm], "expressed_emotion", valid_only=True)
        if arm_turns[arm] and valid:
            entry["expressed_emotion_valid"] = hierarchical_bootstrap(valid).to_dict()
        speeds = [row["steps_per_min"] for row in arm_rows[arm] if row.get("steps_per_min") is not None]
        if speeds:
            entry["steps_per_min_mean"] = sum(speeds) / len(speeds)
        if arm == "sft+dpo" and "sft" in by_arm and set(by_arm[arm]) == set(by_arm["sft"]):
            entry["delta_vs_sft"] = versus_sft(arm_rows, arm_turns)
        arms[arm] = entry
    dpo_rounds = max((r["dpo_rounds"] for r in rows), default=0)
    return {
        "env_id": DIALOGUE_ENV_ID, "split": "eval", "multi_step": True,
        "decoding": {"greedy": True, "max_new_tokens": DIALOGUE_MAX_NEW_TOKENS},
        "sft_steps": max((r["sft_steps"] for r in rows), default=0),
        "dpo_rounds": dpo_rounds,
        "dpo_steps_per_round": max((r["dpo_steps_per_round"] for r in rows), default=0),
        "frozen": False, "selection": CHOSEN_SELECTION if dpo_rounds == CHOSEN_DPO_ROUNDS else SELECTION,
        "intervals": method_text(GROUPS, mcnemar=True), "arms": arms, "validation": validation,
    }


#: The Results page's table's columns: metric and heading.
TABLE_COLUMNS = (("reward", "reward"), ("structure_valid", "structure valid"), ("tag_accuracy", "tag accuracy"),
                 ("expressed_emotion", "expressed emotion"), ("length_in_range", "20-25 words"),
                 ("open_question", "open question"), ("bleu4", "BLEU-4"), ("rouge1", "ROUGE-1"),
                 ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L"), ("words", "words"),
                 ("expressed_emotion_valid", "expressed emotion, valid replies"))


def _cell(entry: dict[str, Any], metric: str) -> str:
    if metric not in entry:
        return "-"
    digits = 1 if metric in ("bleu4", "rouge1", "rouge2", "rougeL", "words") else 3
    return Estimate.from_dict(entry[metric]).format(digits, scope=False)


def markdown_table(summary: dict[str, Any]) -> str:
    """The Results page's table (docs/results.md) of the summary (each cell the mean and its 95% interval), and what DPO's gain is made of."""
    lines = ["| arm | seeds | " + " | ".join(head for _, head in TABLE_COLUMNS) + " | reward vs `sft` (95% CI) | steps/min |",
             "|---|---|" + "---|" * len(TABLE_COLUMNS) + "---|---|"]
    for arm, entry in summary["arms"].items():
        delta = (entry.get("delta_vs_sft") or {}).get("reward")
        versus = Estimate.from_dict(delta).format(scope=False) if delta else "-"
        speed = f"{entry['steps_per_min_mean']:.2f}" if "steps_per_min_mean" in entry else "-"
        cells = [_cell(entry, metric) for metric, _ in TABLE_COLUMNS]
        lines.append(f"| `{arm}` | {len(entry['seeds'])} | " + " | ".join(cells) + f" | {versus} | {speed} |")
    delta = summary["arms"].get("sft+dpo", {}).get("delta_vs_sft") or {}
    if "valid_both" in delta:
        lines += ["", _gain_sentences(delta)]
    lines += ["", f"Cells: mean (95% CI). {summary['intervals']}."]
    if not summary.get("frozen", True):
        lines += ["", f"{summary['selection'][0].upper()}{summary['selection'][1:]}."]
    return "\n".join(lines + validation_lines(summary.get("validation")))


def _gain_sentences(delta: dict[str, Any]) -> str:
    """``sft+dpo`` - ``sft``: structure validity and its McNemar p, the valid-both turns, and the reward gain's parts."""
    def estimate(entry: dict[str, Any]) -> str:
        return Estimate.from_dict(entry).format(groups=GROUPS)

    mcnemar, valid, parts = delta["structure_valid_mcnemar"], delta["valid_both"], delta["reward_gain_parts"]
    return (f"`sft+dpo` - `sft`, paired by seed and turn: structure valid {estimate(delta['structure_valid'])}, "
            f"McNemar exact p {format_p_value(mcnemar['p'])} ({mcnemar['only_arm']} turns valid only after DPO, "
            f"{mcnemar['only_reference']} only before). On the {valid['turns']} of {valid['of_turns']} turns both "
            f"answer in valid structure: reward {estimate(valid['reward'])}, expressed emotion "
            f"{estimate(valid['expressed_emotion'])}. Of the reward gain of {delta['reward']['mean']:+.3f}, "
            f"{parts['structure']:+.3f} comes from the turns valid on one arm only or on neither (structure) and "
            f"{parts['valid_both']:+.3f} from the turns valid on both, {parts['expressed_emotion_valid_both']:+.3f} "
            f"of it from the expressed-emotion term (weight {parts['expressed_emotion_weight']:.2f}).")


def summary_file(sft_steps: int, dpo_rounds: int = DPO_ROUNDS) -> Path:
    """Where the summary of the runs of ``sft_steps`` SFT steps and ``dpo_rounds`` DPO rounds goes (the recipe's: :data:`SUMMARY_FILE`)."""
    if (sft_steps, dpo_rounds) == (SFT_STEPS, DPO_ROUNDS):
        return SUMMARY_FILE
    return SUMMARY_FILE.with_name(f"{SUMMARY_FILE.stem}_sft{sft_steps}_r{dpo_rounds}.json")


#: The eval summary of the round count the validation split chose.
CHOSEN_SUMMARY_FILE = summary_file(SFT_STEPS, CHOSEN_DPO_ROUNDS)


def report(sft_steps: int = SFT_STEPS, dpo_rounds: int = DPO_ROUNDS) -> dict[str, Any]:
    """Summarise the runs of ``sft_steps`` SFT steps and ``dpo_rounds`` rounds (and the base model), write the summary, print the table."""
    validation = None
    if (sft_steps, dpo_rounds) == (SFT_STEPS, DPO_ROUNDS):
        validation = validation_summary([r for r in read_jsonl(VALIDATION_RUNS_FILE) if r["sft_steps"] == sft_steps],
                                        read_jsonl(VALIDATION_SAMPLES_FILE))
    summary = summarise([r for r in read_jsonl(RUNS_FILE)
                         if r["sft_steps"] in (0, sft_steps) and r["dpo_rounds"] in (0, dpo_rounds)],
                        read_jsonl(SAMPLES_FILE), validation)
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
    parser.add_argument("--validation", action="store_true",
                        help="play each finished seed's adapters after 0 to --dpo-rounds rounds on the validation split "
                             "(the DPO round count is chosen there) and train nothing")
    parser.add_argument("--report-only", action="store_true", help="summarise the results file and train nothing")
    args = parser.parse_args(argv)
    if args.validation and not args.report_only:
        use_threads(args.threads)
        finished = {(r["seed"], r["dpo_rounds"]) for r in read_jsonl(VALIDATION_RUNS_FILE) if r["sft_steps"] == args.sft_steps}
        for seed in args.seeds:
            run_validation(seed, args.sft_steps, args.dpo_rounds, finished)
    elif not args.report_only:
        use_threads(args.threads)
        finished = {(r["arm"], r["seed"], r["sft_steps"], r["dpo_rounds"]) for r in read_jsonl(RUNS_FILE)}
        run_missing(args.seeds, args.arms,
                    lambda arm, seed: (arm, seed, *arm_settings(arm, args.sft_steps, args.dpo_rounds).values()) in finished,
                    lambda arm, seed: run_arm(arm, seed, args.sft_steps, args.dpo_rounds, args.dpo_steps))
    report(args.sft_steps, args.dpo_rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "markdown_table", "summarise", "turn_metrics", "turn_rows", "turn_values"]
