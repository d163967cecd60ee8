"""Train flat, play with tools: does a skill learned on flat prompts reach the multi-step agent?

Every arm plays Sarcasm-v0's line-grouped eval split (corpus v2: 46 clips, every line said
both ways, so text alone is at chance and no single cue decides) as a **multi-step agent
through the eval runner**: the model calls the tools itself (its tool calls parsed from its
text, the results fed back as tool messages), then answers yes or no to "is the line
sarcastic?", in the recipes' form (:data:`affectgym.train.recipes.SARCASM_AGENT_FORM`;
greedy, at most 64 tokens a message, 4 turns). An unanswered or malformed episode counts as
wrong. The recipes' settings are frozen before the eval split is played; GRPO's learning
curve plays the validation split.

* ``base``: the embedded SmolLM2-135M-Instruct;
* ``sft``: the warm start alone, on the label-blind protocol demonstrator's train episodes
  (:mod:`affectgym.agents.protocol`): it knows the protocol, not the answer (the control);
* ``sft+flat-grpo``: the warm start, then GRPO on the ``"chat"`` prompts (the agent's own
  answer turn, the tool results in it), through the env's one reward path;
* ``sft+anchored-flat-grpo``: the same flat GRPO with a supervised anchor, the NLL of the
  protocol demonstrator's episodes in every step's loss (:mod:`affectgym.train.anchor`): it
  holds the tool-call turn in place while GRPO trains the answer, and teaches no label;
* ``sft+flat-grpo+protocol``: flat GRPO, then 8 supervised steps on the protocol demonstrator's
  tool-call turns alone (no answer is trained): flat GRPO on the answer token also moves the
  opening turn's first token, and the model stops calling the tools;
* ``sft+multiturn-grpo``: the warm start, then GRPO with TRL's ``environment_factory`` (the
  agent's own tool calls in the rollout), with the same number of optimizer steps.

Per arm: eval accuracy, answered rate, pivot accuracy, pivot lines both right (the two
deliveries of one line both answered right), tool-use rate, mean tool calls, the share of
answers that end right after the answer word, mean reward, and the flat accuracy of the same
weights (the chat prompts decoded as the agent decodes), so the transfer gap (flat minus
multi-step) is a number. Intervals are the hierarchical bootstrap over seeds and line
groups (:mod:`affectgym.eval.stats`); each arm is paired with ``sft``, with ``base`` and with
the best single-cue rule of ``affectgym data report`` (clip by clip), McNemar exact p beside.

Results are written as they come (``benchmarks/results/transfer_runs.jsonl``, one line per
arm and seed; a rerun skips what is there and resumes the stages whose outputs exist), every
held-out episode of every arm to ``benchmarks/results/transfer_samples.jsonl``, the summary
to ``benchmarks/results/transfer.json`` and the figure to ``docs/img/transfer.png``.

Usage (one seed after another; two processes, one core each, fill one results file)::

    python benchmarks/bench_transfer.py                       # seeds 0 1 2, every arm but the refresher
    taskset -c 0 python benchmarks/bench_transfer.py --seeds 0 --threads 1 &
    taskset -c 1 python benchmarks/bench_transfer.py --seeds 1 2 --arms sft sft+flat-grpo --threads 1 &
    python benchmarks/bench_transfer.py --report-only
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from stages import (
    append_jsonl,
    best_single_cue,
    done,
    load_policy,
    pivot_lines_right,
    read_jsonl,
    rerun_options,
    run_missing,
    use_threads,
)

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
from affectgym.train.recipes import (
    AGENT_MAX_NEW_TOKENS,
    SARCASM_AGENT_FORM,
    SARCASM_ENV_ID,
    sarcasm_anchored_chat_grpo_config,
    sarcasm_chat_grpo_config,
    sarcasm_multiturn_grpo_config,
    sarcasm_protocol_refresher_config,
    sarcasm_protocol_sft_config,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUNS_FILE = RESULTS / "transfer_runs.jsonl"
SAMPLES_FILE = RESULTS / "transfer_samples.jsonl"
SUMMARY_FILE = RESULTS / "transfer.json"
FIGURE = ROOT / "docs" / "img" / "transfer.png"
WORK = ROOT / "runs" / "bench_transfer"
ARMS = ("base", "sft", "sft+flat-grpo", "sft+anchored-flat-grpo", "sft+flat-grpo+protocol", "sft+multiturn-grpo")
#: The arms a plain run trains: all but the protocol refresher (a diagnostic the anchor
#: replaced; ``--arms sft+flat-grpo+protocol`` adds it). Measured per stage on one core each,
#: these take ~6.1 core-hours for three seeds (docs/benchmarks.md has each stage's share).
DEFAULT_ARMS = tuple(arm for arm in ARMS if arm != "sft+flat-grpo+protocol")
METRICS = ("accuracy", "answered_rate", "pivot_accuracy", "pivot_pairs_right", "tool_use_rate", "mean_tool_calls",
           "clean_answer_rate", "reward", "flat_accuracy")
#: The metrics a run's line prints (its own seed's values).
SEED_METRICS = ("accuracy", "answered_rate", "pivot_accuracy", "tool_use_rate", "clean_answer_rate", "flat_accuracy")
GROUPS = "line groups"
DATA_REPORT = RESULTS / "data_report_sarcasm_v2.json"
#: Warm-start and GRPO steps of the benchmark.
SFT_STEPS = 20
GRPO_STEPS = 60
ANSWER_WORDS = ("yes", "no")


def seed_dir(seed: int) -> Path:
    """The stages of one seed, kept apart per recipe (a stage of another recipe is never resumed)."""
    return WORK / recipe_id() / f"s{seed}"


def demos_stage(seed: int) -> Path:
    """The protocol demonstrator's episodes on the train split (the warm start's data)."""
    from affectgym.eval import EvalConfig, run_eval

    out = seed_dir(seed) / "demos"
    if not done(out):
        run_eval(EvalConfig(env_id=SARCASM_ENV_ID, agent="protocol", out=out, split="train", seed=seed,
                            env_kwargs=dict(SARCASM_AGENT_FORM), concurrency=4, progress=False, resume=out.exists()))
    return out


def sft_stage(seed: int, steps: int) -> tuple[Path, dict[str, Any]]:
    """The warm start's adapter and summary."""
    from affectgym.train.sft import train_sft

    out = seed_dir(seed) / "sft"
    if not done(out):
        train_sft(sarcasm_protocol_sft_config(out, [str(demos_stage(seed))], seed=seed, max_steps=steps), progress=True,
                  **rerun_options(out))
    return out / "adapter", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def grpo_stage(arm: str, seed: int, steps: int, sft_adapter: Path) -> tuple[Path, dict[str, Any]]:
    """A GRPO arm's adapter and summary, trained from the warm start's adapter."""
    from affectgym.train.grpo import train

    out = seed_dir(seed) / arm.removeprefix("sft+")
    if not done(out):
        if arm == "sft+flat-grpo":  # the flat held-out accuracy at the start and at the end
            config = sarcasm_chat_grpo_config(out, str(sft_adapter), seed=seed, max_steps=steps, eval_every_steps=steps)
        elif arm == "sft+anchored-flat-grpo":
            config = sarcasm_anchored_chat_grpo_config(out, str(sft_adapter), [str(demos_stage(seed))], seed=seed,
                                                       max_steps=steps, eval_every_steps=steps)
        else:
            config = sarcasm_multiturn_grpo_config(out, str(sft_adapter), seed=seed, max_steps=steps)
        train(config, progress=True, **rerun_options(out))
    return out / "adapter", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def refresher_stage(seed: int, grpo_adapter: Path) -> tuple[Path, dict[str, Any]]:
    """The flat GRPO adapter after a few supervised steps on the protocol's tool-call turns alone."""
    from affectgym.train.sft import train_sft

    out = seed_dir(seed) / "protocol-refresher"
    if not done(out):
        train_sft(sarcasm_protocol_refresher_config(out, [str(demos_stage(seed))], str(grpo_adapter), seed=seed),
                  progress=True, **rerun_options(out))
    return out / "adapter", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def play(arm: str, seed: int, adapter: Path | None) -> dict[str, Any]:
    """The arm's multi-step held-out episodes through the eval runner; its metrics and episodes."""
    from affectgym.eval import EvalConfig, run_eval
    from affectgym.eval.results import read_results

    out = seed_dir(seed) / f"eval-{arm}"
    agent_kwargs: dict[str, Any] = {"max_new_tokens": AGENT_MAX_NEW_TOKENS, "temperature": 0.0, "max_batch_size": 16}
    if adapter is not None:
        agent_kwargs["adapter"] = str(adapter)
    if not done(out):
        run_eval(EvalConfig(env_id=SARCASM_ENV_ID, agent="hf:smollm2-135m", out=out, split="eval", seed=seed,
                            env_kwargs=dict(SARCASM_AGENT_FORM), agent_kwargs=agent_kwargs, concurrency=16,
                            progress=False, max_fail_fraction=1.0, resume=out.exists()))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    records, _ = read_results(out / "results.jsonl")
    classification = summary["classification"]
    answers = [(r.get("final_text") or "").strip().lower().rstrip(".!") for r in records if r.get("terminated")]
    metrics = {
        "accuracy": classification["accuracy"],
        "answered_rate": summary["tool_use"]["answered_rate"],
        "pivot_accuracy": classification["subsets"]["pivot"]["true"]["accuracy"],
        "tool_use_rate": summary["tool_use"]["tool_use_rate"],
        "mean_tool_calls": summary["tool_use"]["mean_tool_calls"],
        "invalid_actions_mean": summary["tool_use"]["invalid_actions_mean"],
        "clean_answer_rate": sum(a in ANSWER_WORDS for a in answers) / len(records),
        "reward": summary["reward"]["mean"],
        "episodes": summary["episodes"],
    }
    samples = [
        {"arm": arm, "seed": seed, "scenario_id": r["scenario_id"], "label": (r.get("outcome") or {}).get("label"),
         "prediction": (r.get("outcome") or {}).get("prediction"), "correct": (r.get("outcome") or {}).get("correct"),
         "reward": r.get("reward"), "reward_components": r.get("reward_components"), "tool_calls": r.get("tool_calls"),
         "assistant_messages": [m.get("content") for m in r["messages"] if m.get("role") == "assistant"]}
        for r in records
    ]
    return {"metrics": metrics, "samples": samples}


