"""Does GRPO in affectgym teach? Trained vs base vs a format-only control, on held-out lines.

The embedded SmolLM2-135M-Instruct is trained with GRPO (TRL, flat mode, LoRA on the last
layers) on ``affectgym/Sarcasm-v0``'s train split (corpus v2: no single cue decides the
label), through the env's own reward functions, in the short form a 2-core CPU can afford
(:mod:`affectgym.train.recipes`): a flat prompt (the context, the line and the delivery) and a
yes/no answer to "is the line sarcastic?" (``rubric="label"`` with the format weight at
0.05: 0.70 signed correctness + 0.05 format). Three arms:

* ``base``: the untrained model (greedy decoding: the same on every seed, played once);
* ``control``: the same budget with the correctness weight set to 0, so only the answer
  format is rewarded; a gain of ``trained`` over it is a gain in hearing sarcasm, not in
  answering in the right format;
* ``trained``: the full reward.

The levers (``--lever``, :data:`LEVERS`) are the delivery's prompt form, ``compact`` (the
one-line summary in band words, relative to the corpus and to the speaker, ~150 tokens) or
``full`` (every tool's output, numbers included, ~600 tokens); the group size
(``compact-16x16``: 16 clips a step, 16 completions each, instead of 2 x 128); and a short
reasoning before a JSON answer (``compact-reasoning``). On v2 an ideal reader of the compact
line's words scores ~0.72 (a logistic regression over them, fitted on train), of the full
numbers 0.91 (``affectgym data report``).

Protocol: the learning curve (greedy, every ``--eval-every`` steps) plays the **validation**
split; settings are chosen on it (``--validation-only`` trains and stops there). The frozen
recipe then plays the line-grouped **eval** split once per run, from the run's saved
adapter, and the base model once. Intervals are the hierarchical bootstrap over seeds and
line groups (:mod:`affectgym.eval.stats`), differences paired by (seed, clip), McNemar
exact p; the best single-cue rule of the data report (``benchmarks/results/
data_report_sarcasm_v2.json``, its clip-by-clip predictions) is the bar to clear. "Pivot
pairs both right" counts the lines (said both ways) whose two clips are both answered right.

Results are written as they come to ``benchmarks/results/learning_runs.jsonl`` (one line per
validation point, per run and per eval play, with every reply); a rerun skips what is done,
so the benchmark resumes after an interruption. It prints the tables, writes
``benchmarks/results/learning.json`` and draws ``docs/img/learning_curve.png``;
``--report-only`` regenerates them from the results file.

Speed: the step time of the recipe (2 x 128 completions, each prompt run once a step) is
printed beside that of the default flat recipe (the full ~600-token prompt, LoRA on every
layer, 8 completions) and of the recipe's short prompt at 2 x 8 completions with TRL's
trainer and with shared prompts, all measured in one run with ``--speed-steps`` timed steps
each (after a warm-up step) and split into generation and the rest (``--speed-steps 0``
skips it).

Usage: ``python benchmarks/bench_learning.py [--lever compact] [--seeds 0 1 2] [--steps 80]``
(run it under ``nohup`` and rerun to resume). On two cores, one process per core with
``--arms trained`` and ``--arms control`` (each pinned, ``OMP_NUM_THREADS=1``) halves the
wall time; they append to one file.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from stages import best_single_cue, load_policy, pivot_lines_right

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
from affectgym.train.recipes import SARCASM_ENV_ID as ENV_ID
from affectgym.train.recipes import SARCASM_SHORT_FORM

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUNS_FILE = RESULTS / "learning_runs.jsonl"
SUMMARY_FILE = RESULTS / "learning.json"
DATA_REPORT = RESULTS / "data_report_sarcasm_v2.json"
FIGURE = ROOT / "docs" / "img" / "learning_curve.png"
#: The levers the benchmark can train with, by name: the env's task format (the delivery's
#: prompt form, the answer) and the recipe options the lever changes (TrainConfig fields).
LEVERS: dict[str, dict[str, Any]] = {
    "compact": {"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "options": {}},
    "full": {"task_format": {"answer": "yesno", "flat_prompt": "full"}, "options": {}},
    # as many completions a step, spread over 8 times the clips: 16 prompts x 16 completions
    "compact-16x16": {"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "options": {"num_generations": 16}},
    # a short reasoning, then the JSON answer: 2 prompts x 8 completions of up to 96 tokens
    "compact-reasoning": {"task_format": {"answer": "json", "flat_prompt": "compact"},
                          "options": {"num_generations": 8, "batch_size": 16, "max_completion_length": 96}},
}
#: The frozen recipe's lever and step count, chosen on the validation split (docs/benchmarks.md,
#: "Levers"); only its summary and figure are written, another lever's run adds its rows.
LEVER = "compact"
STEPS = 80
ARMS = ("base", "control", "trained")
METRICS = ("accuracy", "answered_rate", "pivot_accuracy", "pivot_pairs_right")
GROUPS = "line groups"


def env_kwargs(lever: str) -> dict[str, Any]:
    """Sarcasm-v0's short form in the task format of ``lever``."""
    return {**SARCASM_SHORT_FORM, "task_format": LEVERS[lever]["task_format"]}


