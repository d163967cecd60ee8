"""Does GRPO in affectgym teach? Trained vs base vs a format-only control, on held-out lines.

The embedded SmolLM2-135M-Instruct is trained with GRPO (TRL, flat mode, LoRA on the last
layers) on ``affectgym/Sarcasm-v0``'s train split, through the env's own reward functions,
in the short form a 2-core CPU can afford (:mod:`affectgym.train.recipes`): the compact
flat prompt (the context, the line and one line of delivery cues, ~130 tokens) and a yes/no answer to
"is the line sarcastic?" (``reward="label"`` with the format weight at 0.05: 0.70 signed correctness + 0.05 format).
Three arms, on the line-grouped eval split (no eval line is
heard in train; its pivot pairs say the same words both ways, so text alone is at chance):

* ``base``: the untrained model (greedy decoding: the same on every seed);
* ``control``: the same budget with the correctness weight set to 0, so only the answer
  format is rewarded; a gain of ``trained`` over it is a gain in hearing sarcasm, not in
  answering in the right format;
* ``trained``: the full reward.

Every arm is evaluated greedily every ``--eval-every`` steps (accuracy with unanswered
counted wrong, answered rate, pivot accuracy, mean reward). Results are written as they
come to ``benchmarks/results/learning_runs.jsonl`` (one line per evaluation, plus one per
finished run); a rerun skips finished runs, so the benchmark resumes after an interruption.
At the end it prints the table, writes ``benchmarks/results/learning.json`` (mean and 95%
t-interval over seeds per arm, and the paired difference trained - control) and draws
``docs/img/learning_curve.png``.

Speed: the step time of the recipe (2 x 128 completions, each prompt run once a step) is
printed beside that of the default flat recipe (the full ~600-token prompt, LoRA on every
layer, 8 completions) and of the recipe's short prompt at 2 x 8 completions with TRL's
trainer and with shared prompts, all measured in one run with ``--speed-steps`` timed steps
each (after a warm-up step) and split into generation and the rest (``--speed-steps 0``
skips it).

Usage: ``python benchmarks/bench_learning.py [--seeds 0 1 2] [--steps 80] [--eval-every 10]``
(six runs of about 10 minutes each on one CPU core at 80 steps; run it under ``nohup`` and
rerun to resume). On two cores, one process per core with ``--arms trained`` and ``--arms
control`` (each pinned, ``OMP_NUM_THREADS=1``) halves the wall time; they append to one file.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import math
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from affectgym.train.recipes import SARCASM_ENV_ID as ENV_ID
from affectgym.train.recipes import SARCASM_SHORT_FORM as ENV_KWARGS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUNS_FILE = RESULTS / "learning_runs.jsonl"
SUMMARY_FILE = RESULTS / "learning.json"
FIGURE = ROOT / "docs" / "img" / "learning_curve.png"
METRICS = ("accuracy", "answered_rate", "pivot_accuracy", "reward")


def recipe(arm: str, seed: int, steps: int, eval_every: int, output_dir: Path) -> Any:
    """The training options of one run: the package's CPU recipe, the control arm without correctness."""
    from affectgym.train.recipes import sarcasm_cpu_config

    return sarcasm_cpu_config(output_dir, max_steps=steps, seed=seed, control=arm == "control", eval_every_steps=eval_every)


