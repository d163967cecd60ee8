"""Train flat, play with tools: does a skill learned on flat prompts reach the multi-step agent?

Every arm plays Sarcasm-v0's line-grouped eval split (50 clips, 46 of them pivots: the same
words said both ways) as a **multi-step agent through the eval runner**: the model calls
the tools itself (its tool calls parsed from its text, the results fed back as tool
messages), then answers yes or no to "is the line sarcastic?", in the recipes' form
(:data:`affectgym.train.recipes.SARCASM_AGENT_FORM`; greedy, at most 64 tokens a message,
4 turns). An unanswered or malformed episode counts as wrong.

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

Per arm: held-out accuracy, answered rate, pivot accuracy, tool-use rate, mean tool calls,
the share of answers that end right after the answer word, mean reward, mean ± 95% CI over
seeds, the paired difference to ``sft`` with its CI, the training cost (steps/minute), and
the flat held-out accuracy of the same weights (the chat prompts decoded as the agent
decodes), so the transfer gap (flat minus multi-step) is a number.

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
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from stages import append_jsonl, done, read_jsonl, rerun_options

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
#: The arms whose GRPO run measures the flat held-out accuracy itself (``heldout.jsonl``).
FLAT_GRPO_ARMS = ("sft+flat-grpo", "sft+anchored-flat-grpo")
#: The arms a plain run trains: all but the protocol refresher (a diagnostic the anchor
#: replaced; ``--arms sft+flat-grpo+protocol`` adds it). Measured per stage on one core each,
#: these take ~6.1 core-hours for three seeds (docs/benchmarks.md has each stage's share).
DEFAULT_ARMS = tuple(arm for arm in ARMS if arm != "sft+flat-grpo+protocol")
METRICS = ("accuracy", "answered_rate", "pivot_accuracy", "tool_use_rate", "mean_tool_calls", "clean_answer_rate",
           "reward", "flat_accuracy")
#: Warm-start and GRPO steps of the benchmark.
SFT_STEPS = 20
GRPO_STEPS = 60
ANSWER_WORDS = ("yes", "no")


def demos_stage(seed: int) -> Path:
    """The protocol demonstrator's episodes on the train split (the warm start's data)."""
    from affectgym.eval.runner import EvalConfig, run_eval

    out = WORK / f"s{seed}" / "demos"
    if not done(out):
        run_eval(EvalConfig(env_id=SARCASM_ENV_ID, agent="protocol", out=out, split="train", seed=seed,
                            env_kwargs=dict(SARCASM_AGENT_FORM), concurrency=4, progress=False, resume=out.exists()))
    return out


def sft_stage(seed: int, steps: int) -> tuple[Path, dict[str, Any]]:
    """The warm start's adapter and summary."""
    from affectgym.train.sft import train_sft

    out = WORK / f"s{seed}" / "sft"
    if not done(out):
        train_sft(sarcasm_protocol_sft_config(out, [str(demos_stage(seed))], seed=seed, max_steps=steps), progress=True,
                  **rerun_options(out))
    return out / "adapter", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def grpo_stage(arm: str, seed: int, steps: int, sft_adapter: Path) -> tuple[Path, dict[str, Any]]:
    """A GRPO arm's adapter and summary, trained from the warm start's adapter."""
    from affectgym.train.grpo import train

    out = WORK / f"s{seed}" / arm.removeprefix("sft+")
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

    out = WORK / f"s{seed}" / "protocol-refresher"
    if not done(out):
        train_sft(sarcasm_protocol_refresher_config(out, [str(demos_stage(seed))], str(grpo_adapter), seed=seed),
                  progress=True, **rerun_options(out))
    return out / "adapter", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def play(arm: str, seed: int, adapter: Path | None) -> dict[str, Any]:
    """The arm's multi-step held-out episodes through the eval runner; its metrics and episodes."""
    from affectgym.eval.results import read_results
    from affectgym.eval.runner import EvalConfig, run_eval

    out = WORK / f"s{seed}" / f"eval-{arm}"
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


