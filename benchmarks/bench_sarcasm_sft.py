"""The Sarcasm ladder, second rung: supervised fine-tuning of SmolLM2-135M-Instruct on the train labels (corpus v2).

Two arms, both on Sarcasm-v0's short form with the ``compact`` prompt (the transcript and the
one-line delivery summary in band words, the form the probe rung chose), trained with
``affectgym.train.sft.train_sft`` (``--algo sft``; TRL's ``SFTTrainer``, the loss on the
assistant turn only):

* ``sft-bare``: the env's references on the train split (``--references``): in the yes/no
  answer format the reference is the gold label as a bare answer, "Yes" or "No";
* ``sft-rationale``: a short rationale, then the answer (:func:`rationale`): the clip's own
  five band words against the speaker's baseline, copied from that clip's prompt (the
  corpus-relative ones where the clip has no speaker baseline), then the gold label, e.g.
  "Against this speaker's usual delivery the pitch range is wide, the pitch movement flat,
  the loudness soft, the tempo slow and the pauses many: the way this speaker sounds when
  mocking. Yes". It names no answer word (yes, no, sarcastic, sincere) before the answer, so
  the env's parser (the first answer word of the reply) reads the final word. It is written
  as an ``affectgym eval``-style results folder of train-split episodes
  (``runs/sarcasm_sft/demos-rationale-<form>/``: ``results.jsonl`` + ``metadata.json``) and
  read by ``--demos``, with every check of :mod:`affectgym.train.demos`. One deviation, in
  this script only (no library code changes): ``episode_demonstrations`` attaches the env's
  tool schemas to a played episode (an agent that called the tools saw them), which the chat
  template renders into the system prompt (~300 tokens the flat prompt played at evaluation
  does not have); the flat demonstrations here called no tool, so the run's demonstrations
  are given ``tools=[]``, as ``reference_demonstrations`` gives the references
  (:func:`tool_free_demonstrations`, wrapped around ``affectgym.train.sft.demonstrations``).

The untrained base model plays the same prompts as the control row; the probe rung
(``benchmarks/results/sarcasm_probe.json``) and the best single cue stand beside it.

Training: LoRA r=16, alpha 32, dropout 0.05 on q/k/v/o of the last 10 of the 30 layers (the
recipes' default, ``recipes.last_layers``: a shorter backward pass; every layer measured ~25 s
a step on the shared core, which put the sweep alone past the time budget), batch 8, a
constant learning rate without warmup, fp32 on one CPU core; a pass over the 162 train clips
is ``ceil(162 / 8) = 21`` optimizer steps. Under a constant rate the first pass of a 3-pass
run is the 1-pass run (same seed, same data order, same rate), so the sweep trains one
3-pass run per learning rate and reads its 1-pass point from the adapter saved at step 21
(``adapter-p1/``); a chosen 1-pass setting trains seeds 1 and 2 for 21 steps.

Evaluation (every play): the flat prompt, greedy, at most 64 new tokens
(``affectgym.train.heldout.HeldOutEvaluator``: the env's parser and scorer); an unanswered
clip counts as wrong.

Choice rule (fixed before any run was trained; amended once, after the first run's step time
was measured and before any validation score was seen, to fit ~70 minutes of one shared core):

1. ``sft-bare``: sweep the learning rate in {1e-4, 3e-4} x passes over the train split in
   {1, 3}, seed 0, each scored on the **validation** split (24 clips).
2. Choose the setting with the best validation accuracy; ties go to fewer passes, then the
   lower learning rate.
3. ``sft-rationale`` gets no sweep of its own (the time: ~15 s a step, so two 3-pass runs per
   arm would take the whole budget): it trains with ``sft-bare``'s chosen setting; its
   seed-0 validation score is reported, used for no choice.
4. Train the chosen setting with seeds 0, 1, 2 (``sft-bare``'s seed 0 is the sweep's run)
   and play the **eval** split once per seed. The base model plays validation and eval once
   (greedy: the same on every seed).
   Order of the work (the time budget may stop it; what did not run is listed as
   unfinished): the sweep, the base model, ``sft-bare`` seed 0 on eval, ``sft-rationale``
   seed 0 (validation, eval), then seeds 1 and 2 of ``sft-bare``, then of ``sft-rationale``.
5. Optional, time allowing (``--full``): ``sft-bare`` on the ``full`` prompt form with the
   compact arm's chosen setting, no new sweep, seeds 0-2, eval once per seed.

Reported on eval: accuracy with a 95% interval (hierarchical bootstrap over seeds and line
groups, :mod:`affectgym.eval.stats`), the answered share, pivot lines with both deliveries
right (``stages.pivot_lines_right``), the share of "Yes" (sarcastic) answers, and the paired
differences with the best single cue (``stages.best_single_cue``) and with the base model,
each with McNemar's exact p.

Every held-out reply goes to ``benchmarks/results/sarcasm_sft_samples.jsonl`` (arm, form,
setting, seed, split, scenario id, gold, reply, answer, correct), the summary to
``benchmarks/results/sarcasm_sft.json`` and ``.md``. Runs live in ``runs/sarcasm_sft/``
(each play cached as JSON under ``plays/``); a rerun skips finished training runs and plays,
and continues an interrupted training run from its last checkpoint. ``--report-only``
rebuilds the markdown from the JSON.

Usage: ``taskset -c 1 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/bench_sarcasm_sft.py
[--arms sft-bare sft-rationale] [--full] [--max-runs N] [--threads 1]``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

from stages import (
    best_single_cue,
    done,
    estimate_cell,
    load_policy,
    pivot_lines_right,
    rerun_options,
    sarcasm_env,
    sarcasm_form,
    use_threads,
)

from affectgym.eval.stats import (
    Observation,
    format_p_value,
    hierarchical_bootstrap,
    mcnemar_counts,
    mcnemar_exact_p,
    method_text,
    on_every_seed,
    paired_difference,
)
from affectgym.train.recipes import SARCASM_ENV_ID, last_layers

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SUMMARY_FILE = RESULTS / "sarcasm_sft.json"
MARKDOWN_FILE = RESULTS / "sarcasm_sft.md"
SAMPLES_FILE = RESULTS / "sarcasm_sft_samples.jsonl"
PROBE_FILE = RESULTS / "sarcasm_probe.json"
DATA_REPORT = RESULTS / "data_report_sarcasm_v2.json"
WORK = ROOT / "runs" / "sarcasm_sft"
MODEL = "smollm2-135m"
ARMS = ("sft-bare", "sft-rationale")
LRS = (1e-4, 3e-4)
PASSES = (1, 3)
SEEDS = (0, 1, 2)
BATCH = 8
LORA = {"lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "lora_layers": last_layers(MODEL, 10)}
MAX_NEW_TOKENS = 64
GROUPS = "line groups"
RULE = ("sft-bare, LoRA r=16 on the last 10 layers, batch 8, constant rate, seed 0: learning rate in {1e-4, 3e-4} x "
        "passes over train in {1, 3}, each scored on validation (flat, greedy, unanswered = wrong); choose the best "
        "validation accuracy (ties: fewer passes, then the lower learning rate); sft-rationale trains with that setting "
        "(no sweep of its own, for time); train it with seeds 0, 1, 2 and play eval once per seed")
#: The arms with a sweep of their own; the others train with the first swept arm's chosen setting.
SWEPT = ("sft-bare",)
#: Answer words of the yes/no format (the env's parser reads the first of them): none may precede the answer.
ANSWER_WORDS = re.compile(r"\b(yes|no|sarcastic|sincere)\b", re.IGNORECASE)
VERDICT = {"sarcastic": "the way this speaker sounds when mocking", "sincere": "the way this speaker sounds when meaning it"}


def delivery_cues(prompt_text: str) -> tuple[str, list[tuple[str, str]]]:
    """The band words the compact prompt shows: ``("speaker" | "corpus", [(cue, word), ...])``.

    >>> delivery_cues("... Delivery vs corpus (x): tempo fast, pauses few. Vs speaker Al's own baseline (3 clips): "
    ...               "pitch range wide, tempo slow.")
    ('speaker', [('pitch range', 'wide'), ('tempo', 'slow')])
    """
    found = re.search(r"Vs speaker .*?'s own baseline \([^)]*\): ([^.]*)\.", prompt_text)
    scope = "speaker"
    if not found:
        found, scope = re.search(r"Delivery vs [^:]*: ([^.]*)\.", prompt_text), "corpus"
    if not found or found.group(1) == "no cue measured":
        return scope, []
    return scope, [tuple(part.strip().rsplit(" ", 1)) for part in found.group(1).split(",")]  # type: ignore[misc]


def rationale(clip: Any, env: Any) -> str:
    """The rationale demonstration: the clip's own band words (against the speaker where its prompt has them), then the gold label.

    Built from the clip's flat prompt alone plus its label, so it cites only cues that prompt shows.
    """
    prompt = "\n".join(message["content"] for message in env.flat_prompt(clip))
    scope, cues = delivery_cues(prompt)
    answer = env.answer_text(clip.label)
    if not cues:
        return f"The delivery was not measured, so only the words can decide. {answer}"
    parts = [f"the {name} is {word}" if k == 0 else f"the {name} {word}" for k, (name, word) in enumerate(cues)]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    against = "Against this speaker's usual delivery" if scope == "speaker" else "Against typical speech"
    return f"{against} {listed}: {VERDICT[clip.label]}. {answer}"


def write_rationale_demos(form: str) -> Path:
    """The rationale demonstrations as an ``affectgym eval``-style folder of train-split episodes (written once)."""
    from affectgym.eval.results import write_json

    folder = WORK / f"demos-rationale-{form}"
    env = sarcasm_env(form, "train")
    records = []
    for clip in env.scenarios:
        reply = rationale(clip, env)
        before = reply[: reply.rfind(" ")]
        if ANSWER_WORDS.search(before):
            raise ValueError(f"{clip.id}: the rationale names an answer word before its answer: {reply!r}")
        answer, _ = env.parse_final(reply)
        if not answer or answer["label"] != clip.label:
            raise ValueError(f"{clip.id}: the rationale does not parse as its gold label: {reply!r}")
        messages = [*(dict(m) for m in env.flat_prompt(clip)), {"role": "assistant", "content": reply}]
        records.append({"scenario_id": clip.id, "rollout": 0, "messages": messages, "terminated": True, "reward": 1.0,
                        "error": None, "outcome": {"prediction": clip.label, "label": clip.label, "correct": True}})
    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    path = folder / "results.jsonl"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        write_json(folder / "metadata.json", {"env_id": SARCASM_ENV_ID, "split": "train", "env_kwargs": sarcasm_form(form),
                                              "agent": "bench_sarcasm_sft.rationale (gold label, not played)"})
    return folder


def tool_free_demonstrations() -> None:
    """Give the run's demonstrations no tool schemas (see the module docstring): the flat prompt has none."""
    import affectgym.train.sft as sft

    original = getattr(sft.demonstrations, "__wrapped__", sft.demonstrations)

    def demonstrations(config: Any) -> tuple[list[dict[str, Any]], dict[str, int]]:
        rows, counts = original(config)
        return [{**row, "tools": json.dumps([])} for row in rows], counts

    demonstrations.__wrapped__ = original  # type: ignore[attr-defined]
    sft.demonstrations = demonstrations


