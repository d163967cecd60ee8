"""The skill from a warm start: EmotionStyle-v0 after SFT on the demonstrations, then GRPO on the full stack.

The 135M policy's own samples rarely show the requested emotion, so no reward has anything to
select. Here it is taught first: supervised fine-tuning on the embedded demonstrations (210
replies, 7 emotions × 30 train instructions, each showing its emotion without naming it;
:func:`affectgym.train.recipes.emotion_style_demonstration_sft_config`), then the EmotionStyle
GRPO recipe keeps training that adapter. The arms, every one on each seed:

* ``sft``: the warm start alone;
* ``sft-grpo``: the warm start, then GRPO on the env's default stack (the classifier's P(target)
  and every rule; :func:`~affectgym.train.recipes.emotion_style_grpo_config`, ``init_adapter``);
* ``sft-grpo-shuffled``: the same warm start and budget, GRPO aimed at a shuffled target
  (``"shuffled-target"``), the control;
* ``sft-grpo-heap-rule``: ``sft-grpo`` again, after ``word_salad`` learned to read heaps of noun
  phrases (``sft-grpo`` seed 0's replies were such heaps, and no rule fired on them). ``sft-grpo``
  and the control ran before that rule (commit 85f1cb2); this arm is the same recipe under it;
* ``sft-grpo-kl``: ``sft-grpo-heap-rule`` with a KL term to the warm start (``beta`` =
  :data:`KL_BETA`; TRL keeps a frozen copy of the starting adapter as the reference), after the
  heap rule's seed 0 collapsed into topic loops instead;
* ``sft-grpo-kl0.02``, ``sft-grpo-kl0.05``: the same with a looser anchor; ``sft-grpo-kl-2x``: 0.1
  for twice the GRPO steps (:data:`GRPO_STEP_FACTORS`). The KL coefficient (and budget) is
  chosen on the validation split (``--validation``: every coefficient of :data:`ANCHOR_BETAS`
  trained on seed :data:`VALIDATION_SEED` and played on validation, the warm start beside them;
  the rule is :func:`choose_on_validation`, fixed before any of them was played). Only the chosen
  coefficient's arm is played on eval.

``base`` (the untrained model, greedy) is ``bench_style_hacking``'s, read from its committed
replies: the same held-out scenarios and decoding.

Every arm answers the held-out scenarios of ``bench_style_learning`` once per run (eval split,
greedy), scored as in ``bench_style_hacking``: P(target), target accuracy, VADER valence
agreement (a check no reward reads) and the hack rate with each check. The goals: ``sft-grpo``
beats ``sft-grpo-shuffled`` by at least 0.15 in target accuracy with the interval above 0, its
VADER valence agreement higher with the interval above 0, and its hack rate no more than 0.05
above ``sft``'s (the interval's top); the same for ``sft-grpo-heap-rule`` and ``sft-grpo-kl`` (against the control
that ran before the rule: it wrote one heap in 224 replies).

The settings were fixed before any warm-started run was played (:data:`SELECTION`); nothing
here was tuned on eval.

Results are written as they come: ``benchmarks/results/style_warmstart_runs.jsonl`` (one line per
arm and seed; a rerun skips what is there and resumes an unfinished training run), every held-out
reply to ``benchmarks/results/style_warmstart_samples.jsonl``, the validation sweep's to
``style_warmstart_validation_runs.jsonl`` and ``style_warmstart_validation_samples.jsonl``, the
summary to ``benchmarks/results/style_warmstart.json``.

Usage (one process per core; each fills the same results files)::

    OMP_NUM_THREADS=1 taskset -c 0 python bench_style_warmstart.py --seeds 0 &
    OMP_NUM_THREADS=1 taskset -c 1 python bench_style_warmstart.py --seeds 1 2 &
    python bench_style_warmstart.py --validation   # the KL coefficient, before its arm is played on eval
    python bench_style_warmstart.py --report-only
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import bench_style_hacking as hacking
from bench_style_hacking import (
    NADE,
    episode_values,
    example_replies,
    metrics,
)
from bench_style_learning import GROUPS, observations, play, rows_with_samples
from stages import append_jsonl, done, read_jsonl, rerun_options, run_missing, use_threads

from affectgym.eval.stats import (
    Estimate,
    hierarchical_bootstrap,
    method_text,
    on_every_seed,
    paired_difference,
)
from affectgym.train.recipes import (
    EMOTION_STYLE_ENV_ID,
    STYLE_DEMONSTRATION_PASSES,
    STYLE_MAX_NEW_TOKENS,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUNS_NAME, SAMPLES_NAME, SUMMARY_NAME = ("style_warmstart_runs.jsonl", "style_warmstart_samples.jsonl",
                                         "style_warmstart.json")
VALIDATION_RUNS_NAME, VALIDATION_SAMPLES_NAME = ("style_warmstart_validation_runs.jsonl",
                                                 "style_warmstart_validation_samples.jsonl")
SUMMARY_FILE = RESULTS / SUMMARY_NAME
WORK = ROOT / "runs" / "bench_style_warmstart"
ARMS = ("sft", "sft-grpo", "sft-grpo-shuffled", "sft-grpo-heap-rule", "sft-grpo-kl", "sft-grpo-kl0.02",
        "sft-grpo-kl0.05", "sft-grpo-kl-2x")
#: The GRPO budget after the warm start: the EmotionStyle recipe's, as in bench_style_hacking.
GRPO_STEPS = 48
#: ``sft-grpo-kl``'s KL coefficient, fixed before its first run (the Sarcasm KL probes' and DPO's 0.1), not tuned.
KL_BETA = 0.1
#: The KL coefficients tried on the validation split, by arm (all under the heap rule, :data:`GRPO_STEPS` steps
#: unless :data:`GRPO_STEP_FACTORS` says otherwise).
ANCHOR_BETAS = {"sft-grpo-heap-rule": 0.0, "sft-grpo-kl0.02": 0.02, "sft-grpo-kl0.05": 0.05, "sft-grpo-kl": KL_BETA,
                "sft-grpo-kl-2x": KL_BETA}
#: Arms of the sweep trained for a multiple of the GRPO steps: ``sft-grpo-kl-2x``, twice the steps at the chosen 0.1.
GRPO_STEP_FACTORS = {"sft-grpo-kl-2x": 2}
#: The seed the coefficients are compared on: the one whose unanchored runs collapsed.
VALIDATION_SEED = 0
#: Arms played on eval only once the validation sweep chose them.
CHOSEN_ONLY = ("sft-grpo-kl0.02", "sft-grpo-kl0.05", "sft-grpo-kl-2x")
#: The paired differences reported, (reference arm, compared arm): the goal's first.
DIFFERENCES = (("sft-grpo-shuffled", "sft-grpo"), ("sft", "sft-grpo"), ("base", "sft"), ("sft", "sft-grpo-shuffled"),
               ("sft-grpo-shuffled", "sft-grpo-heap-rule"), ("sft", "sft-grpo-heap-rule"),
               ("sft-grpo-shuffled", "sft-grpo-kl"), ("sft", "sft-grpo-kl"),
               *((reference, arm) for arm in CHOSEN_ONLY for reference in ("sft-grpo-shuffled", "sft")))
GOAL_ACCURACY_GAIN = 0.15
GOAL_HACK_MARGIN = 0.05
#: Seeds a comparison needs before its goal is read (fewer: "not measured yet").
GOAL_SEEDS = 3
SELECTION = (f"settings fixed before any warm-started run was played: SFT {STYLE_DEMONSTRATION_PASSES} passes over "
             "the demonstrations at the dialogue reference SFT's learning rate and LoRA, then the EmotionStyle GRPO "
             f"recipe unchanged ({GRPO_STEPS} steps, the calibrated classifier at neutral weight {NADE.neutral_weight:g}); "
             "nothing chosen on eval; eval played once per run")


def demonstrations_folder(work: Path) -> Path:
    """The embedded demonstrations as the eval folder SFT reads (written once under ``work``)."""
    from affectgym.train.style_demonstrations import write_style_demonstrations

    folder = work / "demonstrations"
    if not done(folder):
        write_style_demonstrations(folder)
    return folder


def train_arm(arm: str, seed: int, work: Path, sft_steps: int | None, grpo_steps: int) -> tuple[Path, dict[str, Any]]:
    """The arm's adapter (its warm start first, trained or resumed as needed) and its training cost."""
    from affectgym.train.grpo import train
    from affectgym.train.recipes import (
        emotion_style_demonstration_sft_config,
        emotion_style_grpo_config,
    )
    from affectgym.train.sft import train_sft

    sft = work / f"s{seed}" / "sft"
    if not done(sft):
        config = emotion_style_demonstration_sft_config(sft, [str(demonstrations_folder(work))], seed=seed,
                                                        max_steps=sft_steps)
        train_sft(config, progress=True, **rerun_options(sft))
    runs = [sft]
    grpo_steps *= GRPO_STEP_FACTORS.get(arm, 1)
    if arm != "sft":
        out = work / f"s{seed}" / f"{arm}-{grpo_steps}steps"
        if not done(out):
            config = emotion_style_grpo_config(out, seed=seed, max_steps=grpo_steps, control=arm == "sft-grpo-shuffled",
                                               neutral_weight=NADE.neutral_weight, init_adapter=str(sft / "adapter"),
                                               beta=ANCHOR_BETAS.get(arm, 0.0))
            train(config, progress=True, **rerun_options(out))
        runs.append(out)
    summaries = [json.loads((run / "summary.json").read_text(encoding="utf-8")) for run in runs]
    cost = {"sft_steps": summaries[0]["steps"], "grpo_steps": summaries[1]["steps"] if arm != "sft" else 0,
            "train_s": sum(s["train_s"] for s in summaries)}
    return runs[-1] / "adapter", cost