def recipe(arm: str, seed: int, steps: int, eval_every: int, output_dir: Path, lever: str = LEVER) -> Any:
    """The training options of one run: the package's CPU recipe with ``lever``, the control arm without correctness."""
    from affectgym.train.recipes import sarcasm_cpu_config

    config = sarcasm_cpu_config(output_dir, max_steps=steps, seed=seed, control=arm == "control",
                                eval_every_steps=eval_every, heldout_split="validation", **LEVERS[lever]["options"])
    return dataclasses.replace(config, env_kwargs={**config.env_kwargs, **env_kwargs(lever)})


@functools.cache
def recipe_id(lever: str = LEVER) -> str:
    """A short fingerprint of the recipe: its options (seed and folders aside) and the
    prompt the env renders for the first train clip, so that a change of the env's prompt
    counts as a new recipe too.

    Every row carries it, so that a results file never mixes runs of an older recipe with
    the current one: those rows are kept but no longer read.
    """
    from affectgym.train.flatten import make_env

    options = dataclasses.asdict(recipe("trained", 0, 1, 0, Path("runs"), lever))
    for varying in ("seed", "max_steps", "n_train", "eval_every_steps", "output_dir"):
        options.pop(varying)
    env = make_env(ENV_ID, {**options["env_kwargs"], "split": "train"})
    options["first_prompt"] = env.flat_prompt(env.scenarios[0])
    return hashlib.sha1(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()[:10]


def read_rows() -> list[dict[str, Any]]:
    """Every line written so far with a current recipe (of any lever)."""
    if not RUNS_FILE.is_file():
        return []
    rows = [json.loads(line) for line in RUNS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    current = {recipe_id(lever): lever for lever in LEVERS}
    latest: dict[tuple, dict[str, Any]] = {}  # a run trained again replaces its earlier rows
    for row in rows:
        if row.get("recipe_id") in current and current[row["recipe_id"]] == row.get("lever"):
            key = (row["kind"], row["lever"], row.get("recipe"), row.get("arm"), row.get("seed"), row.get("steps"), row.get("step"))
            latest.pop(key, None)
            latest[key] = row
    return list(latest.values())


def append_rows(rows: list[dict[str, Any]]) -> None:
    RUNS_FILE.parent.mkdir(parents=True, exist_ok=True)
    with RUNS_FILE.open("a", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def has_row(rows: list[dict[str, Any]], kind: str, lever: str, arm: str, seed: int | None, steps: int) -> bool:
    return any(r.get("kind") == kind and r["lever"] == lever and r["arm"] == arm and r["seed"] == seed
               and r["steps"] == steps for r in rows)


def run_dir(work: Path, lever: str, arm: str, seed: int, steps: int) -> Path:
    return work / f"{lever}-{steps}steps-{arm}-seed{seed}"


def run_arm(arm: str, seed: int, steps: int, eval_every: int, work: Path, lever: str) -> None:
    """Train one arm on one seed; append its validation curve and its run line (its adapter stays in ``work``)."""
    from affectgym.train.grpo import train

    out = run_dir(work, lever, arm, seed, steps)
    shutil.rmtree(out, ignore_errors=True)
    start_s = time.perf_counter()
    summary = train(recipe(arm, seed, steps, eval_every, out, lever))
    curve = [json.loads(line) for line in (out / "heldout.jsonl").read_text(encoding="utf-8").splitlines()]
    history = json.loads((out / "log_history.json").read_text(encoding="utf-8"))
    step_s = [row["step_time"] for row in history if "step_time" in row]
    tags = {"lever": lever, "arm": arm, "seed": seed, "steps": steps, "recipe_id": recipe_id(lever)}
    append_rows([{"kind": "curve", **tags, **point} for point in curve] + [{
        "kind": "run", **tags, "wall_s": round(time.perf_counter() - start_s, 1),
        "train_s": summary["train_s"], "step_s_median": statistics.median(step_s) if step_s else None,
        "first_reward": summary["first_reward"], "last_reward": summary["last_reward"],
    }])


def play_eval(arm: str, seed: int | None, steps: int, work: Path, lever: str) -> None:
    """Play the eval split once, greedily: the base model, or a run's saved adapter; append every reply."""
    from affectgym.train.heldout import HeldOutEvaluator
    from affectgym.train.run import eval_max_new_tokens

    config = recipe("trained", 0, steps, 0, work, lever)
    model, tokenizer = load_policy(config.model, None if arm == "base" else run_dir(work, lever, arm, seed, steps) / "adapter")
    evaluator = HeldOutEvaluator(ENV_ID, config.env_kwargs, tokenizer, max_new_tokens=eval_max_new_tokens(config),
                                 split="eval")
    start_s = time.perf_counter()
    played = evaluator.evaluate(model)
    pivots = {s.id for s in evaluator.scenarios if getattr(s, "pivot", False)}
    append_rows([{"kind": "eval", "lever": lever, "arm": arm, "seed": seed, "steps": steps, "recipe_id": recipe_id(lever),
                  "frozen": lever == LEVER, "eval_s": round(time.perf_counter() - start_s, 1), "pivots": sorted(pivots), **played}])


def step_breakdown(config: Any, label: str) -> dict[str, Any]:
    """Seconds per GRPO step of ``config``, split into generation and the rest (forward + backward + reward).

    The first step is a warm-up and is not counted. With ``beta=0`` and one iteration per
    generation, TRL runs no reference and no old-policy forward pass, so "the rest" is the
    policy's forward and backward over prompt + completion tokens, and the reward.
    """
    from transformers import TrainerCallback

    from affectgym.train.grpo import build_trainer

    trainer = build_trainer(config)
    generate_s: list[float] = []
    original = trainer._generate_single_turn

    def timed_generate(*args: Any, **kwargs: Any) -> Any:
        start_s = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            generate_s.append(time.perf_counter() - start_s)

    trainer._generate_single_turn = timed_generate
    marks: list[tuple[float, int]] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            marks.append((time.perf_counter(), len(generate_s)))

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            marks.append((time.perf_counter(), len(generate_s)))

    trainer.add_callback(Clock())
    trainer.train()
    steps = [(marks[k + 1][0] - marks[k][0], sum(generate_s[marks[k][1]:marks[k + 1][1]]))
             for k in range(2, len(marks) - 1, 2)]
    prompt = trainer.train_dataset[0]["prompt"]
    text = trainer.processing_class.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    tokens = len(trainer.processing_class(text, add_special_tokens=False)["input_ids"])
    step_s = statistics.median(total for total, _ in steps)
    gen_s = statistics.median(gen for _, gen in steps)
    return {"kind": "speed", "recipe": label, "steps_timed": len(steps), "step_s_median": step_s,
            "generate_s_median": gen_s, "rest_s_median": step_s - gen_s, "prompt_tokens": tokens,
            "completions_per_step": config.batch_size, "max_completion_length": config.max_completion_length}


#: The speed table's rows, in order: the default flat recipe, then the CPU recipe's steps with
#: TRL's trainer and with shared prompts at the old group size, then the recipe itself.
SPEED_LABELS = (
    "default flat recipe (full prompt, LoRA on every layer; TRL's GRPOTrainer)",
    "CPU recipe at 2 x 8 completions, TRL's GRPOTrainer",
    "CPU recipe at 2 x 8 completions, shared prompts",
    "CPU recipe (2 x 128 completions, shared prompts)",
)


def measure_speed(steps: int, work: Path) -> None:
    """Step time and its split, for the default flat recipe and for the CPU recipe, in one run."""
    from affectgym.train.config import TrainConfig

    default = TrainConfig(
        env_id=ENV_ID, model="smollm2-135m", mode="flat", max_steps=steps + 1, num_generations=8, batch_size=8,
        max_completion_length=8, eval_episodes=0, output_dir=str(work / "speed-default"),
        env_kwargs={"rubric": "single"}, share_prompts=False,
    )
    cpu = recipe("trained", 0, steps + 1, 0, work / "speed-recipe", LEVER)
    small = dataclasses.replace(cpu, num_generations=8, batch_size=16)
    configs = (default, dataclasses.replace(small, share_prompts=False), small, cpu)
    rows = [step_breakdown(config, label) for config, label in zip(configs, SPEED_LABELS, strict=True)]
    append_rows([{**row, "lever": LEVER, "recipe_id": recipe_id()} for row in rows])


def eval_rows(rows: list[dict[str, Any]], lever: str, steps: int) -> dict[str, list[dict[str, Any]]]:
    """The eval plays of ``lever`` by arm (base: its one play)."""
    played: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    for row in rows:
        if row.get("kind") == "eval" and row["lever"] == lever and row["steps"] == steps:
            played[row["arm"]].append(row)
    return played


def observations(plays: list[dict[str, Any]], metric: str) -> list[Observation]:
    """Each eval play's clips (or, for ``pivot_pairs_right``, its pivot lines) as bootstrap observations."""
    found = []
    for play in plays:
        seed = play["seed"] if play["seed"] is not None else 0
        clips = sorted(play["correct"])
        if metric == "accuracy":
            found += [Observation(seed, clip, play["groups"][clip], float(play["correct"][clip])) for clip in clips]
        elif metric == "answered_rate":
            found += [Observation(seed, clip, play["groups"][clip], float(play["answers"][clip] is not None))
                      for clip in clips]
        elif metric == "pivot_accuracy":
            found += [Observation(seed, clip, play["groups"][clip], float(play["correct"][clip]))
                      for clip in clips if clip in play["pivots"]]
        else:  # pivot_pairs_right: a pivot line counts when both of its clips are right
            found += pivot_lines_right((seed, play["groups"][clip], play["correct"][clip])
                                       for clip in clips if clip in play["pivots"])
    return found


def summarise(rows: list[dict[str, Any]], steps: int, lever: str = LEVER) -> dict[str, Any]:
    """The learning.json content: the eval plays' estimates per arm, the paired differences, the validation levers."""
    played = eval_rows(rows, lever, steps)
    summary: dict[str, Any] = {"env_id": ENV_ID, "env_kwargs": env_kwargs(lever), "lever": lever, "steps": steps,
                               "split": "eval", "recipe_id": recipe_id(lever), "frozen": lever == LEVER,
                               "intervals": method_text(GROUPS, mcnemar=True)}
    for arm in ARMS:
        plays = played[arm]
        entry: dict[str, Any] = {"seeds": sorted(p["seed"] for p in plays if p["seed"] is not None)}
        if plays:
            entry["episodes"] = plays[0]["episodes"]
            for metric in METRICS:
                entry[metric] = hierarchical_bootstrap(observations(plays, metric)).to_dict()
        summary[arm] = entry
    trained = played["trained"]
    seeds = sorted(p["seed"] for p in trained)
    if trained:
        mine = observations(trained, "accuracy")
        for reference in ("control", "base"):
            if not played[reference]:
                continue
            theirs = observations(played[reference], "accuracy")
            if reference == "base":
                theirs = on_every_seed(theirs, seeds)
            only_theirs, only_mine = mcnemar_counts(theirs, mine)
            summary[f"trained_vs_{reference}"] = {
                **paired_difference(theirs, mine).to_dict(),
                "mcnemar": {"only_reference": only_theirs, "only_trained": only_mine,
                            "p": mcnemar_exact_p(only_theirs, only_mine)}}
        first = trained[0]
        rule = best_single_cue(DATA_REPORT, {clip: (first["groups"][clip], first["labels"][clip]) for clip in first["correct"]})
        if rule:
            described, cue = rule
            cue = on_every_seed(cue, seeds)
            summary["best_single_cue"] = {**described, "difference": paired_difference(cue, mine).to_dict()}
    summary["levers"] = lever_points(rows)
    speed = {r["recipe"]: r for r in rows if r.get("kind") == "speed"}
    if set(speed) == set(SPEED_LABELS):
        default, trl_small, shared_small, cpu = (speed[label] for label in SPEED_LABELS)
        summary["speed"] = {
            "rows": [speed[label] for label in SPEED_LABELS],
            "steps_per_min_default": 60 / default["step_s_median"], "steps_per_min_recipe": 60 / cpu["step_s_median"],
            "speedup": default["step_s_median"] / cpu["step_s_median"],
            "shared_prompts_speedup_2x8": trl_small["step_s_median"] / shared_small["step_s_median"],
        }
    return summary


def lever_points(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every run's validation accuracy at its last step and the best along its curve, and its step time
    (the evidence the frozen recipe was chosen on)."""
    points = []
    for row in rows:
        if row.get("kind") != "run":
            continue
        curve = [r for r in rows if r.get("kind") == "curve" and all(r[k] == row[k] for k in ("lever", "arm", "seed", "steps"))]
        if not curve:
            continue
        last = max(curve, key=lambda r: r["step"])
        points.append({"lever": row["lever"], "steps": row["steps"], "arm": row["arm"], "seed": row["seed"],
                       "validation_clips": last["episodes"], "validation_accuracy_last": last["accuracy"],
                       "validation_accuracy_best": max(r["accuracy"] for r in curve),
                       "validation_pivot_accuracy_last": last.get("pivot_accuracy"),
                       "step_s_median": row["step_s_median"]})
    return sorted(points, key=lambda p: (p["lever"], p["steps"], p["arm"], p["seed"]))


def _cell(entry: dict[str, Any], metric: str) -> str:
    return Estimate.from_dict(entry[metric]).format(scope=False) if metric in entry else "n/a"


def table(summary: dict[str, Any]) -> str:
    """The side-by-side table of the arms on eval, the differences and the levers on validation."""
    lines = [f"eval split of {ENV_ID} ({summary.get('trained', {}).get('episodes', '?')} clips, line-grouped), "
             f"lever {summary['lever']}, {summary['steps']} GRPO steps; {summary['intervals']}",
             f"{'arm':9s} {'seeds':>5s}  " + "  ".join(f"{m:>24s}" for m in METRICS)]
    for arm in ARMS:
        entry = summary.get(arm, {})
        lines.append(f"{arm:9s} {len(entry.get('seeds', [])) or ('1' if entry.get('episodes') else '0'):>5}  "
                     + "  ".join(f"{_cell(entry, m):>24s}" for m in METRICS))
    lines += difference_lines(summary)
    for point in summary.get("levers", []):
        lines.append(f"validation, lever {point['lever']}, {point['steps']} steps, {point['arm']} seed {point['seed']}: accuracy "
                     f"{point['validation_accuracy_last']:.3f} at the last step (best {point['validation_accuracy_best']:.3f}) "
                     f"of {point['validation_clips']} clips, {point['step_s_median']:.1f} s a step")
    speed = summary.get("speed")
    if speed:
        for row in speed["rows"]:
            lines.append(
                f"speed, {row['recipe']}: {60 / row['step_s_median']:.2f} steps/min ({row['step_s_median']:.1f} s/step: "
                f"generation {row['generate_s_median']:.1f} s, forward+backward+reward {row['rest_s_median']:.1f} s; "
                f"{row['prompt_tokens']} prompt tokens, {row['completions_per_step']} completions of <= "
                f"{row['max_completion_length']} tokens)"
            )
        default, recipe_row = speed["rows"][0], speed["rows"][-1]
        times = recipe_row["completions_per_step"] // default["completions_per_step"]
        lines.append(f"speed-up of a step, the recipe vs the default flat recipe: {speed['speedup']:.1f}x "
                     f"(with {times} times the completions); shared prompts vs TRL's trainer at 2 x 8 completions: "
                     f"{speed['shared_prompts_speedup_2x8']:.1f}x")
    return "\n".join(lines)


def difference_lines(summary: dict[str, Any]) -> list[str]:
    """The paired differences of the trained arm, one sentence each (after a warning when the recipe is not the frozen one)."""
    lines = []
    if not summary["frozen"]:
        lines.append(f"Not the frozen recipe (lever {LEVER}): an exploratory play of eval, not a result.")
    for reference in ("control", "base"):
        found = summary.get(f"trained_vs_{reference}")
        if found:
            test = found["mcnemar"]
            lines.append(f"Trained - {reference} accuracy: {Estimate.from_dict(found).format(groups=GROUPS)}; McNemar "
                         f"exact p {format_p_value(test['p'])} ({test['only_reference']} clips only {reference} has "
                         f"right, {test['only_trained']} only trained).")
    cue = summary.get("best_single_cue")
    if cue:
        lines.append(f"Trained - the best single-cue rule ({cue['name']}, {cue['rule']}; {cue['accuracy']:.3f}): "
                     f"{Estimate.from_dict(cue['difference']).format(groups=GROUPS)}.")
    if summary.get("trained_vs_control") and summary.get("trained_vs_base"):
        lines.append("Format vs skill: the control earns the answer-format credit alone, so trained - control is the "
                     "part of the gain that is hearing the delivery; the rest of trained - base is answering in the "
                     "format.")
    return lines


def markdown_table(summary: dict[str, Any]) -> str:
    """The Results page's table (docs/results.md) of the arms on eval, and the paired differences."""
    names = {"base": "base (untrained)", "control": "control (format-only reward)", "trained": "trained (full reward)"}
    lines = [
        "| arm | seeds | accuracy | answered | pivot accuracy | pivot lines both right |",
        "|---|---|---|---|---|---|",
    ]
    for arm in ARMS:
        entry = summary.get(arm, {})
        seeds = len(entry.get("seeds", [])) or (1 if entry.get("episodes") else 0)
        lines.append(f"| {names[arm]} | {seeds} | " + " | ".join(_cell(entry, m) for m in METRICS) + " |")
    lines += ["", f"{summary.get('trained', {}).get('episodes', '?')} eval clips, lever `{summary['lever']}`, "
              f"{summary['steps']} GRPO steps; {summary['intervals']}."]
    lines += ["", *difference_lines(summary)] if difference_lines(summary) else []
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], steps: int, path: Path, lever: str = LEVER) -> None:
    """Validation accuracy vs step: trained and control (mean and min-max band over seeds), base, chance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    colours = {"trained": "tab:blue", "control": "tab:orange"}
    labels = {"trained": "trained (full reward)", "control": "control (format-only reward)"}
    curve = [r for r in rows if r.get("kind") == "curve" and r["lever"] == lever and r["steps"] == steps]
    base = [r["accuracy"] for r in curve if r["step"] == 0 and r["arm"] == "trained"]
    for arm in ("trained", "control"):
        by_step: dict[int, list[float]] = {}
        for row in curve:
            if row["arm"] == arm:
                by_step.setdefault(row["step"], []).append(row["accuracy"])
        if not by_step:
            continue
        xs = sorted(by_step)
        seeds = max(len(v) for v in by_step.values())
        ax.plot(xs, [statistics.fmean(by_step[x]) for x in xs], color=colours[arm], marker="o", ms=3,
                label=f"{labels[arm]}, mean of {seeds} seeds")
        ax.fill_between(xs, [min(by_step[x]) for x in xs], [max(by_step[x]) for x in xs], color=colours[arm], alpha=0.15)
    if base:
        ax.axhline(statistics.fmean(base), color="tab:gray", lw=1.5, label="base model (untrained)")
    ax.axhline(0.5, color="black", lw=1, ls=":", label="chance (and any text-only reader)")
    completions = recipe("trained", 0, steps, 0, Path("runs"), lever).batch_size
    clips = curve[0]["episodes"] if curve else "?"
    ax.set_xlabel(f"GRPO step ({completions} completions per step)")
    ax.set_ylabel(f"validation accuracy ({clips} clips; unanswered = wrong)")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Sarcasm-v0 (corpus v2), SmolLM2-135M, {lever}: validation accuracy during training",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right", title="bands: min-max over seeds", title_fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lever", choices=tuple(LEVERS), default=LEVER, help=f"the recipe's lever (default: {LEVER})")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=("trained", "control"), default=["trained", "control"],
                        help="which arms to train (e.g. one per process, to run two on two cores)")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"GRPO steps per run (default: {STEPS})")
    parser.add_argument("--eval-every", type=int, default=10, help="validation evaluation every N steps")
    parser.add_argument("--validation-only", action="store_true",
                        help="train and record the validation curve only; play no eval (choosing a lever)")
    parser.add_argument("--speed-steps", type=int, default=2, help="steps timed per recipe for the speed table (0 = skip)")
    parser.add_argument("--work", default=str(ROOT / "runs" / "bench-learning"), help="scratch folder of the runs")
    parser.add_argument("--report-only", action="store_true", help="only summarise what the results file holds")
    args = parser.parse_args(argv)
    work = Path(args.work)
    if not args.report_only:
        for seed in args.seeds:
            for arm in args.arms:
                adapter = run_dir(work, args.lever, arm, seed, args.steps) / "adapter" / "adapter_config.json"
                needs_adapter = not args.validation_only and not has_row(read_rows(), "eval", args.lever, arm, seed, args.steps)
                if has_row(read_rows(), "run", args.lever, arm, seed, args.steps) and (adapter.is_file() or not needs_adapter):
                    print(f"{args.lever} {arm} seed {seed}: trained (in {RUNS_FILE.name})", flush=True)
                else:
                    print(f"{args.lever} {arm} seed {seed}: training {args.steps} steps ...", flush=True)
                    run_arm(arm, seed, args.steps, args.eval_every, work, args.lever)
                if not args.validation_only and not has_row(read_rows(), "eval", args.lever, arm, seed, args.steps):
                    print(f"{args.lever} {arm} seed {seed}: playing the eval split ...", flush=True)
                    play_eval(arm, seed, args.steps, work, args.lever)
        if not args.validation_only and not has_row(read_rows(), "eval", args.lever, "base", None, args.steps):
            print("base: playing the eval split ...", flush=True)
            play_eval("base", None, args.steps, work, args.lever)
        if args.speed_steps and not any(r.get("kind") == "speed" for r in read_rows()):
            print(f"timing {args.speed_steps} steps of the default flat recipe and of the CPU recipe ...", flush=True)
            measure_speed(args.speed_steps, work)
    rows = read_rows()
    if (args.lever, args.steps) != (LEVER, STEPS):
        print(table(summarise(rows, args.steps, args.lever)))
        print(f"rows: {RUNS_FILE.relative_to(ROOT)}; the frozen recipe ({LEVER}, {STEPS} steps) keeps its summary and figure")
        return 0
    summary = summarise(rows, STEPS, LEVER)
    SUMMARY_FILE.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    plot(rows, STEPS, FIGURE, LEVER)
    print(table(summary))
    print("\nResults table (docs/results.md, between its learning-table markers):\n" + markdown_table(summary))
    print(f"results: {RUNS_FILE.relative_to(ROOT)}, {SUMMARY_FILE.relative_to(ROOT)}; figure: {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