def setting_name(lr: float, passes: int) -> str:
    return f"lr{lr:g}-p{passes}"


def run_dir(arm: str, form: str, lr: float, passes: int, seed: int) -> Path:
    """The folder of a run trained for ``passes`` passes."""
    return WORK / f"{arm}-{form}-{setting_name(lr, passes)}-seed{seed}"


def adapter_at(arm: str, form: str, lr: float, passes: int, seed: int) -> tuple[Path, Path, int]:
    """(the run that holds the adapter after ``passes`` passes, that adapter, the run's passes): seed 0 of the
    compact form reads the sweep's 3-pass run."""
    trained = max(PASSES) if seed == 0 and form == "compact" and arm in SWEPT else passes
    out = run_dir(arm, form, lr, trained, seed)
    return out, out / ("adapter" if passes == trained else f"adapter-p{passes}"), trained


def steps_per_pass(form: str) -> int:
    return math.ceil(train_clips(form) / BATCH)


def snapshot_callback(out: Path, form: str, passes: int) -> Any:
    """Save the adapter after each earlier pass of the sweep (``adapter-p<k>/``), with the seconds it took."""
    from transformers import TrainerCallback

    per_pass = steps_per_pass(form)
    start_s = time.perf_counter()

    class Snapshot(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            done_passes, rest = divmod(state.global_step, per_pass)
            if rest == 0 and 0 < done_passes < passes and not (out / f"adapter-p{done_passes}").is_dir():
                partial = out / f"adapter-p{done_passes}.partial"
                kwargs["model"].save_pretrained(str(partial))
                (partial / "snapshot.json").write_text(json.dumps({
                    "step": state.global_step, "seconds_since_start_this_process": round(time.perf_counter() - start_s, 1)}))
                partial.replace(out / f"adapter-p{done_passes}")

    return Snapshot()


def train_clips(form: str) -> int:
    return len(sarcasm_env(form, "train").scenarios)


def config(arm: str, form: str, lr: float, passes: int, seed: int) -> Any:
    from affectgym.train.config import TrainConfig

    arm_options = {"references": True} if arm == "sft-bare" else {"demos": [str(write_rationale_demos(form))]}
    return TrainConfig(env_id=SARCASM_ENV_ID, algo="sft", model=MODEL, max_steps=passes * steps_per_pass(form),
                       batch_size=BATCH, learning_rate=lr, lr_scheduler="constant", warmup_steps=0, **LORA, eval_episodes=0, eval_max_new_tokens=MAX_NEW_TOKENS,
                       env_kwargs=sarcasm_form(form), seed=seed, output_dir=str(run_dir(arm, form, lr, passes, seed)),
                       **arm_options)


def train(arm: str, form: str, lr: float, passes: int, seed: int) -> dict[str, Any]:
    """Train one run (skipped when done, continued from its checkpoint when interrupted); its summary."""
    from affectgym.train.sft import train_sft

    out = run_dir(arm, form, lr, passes, seed)
    if not done(out):
        print(f"{out.name}: training ...", flush=True)
        start_s = time.perf_counter()
        tool_free_demonstrations()
        train_sft(config(arm, form, lr, passes, seed), gpu=False, callbacks=[snapshot_callback(out, form, passes)],
                  **rerun_options(out))
        print(f"{out.name}: trained in {(time.perf_counter() - start_s) / 60:.1f} min", flush=True)
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def play_path(name: str, split: str) -> Path:
    return WORK / "plays" / f"{name}-{split}.json"


def play(name: str, form: str, split: str, adapter: Path | None) -> dict[str, Any]:
    """One greedy play of ``split`` (cached): the base model, or a run's adapter merged."""
    from affectgym.train.heldout import HeldOutEvaluator

    path = play_path(name, split)
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    print(f"{name}: playing {split} ...", flush=True)
    model, tokenizer = load_policy(MODEL, adapter)
    evaluator = HeldOutEvaluator(SARCASM_ENV_ID, sarcasm_form(form), tokenizer, max_new_tokens=MAX_NEW_TOKENS, split=split)
    start_s = time.perf_counter()
    played = evaluator.evaluate(model)
    played["eval_s"] = round(time.perf_counter() - start_s, 1)
    played["pivots"] = sorted(s.id for s in evaluator.scenarios if getattr(s, "pivot", False))
    played["max_new_tokens"] = MAX_NEW_TOKENS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".partial").write_text(json.dumps(played, indent=1), encoding="utf-8")
    path.with_suffix(".partial").replace(path)
    print(f"{name}: {split} accuracy {played['accuracy']:.3f} ({played['eval_s']:.0f} s)", flush=True)
    return played