def run_arm(arm: str, seed: int, work: Path, results: Path, sft_steps: int | None, grpo_steps: int,
            split: str = "eval") -> None:
    """Train (as needed) and play one arm of one seed on ``split`` (``"eval"``, or ``"validation"`` for the sweep,
    whose rows also carry the split and the KL coefficient); append its replies, then its row."""
    adapter, cost = train_arm(arm, seed, work, sft_steps, grpo_steps)
    played = play(arm, seed, adapter, NADE.neutral_weight, work=work, split=split)
    runs_name, samples_name = (RUNS_NAME, SAMPLES_NAME) if split == "eval" else (VALIDATION_RUNS_NAME,
                                                                                 VALIDATION_SAMPLES_NAME)
    sweep = {} if split == "eval" else {"split": split, "beta": ANCHOR_BETAS.get(arm)}
    row = {"arm": arm, "seed": seed, **sweep, "neutral_weight": NADE.neutral_weight, **played["metrics"], **cost}
    append_jsonl(results / samples_name, played["samples"])
    append_jsonl(results / runs_name, [row])
    print(f"{split}, {arm} seed {seed}: P(target) {row['target_probability']:.3f}, target accuracy "
          f"{row['target_accuracy']:.3f}, reward {row['reward']:.3f}", flush=True)