def flat_play(adapter: Path | None) -> dict[str, Any]:
    """The same weights on the eval split's chat prompts (tool results given), decoded as the agent decodes:
    the accuracy and each clip's correctness."""
    from affectgym.train.heldout import HeldOutEvaluator

    model, tokenizer = load_policy("smollm2-135m", adapter)
    evaluator = HeldOutEvaluator(SARCASM_ENV_ID, SARCASM_AGENT_FORM, tokenizer, max_new_tokens=AGENT_MAX_NEW_TOKENS,
                                 prompt_form="chat", split="eval")
    played = evaluator.evaluate(model)
    return {"accuracy": played["accuracy"], "correct": played["correct"]}


def run_arm(arm: str, seed: int, sft_steps: int, grpo_steps: int) -> None:
    """Train (as needed) and evaluate one arm of one seed; append its row and its episodes."""
    train: dict[str, Any] = {"steps": 0, "train_s": 0.0}
    adapter = None
    if arm != "base":
        adapter, sft_summary = sft_stage(seed, sft_steps)
        train = {"steps": sft_summary["steps"], "train_s": sft_summary["train_s"]}
        if arm != "sft":
            adapter, summary = grpo_stage(arm.removesuffix("+protocol"), seed, grpo_steps, adapter)
            train = {"steps": summary["steps"], "train_s": summary["train_s"]}
        if arm.endswith("+protocol"):
            adapter, refresher = refresher_stage(seed, adapter)
            train["train_s"] += refresher["train_s"]
    played = play(arm, seed, adapter)
    flat = flat_play(adapter)
    tags = {"arm": arm, "seed": seed, "recipe_id": recipe_id()}
    row = {
        **tags, "sft_steps": sft_steps if arm != "base" else 0,
        "grpo_steps": train["steps"] if arm.startswith("sft+") else 0, **played["metrics"],
        "flat_accuracy": flat["accuracy"], "flat_correct": flat["correct"], "train_s": train["train_s"],
        "steps_per_min": 60 * train["steps"] / train["train_s"] if train["train_s"] else None,
    }
    append_jsonl(SAMPLES_FILE, [{**sample, "recipe_id": recipe_id()} for sample in played["samples"]])
    append_jsonl(RUNS_FILE, [row])
    print(f"{arm} seed {seed}: " + ", ".join(f"{k} {row[k]:.3f}" for k in SEED_METRICS if row.get(k) is not None),
          flush=True)


