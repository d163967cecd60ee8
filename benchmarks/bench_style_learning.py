"""Does EMOTRON-style GRPO in affectgym teach? Trained vs base vs a shuffled-target control, held out.

The embedded SmolLM2-135M-Instruct is trained with flat GRPO on ``affectgym/EmotionStyle-v0``'s
train instructions (:func:`affectgym.train.recipes.emotion_style_grpo_config`: the offline
classifier's P(target) and the rule penalties, no judge). The arms:

* ``base``: the untrained model (greedy: the same on every seed, so played once);
* ``control``: the same budget on the ``"shuffled-target"`` rubric: the classifier scores
  another emotion than the one the prompt shows, the rules still the shown one. What it
  gains (a generic emotive style, a length) cannot pass for following the requested emotion;
* ``trained``: the env's own reward;
* ``dpo`` (with ``--arms dpo``): one round of DPO on the base policy's own replies ranked by the
  env's reward (:func:`affectgym.train.recipes.emotion_style_dpo_config`; its folder and
  row are keyed by ``--steps`` like the others, its own optimizer steps are the recipe's);
* ``best-of`` and ``best-of-control`` (with ``--arms best-of best-of-control``): supervised
  training on the base policy's best of 8 replies to each train scenario, by the env's reward
  or by the shuffled-target rubric's (:func:`affectgym.train.recipes.emotion_style_best_of_config`;
  keyed by ``--steps`` too, their own optimizer steps are the recipe's).

Every arm answers the same held-out scenarios (:data:`EVAL_SCENARIOS` of the eval split's
instructions, none seen in training) through the eval runner, greedily, at most
:data:`~affectgym.train.recipes.STYLE_MAX_NEW_TOKENS` tokens, scored by the default rubric.
Per arm (:mod:`affectgym.eval.style_metrics`): the classifier's P(target), target accuracy
(its top emotion is the target), the rate of every rule violation, words per reply, the
reward, and valence agreement by VADER, which no reward reads; the mean over the replies of
every seed with its 95% interval by a hierarchical bootstrap over seeds and instructions
(:mod:`affectgym.eval.stats`; the emotions asked of one instruction are one group), and the
paired differences trained - control and trained - base on the same scenarios (the base model,
greedy, stands for itself on every seed), with the exact McNemar p of target accuracy.
``--report-only`` recomputes every number from the runs and samples files.

Results are written as they come: ``benchmarks/results/emotion_style_learning_runs.jsonl``
(one line per arm and seed; a rerun skips what is there and resumes an unfinished run from
its checkpoint), every held-out reply of every arm to
``benchmarks/results/emotion_style_samples.jsonl``, the summary to
``benchmarks/results/emotion_style_learning.json``.

Usage (two processes, one core each, fill one results file)::

    taskset -c 0 python benchmarks/bench_style_learning.py --seeds 0 2 --threads 1 &
    taskset -c 1 python benchmarks/bench_style_learning.py --seeds 1 --threads 1 &
    python benchmarks/bench_style_learning.py --report-only
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stages import append_jsonl, done, read_jsonl, rerun_options, run_missing, use_threads

from affectgym.envs.style_criteria import RULE_WEIGHTS
from affectgym.eval.stats import (
    Estimate,
    Observation,
    format_p_value,
    hierarchical_bootstrap,
    mcnemar_counts,
    mcnemar_exact_p,
    method_text,
    on_every_seed,
    paired_difference,
)
from affectgym.rewards.classifier import check_neutral_weight
from affectgym.train.recipes import (
    CALIBRATED_NEUTRAL_WEIGHT,
    EMOTION_STYLE_ENV_ID,
    STYLE_MAX_NEW_TOKENS,
    emotion_style_best_of_config,
    emotion_style_dpo_config,
    emotion_style_grpo_config,
    neutral_weight_options,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUNS_FILE = RESULTS / "emotion_style_learning_runs.jsonl"
SAMPLES_FILE = RESULTS / "emotion_style_samples.jsonl"
SUMMARY_FILE = RESULTS / "emotion_style_learning.json"
WORK = ROOT / "runs" / "bench_style"
ARMS = ("base", "control", "trained", "dpo", "best-of", "best-of-control")
#: How the table's paired differences name the trained arms.
ARM_TITLES = {"trained": "Trained", "dpo": "DPO", "best-of": "Best-of-8 SFT"}
#: The paired differences the summary reports: each trained arm against its control (paired by seed) and the base.
DIFFERENCES = (("trained", "control"), ("trained", "base"), ("dpo", "control"), ("dpo", "base"),
               ("best-of", "best-of-control"), ("best-of", "base"))
#: Held-out scenarios every arm answers: the first of the eval split in the runner's order for seed 0.
EVAL_SCENARIOS = 112
EVAL_ENV_KWARGS = {"classifier": "nade"}
METRICS = ("target_accuracy", "target_probability", "valence_agreement", "any_rule",
           *(f"rule_{rule}" for rule in RULE_WEIGHTS), "words", "reward")
GRPO_STEPS = 48
#: What the bootstrap resamples besides the seeds: the instructions (``es154`` of ``es154:disgust``).
GROUPS = "instructions"


def neutral_suffix(neutral_weight: float) -> str:
    """What the folders of runs under a classifier of ``neutral_weight`` end with (nothing at 1)."""
    return "" if neutral_weight == 1.0 else f"-neutral{neutral_weight:g}"


def eval_env_kwargs(neutral_weight: float) -> dict[str, Any]:
    """The held-out env's options: the offline classifier, at ``neutral_weight``."""
    return {**EVAL_ENV_KWARGS, **neutral_weight_options(neutral_weight)}