def flat_accuracy(adapter: Path | None) -> float:
    """Held-out accuracy of the same weights on the chat prompts, decoded as the agent decodes."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from affectgym.agents.models import resolve_model
    from affectgym.train.heldout import HeldOutEvaluator

    path = resolve_model("smollm2-135m")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    tokenizer = AutoTokenizer.from_pretrained(path)
    evaluator = HeldOutEvaluator(SARCASM_ENV_ID, SARCASM_AGENT_FORM, tokenizer, max_new_tokens=AGENT_MAX_NEW_TOKENS,
                                 prompt_form="chat")
    return evaluator.evaluate(model)["accuracy"]


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
    curve = WORK / f"s{seed}" / arm.removeprefix("sft+") / "heldout.jsonl"
    if arm in FLAT_GRPO_ARMS:  # its run measured the same weights on the same prompts at its last step
        flat = json.loads(curve.read_text(encoding="utf-8").splitlines()[-1])["accuracy"]
    else:
        flat = flat_accuracy(adapter)
    row = {
        "arm": arm, "seed": seed, "sft_steps": sft_steps if arm != "base" else 0,
        "grpo_steps": train["steps"] if arm.startswith("sft+") else 0, **played["metrics"],
        "flat_accuracy": flat, "train_s": train["train_s"],
        "steps_per_min": 60 * train["steps"] / train["train_s"] if train["train_s"] else None,
    }
    append_jsonl(SAMPLES_FILE, played["samples"])
    append_jsonl(RUNS_FILE, [row])
    print(f"{arm} seed {seed}: " + ", ".join(f"{k} {row[k]:.3f}" for k in METRICS if row.get(k) is not None), flush=True)


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
        entry: dict[str, Any] = {"seeds": sorted(seeds)}
        for metric in (*METRICS, "steps_per_min"):
            values = [seeds[s][metric] for s in sorted(seeds) if seeds[s].get(metric) is not None]
            if values:
                mean, half = mean_ci95(values)
                entry[mean_key(metric)], entry[f"{metric}_ci95"] = mean, half
        entry["transfer_gap"] = entry["flat_accuracy"] - entry["accuracy_mean"]
        paired = [seeds[s]["accuracy"] - sft[s]["accuracy"] for s in sorted(seeds) if s in sft]
        if arm != "sft" and paired:
            mean, half = mean_ci95(paired)
            entry["delta_vs_sft"] = {"mean": mean, "ci95_low": mean - half, "ci95_high": mean + half, "seeds": len(paired)}
        arms[arm] = entry
    return {
        "env_id": SARCASM_ENV_ID, "env_kwargs": SARCASM_AGENT_FORM, "split": "eval", "multi_step": True,
        "decoding": {"greedy": True, "max_new_tokens": AGENT_MAX_NEW_TOKENS},
        "sft_steps": max((r["sft_steps"] for r in rows), default=0),
        "grpo_steps": max((r["grpo_steps"] for r in rows), default=0), "arms": arms,
    }


def mean_key(metric: str) -> str:
    """The summary's key of a metric's mean over seeds: ``accuracy_mean``, and the others by their own name."""
    return "accuracy_mean" if metric == "accuracy" else metric


def _cell(entry: dict[str, Any], metric: str) -> str:
    if mean_key(metric) not in entry:
        return "-"
    return f"{entry[mean_key(metric)]:.3f} ± {entry[f'{metric}_ci95']:.3f}"


def markdown_table(summary: dict[str, Any]) -> str:
    """The README's table of the summary."""
    lines = [
        "| arm | seeds | multi-step accuracy | answered | pivot accuracy | tool use | tool calls | clean answer "
        "| reward | flat accuracy | vs `sft` (95% CI) | steps/min |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, entry in summary["arms"].items():
        delta = entry.get("delta_vs_sft")
        versus = f"{delta['mean']:+.3f} ({delta['ci95_low']:+.3f} to {delta['ci95_high']:+.3f})" if delta else "-"
        speed = f"{entry['steps_per_min']:.2f}" if "steps_per_min" in entry else "-"
        cells = [_cell(entry, m) for m in METRICS]
        lines.append(f"| `{arm}` | {len(entry['seeds'])} | " + " | ".join(cells) + f" | {versus} | {speed} |")
    return "\n".join(lines)


def plot(summary: dict[str, Any], path: Path) -> None:
    """Multi-step and flat held-out accuracy of every arm, with their 95% intervals over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(summary["arms"])
    figure, axis = plt.subplots(figsize=(9.5, 4.2), dpi=120)
    width = 0.38
    for offset, metric, label in ((-width / 2, "accuracy", "multi-step (agent calls the tools)"),
                                  (width / 2, "flat_accuracy", "flat (chat prompt, tool results given)")):
        means = [summary["arms"][a][mean_key(metric)] for a in arms]
        halves = [summary["arms"][a][f"{metric}_ci95"] for a in arms]
        low = [min(half, mean) for mean, half in zip(means, halves, strict=True)]  # drawn within [0, 1]
        high = [min(half, 1 - mean) for mean, half in zip(means, halves, strict=True)]
        bars = axis.bar([i + offset for i in range(len(arms))], means, width, yerr=[low, high], capsize=4, label=label)
        for bar, mean in zip(bars, means, strict=True):
            axis.text(bar.get_x() + bar.get_width() / 2, mean + 0.03, f"{mean:.2f}", ha="center", fontsize="small")
    axis.axhline(0.5, color="grey", linestyle="--", linewidth=1)
    axis.text(-0.45, 0.52, "chance", color="grey", fontsize="small")
    labels = [arm.replace("+", "+\n") + f"\n({len(summary['arms'][arm]['seeds'])} seed"
              + ("s)" if len(summary["arms"][arm]["seeds"]) > 1 else ")") for arm in arms]
    axis.set_xticks(range(len(arms)), labels)
    axis.set_ylim(0, 1.2)
    axis.set_ylabel("held-out accuracy (50 clips)")
    axis.set_title("Sarcasm-v0, SmolLM2-135M: held-out accuracy, mean ± 95% CI over seeds (clipped to 0-1)",
                   fontsize="medium")
    axis.legend(fontsize="small", loc="upper left", ncols=2)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)


def report() -> dict[str, Any]:
    """Summarise the results file, write the summary and the figure, print the table."""
    summary = summarise(read_jsonl(RUNS_FILE))
    SUMMARY_FILE.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    if summary["arms"]:
        plot(summary, FIGURE)
    print(markdown_table(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(DEFAULT_ARMS))
    parser.add_argument("--sft-steps", type=int, default=SFT_STEPS)
    parser.add_argument("--grpo-steps", type=int, default=GRPO_STEPS)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 when two runs share the machine)")
    parser.add_argument("--report-only", action="store_true", help="summarise the results file and train nothing")
    args = parser.parse_args(argv)
    if not args.report_only:
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
            os.environ["OMP_NUM_THREADS"] = str(args.threads)
        finished = {(r["arm"], r["seed"]) for r in read_jsonl(RUNS_FILE)}
        for seed in args.seeds:
            for arm in args.arms:
                if arm == "base" and seed != min(args.seeds):
                    continue  # greedy decoding: the base model plays the same on every seed
                if (arm, seed) in finished:
                    continue
                start_s = time.perf_counter()
                run_arm(arm, seed, args.sft_steps, args.grpo_steps)
                print(f"  ({(time.perf_counter() - start_s) / 60:.1f} min)", flush=True)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "markdown_table", "mean_key", "summarise"]