@functools.lru_cache(maxsize=1)
def recipe_id() -> str:
    """A short fingerprint of the recipe: its options (seed and folders aside) and the
    prompt the env renders for the first train clip, so that a change of the env's prompt
    counts as a new recipe too.

    Every row carries it, so that a results file never mixes runs of an older recipe with
    the current one: those rows are kept but no longer read.
    """
    from affectgym.train.flatten import make_env

    options = dataclasses.asdict(recipe("trained", 0, 1, 0, Path("runs")))
    for varying in ("seed", "max_steps", "n_train", "eval_every_steps", "output_dir"):
        options.pop(varying)
    env = make_env(ENV_ID, {**ENV_KWARGS, "split": "train"})
    options["first_prompt"] = env.flat_prompt(env.scenarios[0])
    return hashlib.sha1(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()[:10]


def read_rows() -> list[dict[str, Any]]:
    """Every line written so far with the current recipe."""
    if not RUNS_FILE.is_file():
        return []
    rows = [json.loads(line) for line in RUNS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    current = recipe_id()
    return [row for row in rows if row.get("recipe_id") == current]


def append_rows(rows: list[dict[str, Any]]) -> None:
    RUNS_FILE.parent.mkdir(parents=True, exist_ok=True)
    with RUNS_FILE.open("a", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def finished(rows: list[dict[str, Any]], arm: str, seed: int, steps: int) -> bool:
    return any(r.get("kind") == "run" and r["arm"] == arm and r["seed"] == seed and r["steps"] == steps for r in rows)


def run_arm(arm: str, seed: int, steps: int, eval_every: int, work: Path) -> None:
    """Train one arm on one seed; append its held-out curve and its run line."""
    from affectgym.train.grpo import train

    out = work / f"{arm}-seed{seed}"
    shutil.rmtree(out, ignore_errors=True)
    start_s = time.perf_counter()
    summary = train(recipe(arm, seed, steps, eval_every, out))
    curve = [json.loads(line) for line in (out / "heldout.jsonl").read_text(encoding="utf-8").splitlines()]
    history = json.loads((out / "log_history.json").read_text(encoding="utf-8"))
    step_s = [row["step_time"] for row in history if "step_time" in row]
    tags = {"arm": arm, "seed": seed, "steps": steps, "recipe_id": recipe_id()}
    append_rows([{"kind": "eval", **tags, **point} for point in curve] + [{
        "kind": "run", **tags, "wall_s": round(time.perf_counter() - start_s, 1),
        "train_s": summary["train_s"], "step_s_median": statistics.median(step_s) if step_s else None,
        "first_reward": summary["first_reward"], "last_reward": summary["last_reward"],
    }])


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
    cpu = recipe("trained", 0, steps + 1, 0, work / "speed-recipe")
    small = dataclasses.replace(cpu, num_generations=8, batch_size=16)
    configs = (default, dataclasses.replace(small, share_prompts=False), small, cpu)
    rows = [step_breakdown(config, label) for config, label in zip(configs, SPEED_LABELS, strict=True)]
    append_rows([{**row, "recipe_id": recipe_id()} for row in rows])


def t_interval(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% t-interval (0 for a single value)."""
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, float(half)


def final_points(rows: list[dict[str, Any]], steps: int) -> dict[str, dict[int, dict[str, Any]]]:
    """Per arm and seed: the last evaluation (``base`` = the step-0 evaluation of the trained runs).

    Rewards are each arm's own (the control's rubric weighs correctness 0); accuracy,
    answered rate and pivot accuracy do not depend on the arm.
    """
    points: dict[str, dict[int, dict[str, Any]]] = {"base": {}, "control": {}, "trained": {}}
    for row in rows:
        if row.get("kind") != "eval" or row["steps"] != steps:
            continue
        if row["step"] == 0 and row["arm"] == "trained":
            points["base"][row["seed"]] = row
        if row["step"] == steps:
            points[row["arm"]][row["seed"]] = row
    return points


def summarise(rows: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """The learning.json content: each arm's means and intervals, the paired difference."""
    points = final_points(rows, steps)
    summary: dict[str, Any] = {"env_id": ENV_ID, "env_kwargs": ENV_KWARGS, "steps": steps, "split": "eval"}
    for arm, by_seed in points.items():
        entry: dict[str, Any] = {"seeds": sorted(by_seed)}
        for metric in METRICS:
            values = [p[metric] for p in by_seed.values() if p.get(metric) is not None]
            if values:
                entry[f"{metric}_mean"], entry[f"{metric}_ci95"] = t_interval(values)
        if by_seed:
            entry["episodes"] = next(iter(by_seed.values()))["episodes"]
        summary[arm] = entry
    paired = sorted(set(points["trained"]) & set(points["control"]))
    if paired:
        deltas = [points["trained"][s]["accuracy"] - points["control"][s]["accuracy"] for s in paired]
        mean, half = t_interval(deltas)
        summary["delta_vs_control"] = {"seeds": paired, "mean": mean, "ci95_low": mean - half, "ci95_high": mean + half}
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


def table(summary: dict[str, Any]) -> str:
    """The side-by-side table of the arms (mean +/- 95% interval over seeds)."""

    def cell(entry: dict[str, Any], metric: str) -> str:
        if f"{metric}_mean" not in entry:
            return "n/a"
        return f"{entry[f'{metric}_mean']:.3f} +/- {entry[f'{metric}_ci95']:.3f}"

    lines = [f"held-out {ENV_ID} ({summary.get('trained', {}).get('episodes', '?')} eval clips, line-grouped split), "
             f"{summary['steps']} GRPO steps, mean +/- 95% CI over seeds",
             f"{'arm':9s} {'seeds':>5s}  {'accuracy':>15s}  {'answered':>15s}  {'pivot acc.':>15s}  {'reward':>15s}"]
    for arm in ("base", "control", "trained"):
        entry = summary.get(arm, {})
        lines.append(f"{arm:9s} {len(entry.get('seeds', [])):5d}  " + "  ".join(f"{cell(entry, m):>15s}" for m in METRICS))
    delta = summary.get("delta_vs_control")
    if delta:
        lines.append(f"trained - control accuracy: {delta['mean']:+.3f} (95% CI {delta['ci95_low']:+.3f} to {delta['ci95_high']:+.3f})")
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


def markdown_table(summary: dict[str, Any]) -> str:
    """The README's table of the arms: mean ± 95% CI over seeds, and the paired difference."""

    def cell(entry: dict[str, Any], metric: str) -> str:
        if f"{metric}_mean" not in entry:
            return "n/a"
        return f"{entry[f'{metric}_mean']:.3f} ± {entry[f'{metric}_ci95']:.3f}"

    lines = [
        "| arm | seeds | held-out accuracy | answered | pivot accuracy | reward (the arm's own) |",
        "|---|---|---|---|---|---|",
    ]
    names = {"base": "base (untrained)", "control": "control (format-only reward)", "trained": "trained (full reward)"}
    for arm in ("base", "control", "trained"):
        entry = summary.get(arm, {})
        lines.append(f"| {names[arm]} | {len(entry.get('seeds', []))} | " + " | ".join(cell(entry, m) for m in METRICS) + " |")
    delta = summary.get("delta_vs_control")
    if delta:
        lines.append("")
        lines.append(
            f"Trained - control held-out accuracy: {delta['mean']:+.3f} "
            f"(95% CI {delta['ci95_low']:+.3f} to {delta['ci95_high']:+.3f}), {summary['steps']} GRPO steps, "
            f"{summary.get('trained', {}).get('episodes', '?')} eval clips."
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], steps: int, path: Path) -> None:
    """Held-out accuracy vs step: trained and control (mean and min-max band over seeds), base, chance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    colours = {"trained": "tab:blue", "control": "tab:orange"}
    labels = {"trained": "trained (full reward)", "control": "control (format-only reward)"}
    base = [r["accuracy"] for r in rows if r.get("kind") == "eval" and r["steps"] == steps and r["step"] == 0
            and r["arm"] == "trained"]
    for arm in ("trained", "control"):
        by_step: dict[int, list[float]] = {}
        for row in rows:
            if row.get("kind") == "eval" and row["steps"] == steps and row["arm"] == arm:
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
    completions = recipe("trained", 0, steps, 0, Path("runs")).batch_size
    ax.set_xlabel(f"GRPO step ({completions} completions per step)")
    ax.set_ylabel("held-out accuracy (unanswered = wrong)")
    ax.set_ylim(0, 1.02)
    ax.set_title("Sarcasm-v0, SmolLM2-135M, held-out lines: accuracy during training", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center right", bbox_to_anchor=(1.0, 0.75), title="bands: min-max over seeds",
              title_fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=("trained", "control"), default=["trained", "control"],
                        help="which arms to train (e.g. one per process, to run two on two cores)")
    parser.add_argument("--steps", type=int, default=80, help="GRPO steps per run")
    parser.add_argument("--eval-every", type=int, default=10, help="held-out evaluation every N steps")
    parser.add_argument("--speed-steps", type=int, default=2, help="steps timed per recipe for the speed table (0 = skip)")
    parser.add_argument("--work", default=str(ROOT / "runs" / "bench-learning"), help="scratch folder of the runs")
    parser.add_argument("--report-only", action="store_true", help="only summarise what the results file holds")
    args = parser.parse_args(argv)
    work = Path(args.work)
    if not args.report_only:
        for seed in args.seeds:
            for arm in args.arms:
                if finished(read_rows(), arm, seed, args.steps):
                    print(f"{arm} seed {seed}: done (in {RUNS_FILE.name})", flush=True)
                    continue
                print(f"{arm} seed {seed}: training {args.steps} steps ...", flush=True)
                run_arm(arm, seed, args.steps, args.eval_every, work)
        if args.speed_steps and not any(r.get("kind") == "speed" for r in read_rows()):
            print(f"timing {args.speed_steps} steps of the default flat recipe and of the CPU recipe ...", flush=True)
            measure_speed(args.speed_steps, work)
    rows = read_rows()
    summary = summarise(rows, args.steps)
    SUMMARY_FILE.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    plot(rows, args.steps, FIGURE)
    print(table(summary))
    print("\nREADME table (between its learning-table markers):\n" + markdown_table(summary))
    print(f"results: {RUNS_FILE.relative_to(ROOT)}, {SUMMARY_FILE.relative_to(ROOT)}; figure: {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