def train_stage(arm: str, seed: int, steps: int, neutral_weight: float) -> tuple[Path, dict[str, Any]]:
    """The arm's adapter (GRPO; DPO for ``dpo``, SFT for the ``best-of`` arms) and its training summary."""
    from affectgym.train.dpo import train_dpo
    from affectgym.train.grpo import train
    from affectgym.train.sft import train_sft

    out = WORK / f"s{seed}" / f"{arm}-{steps}steps{neutral_suffix(neutral_weight)}"
    if not done(out):
        if arm.startswith("best-of"):
            train_sft(emotion_style_best_of_config(out, seed=seed, control=arm == "best-of-control",
                                                   neutral_weight=neutral_weight), progress=True, **rerun_options(out))
        elif arm == "dpo":
            train_dpo(emotion_style_dpo_config(out, seed=seed, neutral_weight=neutral_weight), progress=True,
                      **rerun_options(out))
        else:
            config = emotion_style_grpo_config(out, seed=seed, max_steps=steps, control=arm == "control",
                                               neutral_weight=neutral_weight)
            train(config, progress=True, **rerun_options(out))
    return out / "adapter", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def play(arm: str, seed: int, adapter: Path | None, neutral_weight: float, work: Path = WORK,
         split: str = "eval", classifier: str = "nade") -> dict[str, Any]:
    """The arm's held-out replies to ``split`` (``"eval"``, or ``"validation"`` to choose settings) through the eval
    runner (its folder under ``work``), scored by the offline ``classifier``: its metrics and every reply."""
    from affectgym.eval import EvalConfig, run_eval
    from affectgym.eval.results import read_results

    out = work / (f"{split}-base{neutral_suffix(neutral_weight)}" if adapter is None
                  else f"s{seed}/{split}-{adapter.parent.name}")
    agent_kwargs: dict[str, Any] = {"max_new_tokens": STYLE_MAX_NEW_TOKENS, "temperature": 0.0, "max_batch_size": 16}
    if adapter is not None:
        agent_kwargs["adapter"] = str(adapter)
    if not done(out):
        run_eval(EvalConfig(env_id=EMOTION_STYLE_ENV_ID, agent="hf:smollm2-135m", out=out, n=EVAL_SCENARIOS,
                            split=split, seed=0, env_kwargs={**eval_env_kwargs(neutral_weight), "classifier": classifier},
                            agent_kwargs=agent_kwargs,
                            concurrency=16, progress=False, max_fail_fraction=1.0, resume=out.exists()))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    records, _ = read_results(out / "results.jsonl")
    samples = [
        {"arm": arm, "seed": seed, "neutral_weight": neutral_weight, "scenario_id": r["scenario_id"],
         "prompt": next((m["content"] for m in r["messages"] if m.get("role") == "user"), None),
         "target": (r.get("outcome") or {}).get("target"), "reply": r.get("final_text"), "reward": r.get("reward"),
         "reward_components": r.get("reward_components"),
         "classifier_top": (r.get("outcome") or {}).get("classifier_top")}
        for r in records
    ]
    return {"metrics": {**summary["style"], "reward": summary["reward"]["mean"]}, "samples": samples}