@functools.cache
def recipe_id() -> str:
    """A short fingerprint of the benchmark: its steps, the agent's form and the prompt of the first eval clip.

    Every row and episode carries it, and the stages' folders are kept under it, so that a
    change of corpus, prompt or recipe never mixes with earlier results (those are kept but
    no longer read).
    """
    env = eval_env()
    fingerprint = {"sft_steps": SFT_STEPS, "grpo_steps": GRPO_STEPS, "form": SARCASM_AGENT_FORM,
                   "first_prompt": env.flat_prompt(env.scenarios[0]), "clips": [s.id for s in env.scenarios]}
    return hashlib.sha1(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()[:10]


def eval_env() -> Any:
    """The agent form's eval split, built once (the env cache of :func:`affectgym.train.flatten.shared_env`)."""
    from affectgym.train.flatten import kwargs_json, shared_env

    return shared_env(SARCASM_ENV_ID, kwargs_json({**SARCASM_AGENT_FORM, "split": "eval"}))


@functools.cache
def eval_clips() -> dict[str, dict[str, Any]]:
    """Every eval clip's split group (its line) and whether it is a pivot."""
    env = eval_env()
    return {s.id: {"group": str(env.split_group(s)), "pivot": bool(getattr(s, "pivot", False)), "label": s.label}
            for s in env.scenarios}


def current(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the current recipe."""
    return [row for row in rows if row.get("recipe_id") == recipe_id()]


def episode_value(sample: dict[str, Any], metric: str) -> float | None:
    """One held-out episode's value of ``metric`` (``None``: the metric does not count this episode)."""
    if metric == "accuracy":
        return float(bool(sample["correct"]))
    if metric == "answered_rate":
        return float(sample["prediction"] is not None)
    if metric == "pivot_accuracy":
        return float(bool(sample["correct"])) if eval_clips()[sample["scenario_id"]]["pivot"] else None
    if metric == "tool_use_rate":
        return float(bool(sample["tool_calls"]))
    if metric == "mean_tool_calls":
        return float(len(sample["tool_calls"] or []))
    if metric == "clean_answer_rate":
        text = (sample["assistant_messages"] or [""])[-1] or ""
        return float(sample["prediction"] is not None and text.strip().lower().rstrip(".!") in ANSWER_WORDS)
    return float(sample["reward"]) if sample.get("reward") is not None else None


def observations(samples: list[dict[str, Any]], metric: str) -> list[Observation]:
    """An arm's episodes as bootstrap observations of ``metric``; ``pivot_pairs_right`` counts pivot lines both right."""
    clips = eval_clips()
    if metric == "pivot_pairs_right":
        return pivot_lines_right((sample["seed"], clips[sample["scenario_id"]]["group"], sample["correct"])
                                 for sample in samples if clips[sample["scenario_id"]]["pivot"])
    found = []
    for sample in samples:
        value = episode_value(sample, metric)
        if value is not None:
            found.append(Observation(sample["seed"], sample["scenario_id"], clips[sample["scenario_id"]]["group"], value))
    return found


def flat_observations(rows: list[dict[str, Any]]) -> list[Observation]:
    """An arm's flat plays (the chat prompts, tool results given) as observations."""
    clips = eval_clips()
    return [Observation(row["seed"], clip, clips[clip]["group"], float(right))
            for row in rows for clip, right in sorted(row["flat_correct"].items())]


def summarise(rows: list[dict[str, Any]], samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Every metric per arm by the hierarchical bootstrap, and each arm's paired differences (current recipe only)."""
    rows, samples = current(rows), current(samples)
    by_arm = {arm: [r for r in rows if r["arm"] == arm] for arm in ARMS}
    episodes = {arm: [s for s in samples if s["arm"] == arm] for arm in ARMS}
    cue = best_single_cue(DATA_REPORT, {clip: (info["group"], info["label"]) for clip, info in eval_clips().items()})
    arms: dict[str, Any] = {}
    for arm in ARMS:
        if not by_arm[arm]:
            continue
        seeds = sorted(r["seed"] for r in by_arm[arm])
        entry: dict[str, Any] = {"seeds": seeds, "episodes": by_arm[arm][0]["episodes"]}
        for metric in METRICS:
            found = flat_observations(by_arm[arm]) if metric == "flat_accuracy" else observations(episodes[arm], metric)
            if found:
                entry[metric] = hierarchical_bootstrap(found).to_dict()
        entry["transfer_gap"] = entry["flat_accuracy"]["mean"] - entry["accuracy"]["mean"]
        speeds = [r["steps_per_min"] for r in by_arm[arm] if r.get("steps_per_min")]
        entry["steps_per_min"] = statistics.fmean(speeds) if speeds else None
        mine = observations(episodes[arm], "accuracy")
        for reference in [r for r in ("sft", "base") if arm not in (r, "base")]:
            theirs = observations(episodes[reference], "accuracy")
            if reference == "base":
                theirs = on_every_seed(theirs, seeds)
            shared = {o.seed for o in theirs} & set(seeds)  # a reference seed still running is left out
            theirs, mine_shared = ([o for o in side if o.seed in shared] for side in (theirs, mine))
            if not shared:
                continue
            only_theirs, only_mine = mcnemar_counts(theirs, mine_shared)
            entry[f"vs_{reference}"] = {**paired_difference(theirs, mine_shared).to_dict(), "mcnemar": {
                "only_reference": only_theirs, "only_arm": only_mine, "p": mcnemar_exact_p(only_theirs, only_mine)}}
        if cue:
            entry["vs_best_single_cue"] = paired_difference(on_every_seed(cue[1], seeds), mine).to_dict()
        arms[arm] = entry
    return {
        "env_id": SARCASM_ENV_ID, "env_kwargs": SARCASM_AGENT_FORM, "split": "eval", "multi_step": True,
        "recipe_id": recipe_id(), "intervals": method_text(GROUPS, mcnemar=True),
        "decoding": {"greedy": True, "max_new_tokens": AGENT_MAX_NEW_TOKENS},
        "sft_steps": max((r["sft_steps"] for r in rows), default=0),
        "grpo_steps": max((r["grpo_steps"] for r in rows), default=0),
        "best_single_cue": cue[0] if cue else None, "arms": arms,
    }


def _cell(entry: dict[str, Any], metric: str) -> str:
    return Estimate.from_dict(entry[metric]).format(scope=False) if metric in entry else "-"


def markdown_table(summary: dict[str, Any]) -> str:
    """The Results page's table (docs/results.md) of the summary, and the paired differences under it."""
    lines = [
        "| arm | seeds | multi-step accuracy | answered | pivot accuracy | pivot lines both right | tool use | tool calls "
        "| clean answer | reward | flat accuracy | steps/min |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, entry in summary["arms"].items():
        speed = f"{entry['steps_per_min']:.2f}" if entry.get("steps_per_min") else "-"
        cells = [_cell(entry, m) for m in METRICS]
        lines.append(f"| `{arm}` | {len(entry['seeds'])} | " + " | ".join(cells) + f" | {speed} |")
    if not summary["arms"]:
        return "\n".join(lines)
    episodes = next(iter(summary["arms"].values()))["episodes"]
    lines += ["", f"{episodes} eval clips, played multi-step; {summary['intervals']}.", ""]
    cue = summary.get("best_single_cue")
    for arm, entry in summary["arms"].items():
        parts = []
        for reference in ("sft", "base"):
            found = entry.get(f"vs_{reference}")
            if found:
                test = found["mcnemar"]
                parts.append(f"vs `{reference}` {Estimate.from_dict(found).format(groups=GROUPS)}, McNemar exact p "
                             f"{format_p_value(test['p'])}")
        if cue and entry.get("vs_best_single_cue"):
            parts.append(f"vs the best single cue ({cue['accuracy']:.3f}) "
                         f"{Estimate.from_dict(entry['vs_best_single_cue']).format(groups=GROUPS)}")
        if parts:
            lines.append(f"- `{arm}` accuracy: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def plot(summary: dict[str, Any], path: Path) -> None:
    """Multi-step and flat held-out accuracy of every arm, with their 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(summary["arms"])
    figure, axis = plt.subplots(figsize=(9.5, 4.2), dpi=120)
    width = 0.38
    for offset, metric, label in ((-width / 2, "accuracy", "multi-step (agent calls the tools)"),
                                  (width / 2, "flat_accuracy", "flat (chat prompt, tool results given)")):
        estimates = [summary["arms"][a][metric] for a in arms]
        means = [e["mean"] for e in estimates]
        low = [e["mean"] - (e["ci95_low"] if e["ci95_low"] is not None else e["mean"]) for e in estimates]
        high = [(e["ci95_high"] if e["ci95_high"] is not None else e["mean"]) - e["mean"] for e in estimates]
        bars = axis.bar([i + offset for i in range(len(arms))], means, width, yerr=[low, high], capsize=4, label=label)
        for bar, mean, above in zip(bars, means, high, strict=True):
            axis.text(bar.get_x() + bar.get_width() / 2, mean + above + 0.02, f"{mean:.2f}", ha="center",
                      fontsize="small")
    axis.axhline(0.5, color="grey", linestyle="--", linewidth=1)
    axis.text(len(arms) - 0.55, 0.45, "chance", color="grey", fontsize="small", ha="right")
    cue = summary.get("best_single_cue")
    if cue:
        axis.axhline(cue["accuracy"], color="tab:red", linestyle=":", linewidth=1)
        axis.text(len(arms) - 0.55, cue["accuracy"] + 0.02, "best single cue", color="tab:red", fontsize="small",
                  ha="right")
    labels = [arm.replace("+", "+\n") + f"\n({len(summary['arms'][arm]['seeds'])} seed"
              + ("s)" if len(summary["arms"][arm]["seeds"]) > 1 else ")") for arm in arms]
    axis.set_xticks(range(len(arms)), labels)
    axis.set_ylim(0, 1.2)
    episodes = summary["arms"][arms[0]]["episodes"]
    axis.set_ylabel(f"eval accuracy ({episodes} clips)")
    axis.set_title("Sarcasm-v0 (corpus v2), SmolLM2-135M: eval accuracy, 95% CI over seeds and lines",
                   fontsize="medium")
    axis.legend(fontsize="small", loc="upper left", ncols=2)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)


def report() -> dict[str, Any]:
    """Summarise the results files, write the summary and the figure, print the table."""
    summary = summarise(read_jsonl(RUNS_FILE), read_jsonl(SAMPLES_FILE))
    SUMMARY_FILE.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    if summary["arms"]:
        plot(summary, FIGURE)
    print(markdown_table(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(DEFAULT_ARMS))
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 when two runs share the machine)")
    parser.add_argument("--report-only", action="store_true", help="summarise the results file and train nothing")
    args = parser.parse_args(argv)
    if not args.report_only:
        use_threads(args.threads)
        finished = {(r["arm"], r["seed"]) for r in current(read_jsonl(RUNS_FILE))}
        run_missing(args.seeds, args.arms, lambda arm, seed: (arm, seed) in finished,
                    lambda arm, seed: run_arm(arm, seed, SFT_STEPS, GRPO_STEPS))
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "markdown_table", "summarise"]