def trained_play(arm: str, form: str, lr: float, passes: int, seed: int, split: str) -> dict[str, Any]:
    """The play of the adapter after ``passes`` passes (training it first when missing)."""
    name = f"{arm}-{form}-{setting_name(lr, passes)}-seed{seed}"
    if play_path(name, split).is_file():
        return play(name, form, split, None)
    _, adapter, trained = adapter_at(arm, form, lr, passes, seed)
    train(arm, form, lr, trained, seed)
    return play(name, form, split, adapter)


def yes_share(played: dict[str, Any]) -> float:
    return sum(answer == "sarcastic" for answer in played["answers"].values()) / len(played["answers"])


def observations(plays: dict[int, dict[str, Any]], metric: str) -> list[Observation]:
    found: list[Observation] = []
    for seed, p in sorted(plays.items()):
        clips = sorted(p["correct"])
        if metric == "accuracy":
            found += [Observation(seed, c, p["groups"][c], float(p["correct"][c])) for c in clips]
        elif metric == "answered":
            found += [Observation(seed, c, p["groups"][c], float(p["answers"][c] is not None)) for c in clips]
        else:  # pivot lines both right
            found += pivot_lines_right((seed, p["groups"][c], p["correct"][c]) for c in clips if c in p["pivots"])
    return found