def run_arm(arm: str, seed: int, steps: int, neutral_weight: float) -> None:
    """Train (as needed) and evaluate one arm of one seed; append its row and its replies."""
    adapter, cost = None, {"steps": 0, "train_s": 0.0}
    if arm != "base":
        adapter, summary = train_stage(arm, seed, steps, neutral_weight)
        cost = {"steps": summary["steps"], "train_s": summary["train_s"]}
    played = play(arm, seed, adapter, neutral_weight)
    row = {"arm": arm, "seed": seed, "grpo_steps": 0 if arm == "base" else steps, "neutral_weight": neutral_weight,
           **played["metrics"], **cost,
           "steps_per_min": 60 * cost["steps"] / cost["train_s"] if cost["train_s"] else None}
    append_jsonl(SAMPLES_FILE, played["samples"])
    append_jsonl(RUNS_FILE, [row])
    print(f"{arm} seed {seed}: " + ", ".join(f"{k} {row[k]:.3f}" for k in METRICS if row.get(k) is not None), flush=True)


def measure_speed(steps: int, work: Path) -> None:
    """Seconds per step of the recipe, split into generation and the rest (``bench_learning``'s clock)."""
    from bench_learning import step_breakdown

    config = emotion_style_grpo_config(work / "speed", max_steps=steps + 1)
    row = step_breakdown(config, f"EmotionStyle GRPO recipe ({config.batch_size} completions of <= "
                                 f"{config.max_completion_length} tokens)")
    append_jsonl(RUNS_FILE, [row])


def episode_metrics(sample: dict[str, Any]) -> dict[str, float]:
    """One held-out reply's value of each of :data:`METRICS` (valence agreement only for a target with a valence)."""
    from affectgym.eval.style_metrics import valence_agrees

    components = sample.get("reward_components") or {}
    rules = {f"rule_{rule}": float(components.get(rule, 0.0) > 0) for rule in RULE_WEIGHTS}
    values = {"target_accuracy": float(sample.get("classifier_top") == sample["target"]),
              "target_probability": float(components.get("emotion_probability", 0.0)),
              "any_rule": float(any(rules.values())), **rules,
              "words": float(len((sample.get("reply") or "").split())), "reward": float(sample["reward"])}
    agrees = valence_agrees(sample.get("reply"), str(sample["target"]))
    return values if agrees is None else {**values, "valence_agreement": float(agrees)}