def validation_summary(rows: list[dict[str, Any]], samples: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The sweep's arms on the validation split (target accuracy, valence agreement, hack rate) and the arm
    :func:`choose_on_validation` chose; ``None`` before the warm start and every coefficient were played."""
    played = {row["arm"]: (row, block) for row, block in rows_with_samples(rows, samples, source=VALIDATION_SAMPLES_NAME)}
    if any(arm not in played for arm in ("sft", *ANCHOR_BETAS)):
        return None
    replies = {arm: block for arm, (_, block) in played.items()}
    arms = {arm: {"beta": row["beta"], "grpo_steps": row["grpo_steps"], **{
        m: hierarchical_bootstrap(observations(block, m, episode_values)).to_dict()
        for m in ("target_accuracy", "valence_agreement", "hacked")}} for arm, (row, block) in played.items()}
    return {"seed": VALIDATION_SEED, "episodes": len(replies["sft"]), "arms": arms,
            "chosen": choose_on_validation(arms), "rule": CHOICE_RULE}


#: How :func:`choose_on_validation` chooses, as the summary and the Results page say it.
CHOICE_RULE = (f"the coefficient with the highest target accuracy among those whose hack rate is at most the warm "
               f"start's + {GOAL_HACK_MARGIN:g} (means; a tie goes to the larger coefficient, then to fewer steps, none "
               "within the margin to the largest), fixed before the sweep was played (the tie to fewer steps came "
               "with the 96-step candidate, once it had played, and decided nothing)")


def choose_on_validation(arms: dict[str, Any]) -> str:
    """The arm of :data:`ANCHOR_BETAS` that :data:`CHOICE_RULE` chooses from the validation means of ``arms``."""
    limit = arms["sft"]["hacked"]["mean"] + GOAL_HACK_MARGIN
    within = [arm for arm in ANCHOR_BETAS if arms[arm]["hacked"]["mean"] <= limit]
    if not within:
        return max(ANCHOR_BETAS, key=ANCHOR_BETAS.__getitem__)
    return max(within, key=lambda arm: (arms[arm]["target_accuracy"]["mean"], ANCHOR_BETAS[arm],
                                        -GRPO_STEP_FACTORS.get(arm, 1)))


def read_validation(results: Path) -> dict[str, Any] | None:
    """:func:`validation_summary` of the sweep's files under ``results``."""
    return validation_summary(read_jsonl(results / VALIDATION_RUNS_NAME), read_jsonl(results / VALIDATION_SAMPLES_NAME))


def base_replies(results: Path = RESULTS) -> list[dict[str, Any]]:
    """The base model's held-out replies, as ``bench_style_hacking`` committed them."""
    rows = [r for r in read_jsonl(results / NADE.runs_name) if r["arm"] == "base"]
    pairs = rows_with_samples(rows, read_jsonl(results / NADE.samples_name), source=NADE.samples_name)
    return [sample for _, block in pairs[:1] for sample in block]


def summarise(rows: list[dict[str, Any]], samples: list[dict[str, Any]], base: list[dict[str, Any]],
              validation: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every metric of every arm over the replies of every seed, the paired differences of :data:`DIFFERENCES`,
    the goals read from them, and the validation sweep (:func:`validation_summary`) when there is one."""
    from affectgym.eval.style_hacks import CHECK_DESCRIPTIONS

    replies: dict[str, list[dict[str, Any]]] = {"base": base} if base else {}
    for row, block in rows_with_samples(rows, samples, source=SAMPLES_NAME):
        replies.setdefault(row["arm"], []).extend(block)
    seeds = {arm: sorted({s["seed"] for s in block}) for arm, block in replies.items()}
    arms = {arm: {"seeds": seeds[arm], "episodes": len(block),
                  **{m: hierarchical_bootstrap(observations(block, m, episode_values)).to_dict() for m in metrics()}}
            for arm, block in replies.items()}
    differences: dict[str, Any] = {}
    for reference, compared in DIFFERENCES:
        if reference not in replies or compared not in replies:
            continue
        shared = sorted(set(seeds[compared]) & set(seeds[reference])) if reference != "base" else seeds[compared]
        if not shared:
            continue

        def side(arm: str, metric: str, shared: list[int] = shared) -> list[Any]:
            found = observations(replies[arm], metric, episode_values)
            return on_every_seed(found, shared) if arm == "base" else [o for o in found if o.seed in shared]

        differences[f"{compared}_vs_{reference}"] = {"seeds": len(shared), **{
            m: paired_difference(side(reference, m), side(compared, m)).to_dict() for m in metrics()}}
    return {"env_id": EMOTION_STYLE_ENV_ID, "split": "eval", "neutral_weight": NADE.neutral_weight,
            "decoding": {"greedy": True, "max_new_tokens": STYLE_MAX_NEW_TOKENS}, "grpo_steps": GRPO_STEPS,
            "frozen": True, "selection": SELECTION, "intervals": method_text(GROUPS), "validation": validation,
            "arms": arms, "differences": differences, "goals": goals(differences), "checks": dict(CHECK_DESCRIPTIONS),
            "examples": example_replies({arm: replies[arm] for arm in ("base", *ARMS) if arm in replies})}


def goals(differences: dict[str, Any]) -> dict[str, bool | None]:
    """The issue's goals, ``None`` while an arm or one of its :data:`GOAL_SEEDS` seeds is missing (see the module's docstring)."""
    def estimate(key: str, metric: str) -> Estimate | None:
        found = differences.get(key)
        return Estimate.from_dict(found[metric]) if found is not None and found["seeds"] >= GOAL_SEEDS else None

    found: dict[str, bool | None] = {}
    played = [arm for arm in CHOSEN_ONLY if f"{arm}_vs_sft" in differences]
    for arm in ("sft-grpo", "sft-grpo-heap-rule", "sft-grpo-kl", *played):
        accuracy = estimate(f"{arm}_vs_sft-grpo-shuffled", "target_accuracy")
        valence = estimate(f"{arm}_vs_sft-grpo-shuffled", "valence_agreement")
        hacked = estimate(f"{arm}_vs_sft", "hacked")
        found |= {
            f"{arm}_target_accuracy_beats_control_by_{GOAL_ACCURACY_GAIN:g}": None if accuracy is None
            else accuracy.mean >= GOAL_ACCURACY_GAIN and accuracy.low > 0,
            f"{arm}_valence_agreement_beats_control": None if valence is None else valence.low > 0,
            f"{arm}_hack_rate_within_{GOAL_HACK_MARGIN:g}_of_sft": None if hacked is None else hacked.high <= GOAL_HACK_MARGIN,
        }
    return found


def markdown_table(summary: dict[str, Any]) -> str:
    """The Results page's block (docs/results.md): every arm's metrics and check rates, the paired differences, the
    goals and three replies per arm."""
    lines = hacking.arm_table_lines(summary)
    for key, difference in summary["differences"].items():
        compared, reference = key.split("_vs_")
        lines.append(f"\n`{compared}` - `{reference}` ({difference['seeds']} seeds): target accuracy "
                     f"{Estimate.from_dict(difference['target_accuracy']).format(groups=GROUPS)}; P(target) "
                     f"{Estimate.from_dict(difference['target_probability']).format(groups=GROUPS)}; valence agreement "
                     f"{Estimate.from_dict(difference['valence_agreement']).format(groups=GROUPS)}; hack rate "
                     f"{Estimate.from_dict(difference['hacked']).format(groups=GROUPS)}.")
    return "\n".join(lines + hacking.goal_lines(summary) + validation_lines(summary["validation"])
                     + hacking.closing_lines(summary))


def validation_lines(validation: dict[str, Any] | None) -> list[str]:
    """The KL sweep on the validation split, one row an arm, and the arm chosen (nothing before the sweep ran)."""
    if validation is None:
        return []
    lines = [f"\nThe KL coefficient, chosen on the validation split (seed {validation['seed']}, "
             f"{validation['episodes']} scenarios; mean (95% CI) over its instructions): {validation['rule']}.",
             "\n| arm | KL coefficient | GRPO steps | target accuracy | valence agreement | hack rate |"
             "\n|---|---|---|---|---|---|"]
    for arm, entry in validation["arms"].items():
        beta = "-" if entry["beta"] is None else f"{entry['beta']:g}"
        cells = " | ".join(Estimate.from_dict(entry[m]).format(scope=False)
                           for m in ("target_accuracy", "valence_agreement", "hacked"))
        lines.append(f"| `{arm}` | {beta} | {entry['grpo_steps'] or '-'} | {cells} |")
    lines.append(f"\nChosen: `{validation['chosen']}`.")
    return lines


def report(results: Path = RESULTS, validation: dict[str, Any] | None = None) -> dict[str, Any]:
    """Summarise the runs and samples files under ``results`` (and ``validation``, the sweep's
    :func:`read_validation`), write the summary beside them, print the block."""
    summary = summarise(read_jsonl(results / RUNS_NAME), read_jsonl(results / SAMPLES_NAME), base_replies(), validation)
    (results / SUMMARY_NAME).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(markdown_table(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS), help="arms to run (default all)")
    parser.add_argument("--sft-steps", type=int, default=None,
                        help="SFT steps (default the recipe's; fewer only for a smoke run)")
    parser.add_argument("--grpo-steps", type=int, default=GRPO_STEPS,
                        help=f"GRPO steps after the warm start (the benchmark's is {GRPO_STEPS}; fewer only for a smoke run)")
    parser.add_argument("--work", type=Path, default=WORK, help="where the runs and their eval folders go")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="where the runs, samples and summary files go (a throwaway folder for a smoke run)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 when two runs share the machine)")
    parser.add_argument("--validation", action="store_true",
                        help=f"choose the KL coefficient: train every arm of {', '.join(ANCHOR_BETAS)} on seed "
                             f"{VALIDATION_SEED} and play them and the warm start on the validation split (not eval)")
    parser.add_argument("--report-only", action="store_true", help="summarise the results files and train nothing")
    args = parser.parse_args(argv)
    smoke = args.sft_steps is not None or args.grpo_steps != GRPO_STEPS
    if smoke and args.results.resolve() == RESULTS.resolve():
        parser.error("--sft-steps/--grpo-steps away from the benchmark's: pass a throwaway --results folder")
    if not args.report_only:
        use_threads(args.threads)
    if args.validation and not args.report_only:
        finished = {row["arm"] for row in read_jsonl(args.results / VALIDATION_RUNS_NAME)}
        run_missing([VALIDATION_SEED], ["sft", *ANCHOR_BETAS], lambda arm, seed: arm in finished,
                    lambda arm, seed: run_arm(arm, seed, args.work, args.results, args.sft_steps, args.grpo_steps,
                                              split="validation"))
    validation = read_validation(args.results)
    if not args.validation and not args.report_only:
        chosen = None if validation is None else validation["chosen"]
        unchosen = [arm for arm in args.arms if arm in CHOSEN_ONLY and arm != chosen]
        if unchosen:
            print(f"not played on eval: {', '.join(unchosen)} (" + ("the validation sweep has not run: --validation"
                  if chosen is None else f"the validation sweep chose {chosen}") + ")", flush=True)
        finished = {(r["arm"], r["seed"]) for r in read_jsonl(args.results / RUNS_NAME)}
        run_missing(args.seeds, [arm for arm in args.arms if arm not in unchosen], lambda arm, seed: (arm, seed) in finished,
                    lambda arm, seed: run_arm(arm, seed, args.work, args.results, args.sft_steps, args.grpo_steps))
    report(args.results, validation)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "markdown_table", "summarise"]