def versus(reference: list[Observation], mine: list[Observation]) -> dict[str, Any]:
    only_theirs, only_mine = mcnemar_counts(reference, mine)
    return {**paired_difference(reference, mine).to_dict(),
            "mcnemar": {"only_reference": only_theirs, "only_this": only_mine, "p": mcnemar_exact_p(only_theirs, only_mine)}}


def arm_entry(plays: dict[int, dict[str, Any]], base: dict[str, Any] | None) -> dict[str, Any]:
    """An arm's eval plays: accuracy, answered, pivot lines both right, yes share, vs the best cue and the base model."""
    seeds = sorted(plays)
    mine = observations(plays, "accuracy")
    lines = observations(plays, "pivot")
    entry: dict[str, Any] = {
        "seeds": seeds, "clips": len(next(iter(plays.values()))["correct"]),
        "accuracy": hierarchical_bootstrap(mine).to_dict(),
        "answered": hierarchical_bootstrap(observations(plays, "answered")).to_dict(),
        "accuracy_per_seed": {str(s): plays[s]["accuracy"] for s in seeds},
        "yes_share_per_seed": {str(s): yes_share(plays[s]) for s in seeds},
        "yes_share": sum(yes_share(plays[s]) for s in seeds) / len(seeds),
        "eval_s_per_seed": {str(s): plays[s].get("eval_s") for s in seeds},
    }
    if lines:
        entry["pivot_lines_both_right"] = {**hierarchical_bootstrap(lines).to_dict(), "lines": len(lines) // len(seeds),
                                           "both_right_mean": sum(o.value for o in lines) / len(seeds)}
    first = plays[seeds[0]]
    rule = best_single_cue(DATA_REPORT, {c: (first["groups"][c], first["labels"][c]) for c in first["correct"]})
    if rule:
        described, cue = rule
        entry["vs_best_single_cue"] = versus(on_every_seed(cue, seeds), mine)
    if base is not None:
        entry["vs_base"] = versus(on_every_seed(observations({0: base}, "accuracy"), seeds), mine)
    return entry