def rows_with_samples(rows: list[dict[str, Any]], samples: list[dict[str, Any]],
                      source: str = SAMPLES_FILE.name) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each arm's row with its replies (``source`` names the samples file in the error).

    A run appends its replies, then its row, so an (arm, seed, neutral weight)'s replies lie in
    the samples file in the order of its rows, ``episodes`` of them a row (the replies name no
    GRPO steps; seed 0's 40-step run came before its 48-step one). Each block's mean reward
    is checked against its row's.

    Raises:
        ValueError: A row without its replies, or replies whose reward is not the row's.
    """
    blocks: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for sample in samples:
        blocks.setdefault((sample["arm"], sample["seed"], sample.get("neutral_weight", 1.0)), []).append(sample)
    taken: dict[tuple[Any, ...], int] = {}
    paired = []
    for row in rows:
        if row.get("kind") == "speed":
            continue
        key = (row["arm"], row["seed"], row.get("neutral_weight", 1.0))
        start = taken.get(key, 0)
        block = blocks.get(key, [])[start:start + row["episodes"]]
        taken[key] = start + row["episodes"]
        if len(block) != row["episodes"] or abs(sum(s["reward"] for s in block) / len(block) - row["reward"]) > 1e-9:
            raise ValueError(f"{source} does not hold the {row['episodes']} replies of the run {key} "
                             f"({row['grpo_steps']} steps) in the runs file's order")
        paired.append((row, block))
    return paired


def observations(samples: list[dict[str, Any]], metric: str,
                 measure: Callable[[dict[str, Any]], dict[str, float]] = episode_metrics) -> list[Observation]:
    """One arm's replies as the bootstrap's ``(seed, scenario, instruction, value)`` of ``metric`` (of ``measure``'s values)."""
    found = [(sample, measure(sample)) for sample in samples]
    return [Observation(sample["seed"], sample["scenario_id"], sample["scenario_id"].split(":")[0], values[metric])
            for sample, values in found if metric in values]


#: How the settings were chosen: on the eval split itself, before the envs had a validation split,
#: so the recipe was never frozen before eval was played. Tables and summaries say so.
SELECTION = ("not a frozen recipe: its settings were chosen on these eval replies (the env had no validation "
             "split then), so read it as exploratory")


def summarise(rows: list[dict[str, Any]], samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Every metric of every arm, and the paired differences of :data:`DIFFERENCES`, over the replies of every seed.

    Args:
        rows: The runs file's rows to summarise (one steps count, one neutral weight).
        samples: The samples file's replies (those of other runs are left alone).
    """
    by_arm: dict[str, dict[int, dict[str, Any]]] = {}
    replies: dict[str, list[dict[str, Any]]] = {}
    speed = [row for row in rows if row.get("kind") == "speed"]
    for row, block in rows_with_samples(rows, samples):
        by_arm.setdefault(row["arm"], {})[row["seed"]] = row
        replies.setdefault(row["arm"], []).extend(block)
    arms: dict[str, Any] = {}
    for arm in ARMS:
        seeds = by_arm.get(arm)
        if not seeds:
            continue
        entry: dict[str, Any] = {"seeds": sorted(seeds), "episodes": next(iter(seeds.values()))["episodes"]}
        for metric in METRICS:
            entry[metric] = hierarchical_bootstrap(observations(replies[arm], metric)).to_dict()
        speeds = [seeds[s]["steps_per_min"] for s in sorted(seeds) if seeds[s].get("steps_per_min") is not None]
        if speeds:
            entry["steps_per_min_mean"] = sum(speeds) / len(speeds)
        arms[arm] = entry
    differences: dict[str, Any] = {}
    for arm, other in DIFFERENCES:
        if arm not in replies or other not in replies:
            continue
        seeds = sorted(by_arm[arm])
        difference: dict[str, Any] = {"seeds": len(seeds)}
        for metric in METRICS:
            reference = observations(replies[other], metric)
            if other == "base":  # greedy and untrained: its one play is its reply on every seed
                reference = on_every_seed(reference, seeds)
            played = observations(replies[arm], metric)
            difference[metric] = paired_difference(reference, played).to_dict()
            if metric == "target_accuracy" and {o.seed for o in reference} == set(seeds):
                only_reference, only_arm = mcnemar_counts(reference, played)
                difference["target_accuracy_mcnemar"] = {"only_reference": only_reference, "only_arm": only_arm,
                                                         "p": mcnemar_exact_p(only_reference, only_arm)}
        differences[f"{arm}_vs_{other}"] = difference
    return {"env_id": EMOTION_STYLE_ENV_ID, "env_kwargs": EVAL_ENV_KWARGS, "split": "eval",
            "decoding": {"greedy": True, "max_new_tokens": STYLE_MAX_NEW_TOKENS},
            "grpo_steps": max((r["grpo_steps"] for r in rows if "grpo_steps" in r), default=0),
            "frozen": False, "selection": SELECTION,
            "intervals": method_text(GROUPS, mcnemar=True), "arms": arms,
            **differences, **({"speed": speed[-1]} if speed else {})}


#: The Results page's table's columns: metric and heading.
TABLE_COLUMNS = (("target_accuracy", "target accuracy"), ("target_probability", "P(target)"),
                 ("valence_agreement", "valence agreement (VADER)"), ("any_rule", "any rule broken"),
                 ("rule_names_emotion", "names the emotion"), ("rule_off_topic", "off topic"),
                 ("words", "words"), ("reward", "reward"))


def _cell(entry: dict[str, Any], metric: str) -> str:
    if metric not in entry:
        return "-"
    return Estimate.from_dict(entry[metric]).format(1 if metric == "words" else 3, scope=False)


def markdown_table(summary: dict[str, Any]) -> str:
    """The Results page's table (docs/results.md) of the summary (each cell the mean and its 95% interval), and the paired differences of
    target accuracy."""
    lines = ["| arm | seeds | " + " | ".join(head for _, head in TABLE_COLUMNS) + " | steps/min |",
             "|---|---|" + "---|" * len(TABLE_COLUMNS) + "---|"]
    for arm, entry in summary["arms"].items():
        speed = f"{entry['steps_per_min_mean']:.2f}" if "steps_per_min_mean" in entry else "-"
        lines.append(f"| `{arm}` | {len(entry['seeds'])} | " + " | ".join(_cell(entry, m) for m, _ in TABLE_COLUMNS)
                     + f" | {speed} |")
    speed = summary.get("speed")
    if speed:
        lines.append(f"\nSpeed, {speed['recipe']}: {60 / speed['step_s_median']:.2f} steps/min "
                     f"({speed['step_s_median']:.1f} s a step: generation {speed['generate_s_median']:.1f} s, "
                     f"loss and reward {speed['rest_s_median']:.1f} s; {speed['prompt_tokens']} prompt tokens).")
    for key in (f"{arm}_vs_{other}" for arm, other in DIFFERENCES):
        if key in summary:
            delta = Estimate.from_dict(summary[key]["target_accuracy"]).format(groups=GROUPS)
            arm, name = key.split("_vs_")
            mcnemar = summary[key].get("target_accuracy_mcnemar")
            test = (f"; McNemar exact p {format_p_value(mcnemar['p'])} ({mcnemar['only_reference']} replies only {name} has on "
                    f"target, {mcnemar['only_arm']} only {arm})") if mcnemar else ""
            lines.append(f"\n{ARM_TITLES[arm]} - {name} target accuracy: {delta}{test}.")
    lines.append(f"\nCells: mean (95% CI). {summary['intervals']}.")
    if not summary.get("frozen", True):
        lines.append(f"\n{summary['selection'][0].upper()}{summary['selection'][1:]}.")
    return "\n".join(lines)


def summary_file(neutral_weight: float) -> Path:
    """Where the summary of the runs under a classifier of ``neutral_weight`` goes."""
    if neutral_weight == 1.0:
        return SUMMARY_FILE
    return SUMMARY_FILE.with_name(f"{SUMMARY_FILE.stem}_neutral{neutral_weight:g}.json")


#: The summary of the runs under the calibrated classifier (the Results page's table, docs/results.md).
CALIBRATED_SUMMARY_FILE = summary_file(CALIBRATED_NEUTRAL_WEIGHT)


def report(steps: int = GRPO_STEPS, neutral_weight: float = 1.0) -> dict[str, Any]:
    """Summarise the runs of ``steps`` GRPO steps (and the base model) under one classifier, write the summary,
    print the table."""
    rows = read_jsonl(RUNS_FILE)
    chosen = [r for r in rows if r.get("kind") == "speed" or (
        r["grpo_steps"] in (0, steps) and r.get("neutral_weight", 1.0) == neutral_weight)]
    ours = {(r["arm"], r["seed"], r.get("neutral_weight", 1.0)) for r in chosen if r.get("kind") != "speed"}
    # the replies are matched to rows in file order, so the other steps counts' rows of the same runs come along
    related = [r for r in rows if r.get("kind") == "speed" or (r["arm"], r["seed"], r.get("neutral_weight", 1.0)) in ours]
    summary = summarise(chosen, [s for row, block in rows_with_samples(related, read_jsonl(SAMPLES_FILE))
                                 if row in chosen for s in block])
    summary.update(neutral_weight=neutral_weight, env_kwargs=eval_env_kwargs(neutral_weight))
    target = summary_file(neutral_weight)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(markdown_table(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=["base", "control", "trained"],
                        help="arms to run (default base, control, trained; dpo on request)")
    parser.add_argument("--steps", type=int, default=GRPO_STEPS, help="GRPO steps per run")
    parser.add_argument("--speed-steps", type=int, default=0,
                        help="time N steps of the recipe (after a warm-up step), split into generation and the rest")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 when two runs share the machine)")
    parser.add_argument("--neutral-weight", type=float, default=1.0,
                        help="the offline classifier's neutral weight, in training and held out (default 1; the "
                             f"calibrated one is {CALIBRATED_NEUTRAL_WEIGHT}); its runs are kept apart")
    parser.add_argument("--report-only", action="store_true", help="summarise the results file and train nothing")
    args = parser.parse_args(argv)
    check_neutral_weight(args.neutral_weight)
    if not args.report_only:
        use_threads(args.threads)
        finished = {(r["arm"], r["seed"], r["grpo_steps"], r.get("neutral_weight", 1.0))
                    for r in read_jsonl(RUNS_FILE) if r.get("kind") != "speed"}
        run_missing(args.seeds, args.arms,
                    lambda arm, seed: (arm, seed, 0 if arm == "base" else args.steps, args.neutral_weight) in finished,
                    lambda arm, seed: run_arm(arm, seed, args.steps, args.neutral_weight))
        if args.speed_steps:
            measure_speed(args.speed_steps, WORK)
    report(args.steps, args.neutral_weight)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "markdown_table", "summarise"]