def sweep_row(arm: str, form: str, lr: float, passes: int, played: dict[str, Any]) -> dict[str, Any]:
    out, adapter, _ = adapter_at(arm, form, lr, passes, 0)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8")) if done(out) else {}
    history = json.loads((out / "log_history.json").read_text(encoding="utf-8")) if done(out) else []
    step = passes * steps_per_pass(form)
    losses = [r["loss"] for r in history if "loss" in r and r.get("step", 0) <= step]
    snapshot = adapter / "snapshot.json"
    train_s = (json.loads(snapshot.read_text())["seconds_since_start_this_process"] if snapshot.is_file()
               else summary.get("train_s"))
    return {"arm": arm, "form": form, "learning_rate": lr, "passes": passes, "steps": step,
            "validation_accuracy": played["accuracy"], "validation_answered": played["answered_rate"],
            "validation_yes_share": yes_share(played), "train_s": train_s, "run": out.name, "adapter": adapter.name,
            "last_loss": losses[-1] if losses else None,
            "mean_loss_last_pass": (sum(losses[-steps_per_pass(form):]) / len(losses[-steps_per_pass(form):]))
            if losses else None,
            "validation_eval_s": played.get("eval_s")}


def choose(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule: the best validation accuracy; ties to fewer passes, then the lower learning rate."""
    return min(rows, key=lambda r: (-r["validation_accuracy"], r["passes"], r["learning_rate"]))


class Budget:
    """Stops the benchmark after ``max_runs`` training runs of this process (``None``: no limit)."""

    def __init__(self, max_runs: int | None) -> None:
        self.max_runs, self.used = max_runs, 0

    def allow(self, arm: str, form: str, lr: float, passes: int, seed: int) -> bool:
        if done(run_dir(arm, form, lr, passes, seed)):
            return True
        if self.max_runs is not None and self.used >= self.max_runs:
            return False
        self.used += 1
        return True


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    """Run what is missing (as far as the budget allows, in the docstring's order) and summarise every play there is."""
    budget = Budget(args.max_runs)
    form = "compact"
    summary: dict[str, Any] = {
        "benchmark": "bench_sarcasm_sft", "rung": "supervised fine-tuning (LoRA) on the train labels",
        "env_id": SARCASM_ENV_ID, "env_kwargs": {f: sarcasm_form(f) for f in ("compact", "full")}, "model": MODEL,
        "corpus": "embedded v2 (affectgym/data/speech_v2)", "rule": RULE, "chosen_on": "validation",
        "training": {"batch_size": BATCH, **LORA, "lora_target_modules": "auto (q_proj, k_proj, v_proj, o_proj)",
                     "lr_scheduler": "constant", "warmup_steps": 0, "precision": "fp32, CPU, one shared core",
                     "steps_per_pass": steps_per_pass(form),
                     "sweep_runs": "one 3-pass run per learning rate; the 1-pass point is its step-21 adapter"},
        "decoding": f"flat prompt, greedy, at most {MAX_NEW_TOKENS} new tokens; unanswered = wrong",
        "intervals": method_text(GROUPS, mcnemar=True), "sweep": [], "chosen": {}, "eval": {}, "unfinished": []}
    complete: dict[str, dict[str, Any]] = {}
    for arm in [a for a in args.arms if a in SWEPT]:  # 1. the sweep
        rows = []
        for lr in LRS:
            if not budget.allow(arm, form, lr, max(PASSES), 0):
                summary["unfinished"] += [f"{arm} {form} {setting_name(lr, p)} seed 0 (sweep)" for p in PASSES]
                continue
            for passes in PASSES:
                rows.append(sweep_row(arm, form, lr, passes, trained_play(arm, form, lr, passes, 0, "validation")))
                write(summary | {"sweep": summary["sweep"] + rows})
        summary["sweep"] += rows
        if len(rows) == len(LRS) * len(PASSES):
            chosen = choose(rows)
            complete[arm] = chosen
            summary["chosen"][arm] = {"learning_rate": chosen["learning_rate"], "passes": chosen["passes"],
                                      "validation_accuracy": chosen["validation_accuracy"],
                                      "validation_ties_at_best": sum(r["validation_accuracy"] == chosen["validation_accuracy"]
                                                                     for r in rows)}
    base: dict[str, Any] = {}
    if not args.no_base:  # 2. the base model
        base = {split: play(f"base-{form}", form, split, None) for split in ("validation", "eval")}
        summary["base"] = {"validation_accuracy": base["validation"]["accuracy"],
                           "validation_yes_share": yes_share(base["validation"]),
                           "eval": arm_entry({0: base["eval"]}, None)}
        write(summary)
    if SWEPT[0] in complete:
        for arm in args.arms:
            if arm not in SWEPT:
                complete[arm] = complete[SWEPT[0]]
                summary["chosen"][arm] = {**summary["chosen"][SWEPT[0]], "from": SWEPT[0]}
    targets = [(arm, form) for arm in complete] + ([("sft-bare", "full")] if args.full and "sft-bare" in complete else [])
    plays: dict[tuple[str, str], dict[int, dict[str, Any]]] = {target: {} for target in targets}
    order = [(0, t) for t in targets] + [(seed, t) for t in targets for seed in SEEDS[1:]]
    for seed, (arm, played_form) in order:  # 3. eval plays: seed 0 of every arm, then the other seeds arm by arm
        chosen = complete[arm]
        lr, passes = chosen["learning_rate"], chosen["passes"]
        if budget.allow(arm, played_form, lr, adapter_at(arm, played_form, lr, passes, seed)[2], seed):
            if seed == 0 and arm not in SWEPT and played_form == form:
                summary["chosen"][arm]["own_validation_accuracy_for_record_only"] = trained_play(
                    arm, played_form, lr, passes, seed, "validation")["accuracy"]
            plays[(arm, played_form)][seed] = trained_play(arm, played_form, lr, passes, seed, "eval")
        else:
            summary["unfinished"].append(f"{arm} {played_form} {setting_name(lr, passes)} seed {seed} (eval)")
            continue
        summary["eval"][arm if played_form == form else f"{arm} ({played_form})"] = eval_entry(
            arm, played_form, lr, passes, plays[(arm, played_form)], base, args)
        write(summary)
    return summary


def eval_entry(arm: str, form: str, lr: float, passes: int, plays: dict[int, dict[str, Any]], base: dict[str, Any],
               args: argparse.Namespace) -> dict[str, Any]:
    """An arm's eval entry, with its setting, its training times and (for another form) its own base model."""
    entry = arm_entry(plays, base.get("eval") if form == "compact" else None)
    entry |= {"form": form, "learning_rate": lr, "passes": passes}
    if form != "compact" and not args.no_base:
        base_form = play(f"base-{form}", form, "eval", None)
        entry["vs_base"] = versus(on_every_seed(observations({0: base_form}, "accuracy"), sorted(plays)),
                                  observations(plays, "accuracy"))
        entry["base_accuracy_this_form"] = base_form["accuracy"]
    times = {}
    for seed in plays:
        out, adapter, _ = adapter_at(arm, form, lr, passes, seed)
        snapshot = adapter / "snapshot.json"
        if snapshot.is_file():
            times[str(seed)] = json.loads(snapshot.read_text())["seconds_since_start_this_process"]
        elif done(out):
            times[str(seed)] = json.loads((out / "summary.json").read_text(encoding="utf-8"))["train_s"]
    entry["train_s_per_seed"] = times
    return entry


def probe_rung() -> dict[str, Any] | None:
    if not PROBE_FILE.is_file():
        return None
    probe = json.loads(PROBE_FILE.read_text(encoding="utf-8"))
    chosen, played = probe["chosen"], probe["eval"]
    return {"name": f"linear probe of frozen {probe['model']} ({chosen['form']}, hidden state {chosen['hidden_state']}, "
                    f"{chosen['pooling']}, C={chosen['C']:g})", "accuracy": played["accuracy"],
            "vs_best_single_cue": played.get("best_single_cue", {}).get("probe_minus_cue"),
            "best_single_cue": {k: played["best_single_cue"][k] for k in ("name", "rule", "accuracy_here")}
            if played.get("best_single_cue") else None}


def write_samples() -> int:
    """Every cached play's replies, one line each (rewritten whole from the play caches)."""
    rows = []
    for path in sorted((WORK / "plays").glob("*.json")):
        played = json.loads(path.read_text(encoding="utf-8"))
        name = path.stem.rsplit("-", 1)[0]
        found = re.fullmatch(r"(sft-bare|sft-rationale)-(compact|full)-(lr[^-]+-p\d+)-seed(\d+)", name)
        arm, form, setting, seed = (found.groups() if found else ("base", name.split("-", 1)[1], None, None))
        for clip in sorted(played["replies"]):
            rows.append({"arm": arm, "form": form, "setting": setting, "seed": int(seed) if seed is not None else None,
                         "split": played["split"], "scenario_id": clip, "gold": played["labels"][clip],
                         "reply": played["replies"][clip], "answer": played["answers"][clip],
                         "correct": played["correct"][clip]})
    SAMPLES_FILE.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def write(summary: dict[str, Any]) -> None:
    summary = {**summary, "probe": probe_rung(), "samples": str(SAMPLES_FILE.relative_to(ROOT)),
               "n_samples": write_samples()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    SUMMARY_FILE.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    MARKDOWN_FILE.write_text(markdown_table(summary) + "\n", encoding="utf-8")


def markdown_table(summary: dict[str, Any]) -> str:
    """The rung's tables (eval, then the validation sweep), rebuilt from the JSON alone."""
    lines = ["| rung | chosen on | seeds | eval accuracy (95% CI) | answered | pivot lines both right | \"Yes\" share | "
             "vs best single cue | vs base |", "|---|---|---|---|---|---|---|---|---|"]
    probe = summary.get("probe")
    if probe and probe.get("best_single_cue"):
        cue = probe["best_single_cue"]
        lines.append(f"| best single cue ({cue['rule']}) | train (fitted), then the best single-cue rung on eval | 1 | "
                     f"{estimate_cell(cue['accuracy_here'])} | 1.000 | — | — | — | — |")
    if probe:
        lines.append(f"| {probe['name']} (sarcasm_probe.json) | validation | 1 | {estimate_cell(probe['accuracy'])} | 1.000 | — | — | "
                     f"{estimate_cell(probe.get('vs_best_single_cue'))} | — |")
    base = summary.get("base", {}).get("eval")
    rows = ([("base model, untrained (compact)", "—", base)] if base else []) + [
        (f"{name}: lr {entry['learning_rate']:g}, {entry['passes']} pass{'es' if entry['passes'] > 1 else ''}",
         ("validation" if name in SWEPT else f"validation ({SWEPT[0]}'s sweep)") if entry["form"] == "compact"
         else "validation (compact arm's setting)", entry)
        for name, entry in summary.get("eval", {}).items()]
    for name, chosen_on, entry in rows:
        both = entry.get("pivot_lines_both_right")
        lines.append(f"| {name} | {chosen_on} | {len(entry['seeds'])} | {estimate_cell(entry['accuracy'])} | {estimate_cell(entry['answered'])} | "
                     f"{estimate_cell(both)} | {entry['yes_share']:.2f} | {estimate_cell(entry.get('vs_best_single_cue'))} | "
                     f"{estimate_cell(entry.get('vs_base'))} |")
    lines += ["", f"Eval: {base['clips'] if base else '?'} clips (each line said both ways); {summary['intervals']}; "
              f"differences are paired by (seed, clip), the base model and the cue given every seed. {summary['decoding']}."]
    for name, entry in summary.get("eval", {}).items():
        tests = [f"vs {label} McNemar p {format_p_value(entry[key]['mcnemar']['p'])} "
                 f"({entry[key]['mcnemar']['only_reference']} only {label}, {entry[key]['mcnemar']['only_this']} only {name})"
                 for key, label in (("vs_best_single_cue", "cue"), ("vs_base", "base")) if key in entry]
        if tests:
            lines.append(f"{name}: " + "; ".join(tests) + ".")
    if summary.get("sweep"):
        lines += ["", "Validation sweep (seed 0; 24 clips):", "",
                  "| arm | lr | passes | steps | validation accuracy | answered | \"Yes\" share | train s | last loss |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in summary["sweep"]:
            chosen = summary.get("chosen", {}).get(r["arm"], {})
            mark = " (chosen)" if (chosen.get("learning_rate"), chosen.get("passes")) == (r["learning_rate"], r["passes"]) else ""
            last = f"{r['last_loss']:.3f}" if r.get("last_loss") is not None else "n/a"
            lines.append(f"| {r['arm']}{mark} | {r['learning_rate']:g} | {r['passes']} | {r['steps']} | "
                         f"{r['validation_accuracy']:.3f} | {r['validation_answered']:.3f} | {r['validation_yes_share']:.2f} | "
                         f"{r['train_s']:.0f} | {last} |")
    if summary.get("unfinished"):
        lines += ["", "Not run (time budget): " + "; ".join(summary["unfinished"]) + "."]
    lines += ["", f"Choice rule: {summary['rule']}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--full", action="store_true", help="also sft-bare on the full form with the chosen setting")
    parser.add_argument("--max-runs", type=int, default=None, help="train at most N new runs in this process")
    parser.add_argument("--no-base", action="store_true", help="skip the base model's plays")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 when sharing the machine)")
    parser.add_argument("--report-only", action="store_true", help="rebuild the markdown from the JSON")
    args = parser.parse_args(argv)
    if args.report_only:
        MARKDOWN_FILE.write_text(markdown_table(json.loads(SUMMARY_FILE.read_text(encoding="utf-8"))) + "\n", encoding="utf-8")
        print(MARKDOWN_FILE.read_text(encoding="utf-8"))
        return 0
    use_threads(args.threads)
    start_s = time.perf_counter()
    summary = benchmark(args)
    summary["seconds_this_run"] = round(time.perf_counter() - start_s, 1)
    write(summary)
    print("\n" + MARKDOWN_FILE.read_text(encoding="utf-8"))
    print(f"results: {SUMMARY_FILE.relative_to(ROOT)}, {MARKDOWN_FILE.relative_to(ROOT)}, {SAMPLES_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
