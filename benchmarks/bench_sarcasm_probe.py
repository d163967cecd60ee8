"""The Sarcasm ladder, first rung: what a linear probe of the frozen SmolLM2-135M reads of sarcasm (corpus v2).

For each prompt form of Sarcasm-v0's short form, ``compact`` (the transcript and the
one-line delivery summary in band words, ~170 tokens) and ``full`` (every tool's output,
numbers included, ~630 tokens), and each split (``train``, ``validation``, ``eval``), the
frozen SmolLM2-135M-Instruct reads the env's flat prompt of the answer turn (what the agent
sees before answering: the tokenizer's chat template with the generation prompt, as
``bench_layer_probe.py`` builds it) once per clip, and four feature vectors are kept: at
hidden state 15 (the middle of the 30 layers; index 0 is the embeddings) and hidden state 30
(the last, after the final norm), the last token's state and the mean over every prompt
token. They are cached per (form, split) in ``runs/sarcasm_probe/<form>-<split>.npz``
(keyed by the model and a fingerprint of the prompts), so a rerun does not recompute them.

Choice rule (fixed before any probe was fitted):

1. For each configuration (form in {compact, full}, hidden state in {15, 30}, pooling in
   {last token, mean}, C in {0.001, 0.01, 0.1, 1, 10}; 40 in all), fit
   ``StandardScaler`` + scikit-learn ``LogisticRegression(C=C)`` on the **train** split
   only (labels: sarcastic vs sincere).
2. Score every configuration on the **validation** split; choose the one with the best
   validation accuracy. Ties go to the smaller C, then compact before full, then the
   earlier hidden state, then last token before mean.
3. Play the **eval** split once with that frozen choice (the probe fitted on train).

Every configuration's validation accuracy is reported; every configuration's eval accuracy
is also written, for the record only, marked as used for no choice.

For the chosen probe on eval: the accuracy with a 95% interval (the hierarchical bootstrap
of :mod:`affectgym.eval.stats` over line groups: both deliveries of a line resampled
together), the pivot lines with both deliveries right (``stages.pivot_lines_right``, as
``bench_learning.py`` counts them), and the paired difference with the best single-cue rule
of ``affectgym data report`` (``benchmarks/results/data_report_sarcasm_v2.json``, its
clip-by-clip predictions on eval; ``stages.best_single_cue``) with McNemar's exact p; the
report's other rungs (the depth-2 tree, the logistic regression on the 43 prosody features)
are set beside it with their own intervals.

Writes ``benchmarks/results/sarcasm_probe.json`` and ``benchmarks/results/sarcasm_probe.md``;
``--report-only`` rebuilds the markdown from the JSON.

Usage: ``taskset -c 1 env OMP_NUM_THREADS=1 python benchmarks/bench_sarcasm_probe.py
[--forms compact full] [--threads 1]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from stages import (
    best_single_cue,
    estimate_cell,
    load_policy,
    pivot_lines_right,
    sarcasm_env,
    sarcasm_form,
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
    paired_difference,
)
from affectgym.train.recipes import SARCASM_ENV_ID

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SUMMARY_FILE = RESULTS / "sarcasm_probe.json"
MARKDOWN_FILE = RESULTS / "sarcasm_probe.md"
DATA_REPORT = RESULTS / "data_report_sarcasm_v2.json"
CACHE = ROOT / "runs" / "sarcasm_probe"
MODEL = "smollm2-135m"
#: In the order of the tie-break: compact before full, last token before mean.
FORMS = ("compact", "full")
SPLITS = ("train", "validation", "eval")
POOLINGS = ("last", "mean")
CS = (0.001, 0.01, 0.1, 1.0, 10.0)
GROUPS = "line groups"
RULE = ("fit StandardScaler + LogisticRegression(C) on train only, for every (form in {compact, full}, hidden state "
        "in {middle, last}, pooling in {last token, mean}, C in {0.001, 0.01, 0.1, 1, 10}); choose the configuration "
        "with the best validation accuracy (ties: the smaller C, then compact before full, then the earlier hidden "
        "state, then last token before mean); play eval once with that frozen choice")
#: The data report's rungs set beside the probe (key -> the name the table gives it).
REPORT_RUNGS = {"tree": "depth-2 tree on the prosody features", "logistic": "logistic regression on the prosody features"}


def prompts(env: Any, tokenizer: Any) -> list[str]:
    """The answer turn's prompt of every clip: the flat prompt in the chat template, with the generation prompt."""
    return [tokenizer.apply_chat_template(env.flat_prompt(clip), tokenize=False, add_generation_prompt=True)
            for clip in env.scenarios]


def fingerprint(texts: list[str], model_path: str, layers: tuple[int, int]) -> str:
    payload = json.dumps({"model": model_path, "layers": layers, "prompts": texts})
    return hashlib.sha1(payload.encode()).hexdigest()[:12]


def feature_key(layer: int, pooling: str) -> str:
    return f"h{layer}_{pooling}"


def extract(form: str, split: str, model: Any, tokenizer: Any, model_path: str, layers: tuple[int, int]) -> dict[str, Any]:
    """The cached features of (form, split), computed (and cached) when missing or stale."""
    import numpy as np
    import torch
    from tqdm import tqdm

    env = sarcasm_env(form, split)
    texts = prompts(env, tokenizer)
    key = fingerprint(texts, model_path, layers)
    path = CACHE / f"{form}-{split}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as cached:
            if str(cached["fingerprint"]) == key:
                return {name: cached[name] for name in cached.files} | {"cached": True}
        print(f"{path.name}: stale (prompts or model changed), recomputing", flush=True)
    yes, no = (tokenizer.convert_tokens_to_ids(word) for word in ("Yes", "No"))
    states: dict[str, list[Any]] = {feature_key(layer, p): [] for layer in layers for p in POOLINGS}
    tokens, gaps = [], []
    start_s = time.perf_counter()
    for text in tqdm(texts, desc=f"{form} {split}", unit="clip"):
        ids = tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids
        with torch.inference_mode():
            output = model(ids, output_hidden_states=True)
        for layer in layers:
            hidden = output.hidden_states[layer][0]
            states[feature_key(layer, "last")].append(hidden[-1].float().numpy())
            states[feature_key(layer, "mean")].append(hidden.mean(dim=0).float().numpy())
        logits = output.logits[0, -1]
        gaps.append(float(logits[yes] - logits[no]))
        tokens.append(ids.shape[1])
    seconds = time.perf_counter() - start_s
    clips = env.scenarios
    data = {
        **{name: np.stack(rows).astype(np.float32) for name, rows in states.items()},
        "ids": np.array([clip.id for clip in clips]),
        "labels": np.array([clip.label for clip in clips]),
        "groups": np.array([str(env.split_group(clip)) for clip in clips]),
        "pivots": np.array([bool(getattr(clip, "pivot", False)) for clip in clips]),
        "tokens": np.array(tokens), "yes_no_gap": np.array(gaps),
        "seconds": np.array(seconds), "fingerprint": np.array(key),
    }
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.npz")
    np.savez(partial, **data)
    partial.replace(path)
    return data | {"cached": False}


def leakage_checks(features: dict[tuple[str, str], dict[str, Any]], tokenizer: Any) -> dict[str, Any]:
    """Splits disjoint by line and by clip; the label words as often in every prompt (the system message's)."""
    import re

    checks: dict[str, Any] = {}
    for form in {f for f, _ in features}:
        parts = {split: features[(form, split)] for split in SPLITS if (form, split) in features}
        if "train" in parts:
            train_groups, train_ids = set(parts["train"]["groups"]), set(parts["train"]["ids"])
            for split in ("validation", "eval"):
                if split in parts:
                    checks[f"{form}_{split}_lines_in_train"] = len(set(parts[split]["groups"]) & train_groups)
                    checks[f"{form}_{split}_clips_in_train"] = len(set(parts[split]["ids"]) & train_ids)
        counts = set()
        for split in parts:
            for text in prompts(sarcasm_env(form, split), tokenizer):
                counts.add((len(re.findall(r"sarcas", text, re.I)), len(re.findall(r"sincer", text, re.I))))
        checks[f"{form}_label_word_counts_per_prompt"] = sorted(counts)
    return checks


def fit_all(features: dict[tuple[str, str], dict[str, Any]], layers: tuple[int, int]) -> tuple[list[dict[str, Any]], dict]:
    """Every configuration fitted on train and scored on validation (and, for the record, eval); the eval predictions."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rows, predictions = [], {}
    for form in FORMS:
        if not all((form, split) in features for split in SPLITS):
            continue
        train, validation, held = (features[(form, split)] for split in SPLITS)
        for layer in layers:
            for pooling in POOLINGS:
                name = feature_key(layer, pooling)
                for c in CS:
                    probe = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=20_000))
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always", ConvergenceWarning)
                        probe.fit(train[name], train["labels"])
                    eval_pred = probe.predict(held[name])
                    predictions[(form, layer, pooling, c)] = eval_pred
                    rows.append({"form": form, "hidden_state": layer, "pooling": pooling, "C": c,
                                 "train_accuracy": float(probe.score(train[name], train["labels"])),
                                 "validation_accuracy": float(probe.score(validation[name], validation["labels"])),
                                 "eval_accuracy_for_record_only": float((eval_pred == held["labels"]).mean()),
                                 "converged": not any(issubclass(w.category, ConvergenceWarning) for w in caught)})
    return rows, predictions


def choose(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule: the best validation accuracy; ties to the smaller C, compact, the earlier layer, the last token."""
    return min(rows, key=lambda r: (-r["validation_accuracy"], r["C"], FORMS.index(r["form"]), r["hidden_state"],
                                    POOLINGS.index(r["pooling"])))


def eval_summary(held: dict[str, Any], predicted: Any) -> dict[str, Any]:
    """The chosen probe on eval: accuracy, pivot accuracy, pivot lines both right, vs the data report's rungs."""
    ids, labels, groups, pivots = (list(held[k]) for k in ("ids", "labels", "groups", "pivots"))
    correct = {clip: bool(p == y) for clip, p, y in zip(ids, predicted, labels, strict=True)}
    group_of = dict(zip(ids, groups, strict=True))
    mine = [Observation(0, clip, group_of[clip], float(correct[clip])) for clip in sorted(ids)]
    pivot_clips = [clip for clip, pivot in zip(ids, pivots, strict=True) if pivot]
    out: dict[str, Any] = {
        "clips": len(ids), "line_groups": len(set(groups)), "pivot_clips": len(pivot_clips),
        "accuracy": hierarchical_bootstrap(mine).to_dict(),
        "predictions": {clip: str(p) for clip, p in zip(ids, predicted, strict=True)},
    }
    if pivot_clips:
        out["pivot_accuracy"] = hierarchical_bootstrap(
            [Observation(0, c, group_of[c], float(correct[c])) for c in sorted(pivot_clips)]).to_dict()
        lines = pivot_lines_right((0, group_of[c], correct[c]) for c in pivot_clips)
        if lines:
            out["pivot_lines_both_right"] = {**hierarchical_bootstrap(lines).to_dict(),
                                             "lines": len(lines), "both_right": int(sum(o.value for o in lines))}
    clips = {clip: (group_of[clip], label) for clip, label in zip(ids, labels, strict=True)}
    rule = best_single_cue(DATA_REPORT, clips)
    if rule:
        described, cue = rule
        report = json.loads(DATA_REPORT.read_text(encoding="utf-8"))
        best = next(r for r in report["rungs"] if r["name"] == described["name"])
        missing = sorted(set(ids) - set(best["predictions"]))
        only_cue, only_probe = mcnemar_counts(cue, mine)
        out["best_single_cue"] = {
            **described, "clips_without_prediction": len(missing),
            "note": "the best of the data report's single-cue rungs by eval accuracy (stages.best_single_cue): "
                    "each rung fitted on train, the pick among them made on eval",
            "accuracy_here": hierarchical_bootstrap(cue).to_dict(),
            "probe_minus_cue": paired_difference(cue, mine).to_dict(),
            "mcnemar": {"only_cue": only_cue, "only_probe": only_probe, "p": mcnemar_exact_p(only_cue, only_probe)}}
        out["report_rungs"] = {}
        for rung in report["rungs"]:
            if rung["key"] in REPORT_RUNGS and rung.get("predictions"):
                theirs = [Observation(0, c, group_of[c], float(rung["predictions"].get(c) == clips[c][1])) for c in sorted(ids)]
                out["report_rungs"][rung["key"]] = {
                    "name": rung["name"], "accuracy": hierarchical_bootstrap(theirs).to_dict(),
                    "minus_cue": paired_difference(cue, theirs).to_dict(),
                    "probe_minus_this": paired_difference(theirs, mine).to_dict()}
    return out


def markdown_table(summary: dict[str, Any]) -> str:
    """The small table of the ladder on eval, rebuilt from the JSON alone."""
    chosen = summary.get("chosen")
    played = summary.get("eval", {})
    cue = played.get("best_single_cue")
    lines = ["| rung | split used for choice | eval accuracy (95% CI) | vs best single cue |", "|---|---|---|---|"]
    if cue:
        lines.append(f"| best single cue ({cue['rule']}) | train (fitted), then the best of the report's single-cue "
                     f"rungs on eval | {estimate_cell(cue['accuracy_here'])} | — |")
    for key, rung in played.get("report_rungs", {}).items():
        lines.append(f"| {REPORT_RUNGS.get(key, rung['name'])} | train (fitted by `affectgym data report`) | "
                     f"{estimate_cell(rung['accuracy'])} | {estimate_cell(rung['minus_cue'])} |")
    if chosen:
        name = (f"linear probe of frozen {summary['model']}: {chosen['form']} prompt, hidden state "
                f"{chosen['hidden_state']}, {'last token' if chosen['pooling'] == 'last' else 'mean-pooled'}, C={chosen['C']:g}")
        versus = estimate_cell(cue["probe_minus_cue"]) if cue else "n/a"
        lines.append(f"| {name} | validation ({summary['n_clips']['validation']} clips) | {estimate_cell(played.get('accuracy'))} | "
                     f"{versus} |")
    lines += ["", f"Eval: {played.get('clips', '?')} clips in {played.get('line_groups', '?')} line groups (each line "
              f"said both ways); {summary['intervals']}; differences are paired by clip."]
    both = played.get("pivot_lines_both_right")
    if both:
        lines.append(f"Chosen probe, pivot lines with both deliveries right: {both['both_right']} of {both['lines']} "
                     f"({estimate_cell(both)}).")
    if cue:
        lines.append("The single-cue bar is the best of the data report's one-cue rungs by their eval accuracy "
                     "(`stages.best_single_cue`, as in `bench_learning.py`): a bar picked on eval, so a generous one.")
        test = cue["mcnemar"]
        lines.append(f"Probe vs best cue, McNemar exact p {format_p_value(test['p'])} ({test['only_cue']} clips only the "
                     f"cue has right, {test['only_probe']} only the probe).")
    lines += ["", f"Choice rule: {summary['rule']}."]
    return "\n".join(lines)


def validation_table(rows: list[dict[str, Any]]) -> str:
    lines = ["form     state pooling      C    train  valid  (eval, for the record only)"]
    for r in rows:
        lines.append(f"{r['form']:8s} {r['hidden_state']:5d} {r['pooling']:7s} {r['C']:6g}  {r['train_accuracy']:.3f}  "
                     f"{r['validation_accuracy']:.3f}  ({r['eval_accuracy_for_record_only']:.3f})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forms", nargs="+", choices=FORMS, default=list(FORMS),
                        help="prompt forms to extract (the choice is made among the forms with every split cached)")
    parser.add_argument("--extract-only", action="store_true", help="cache the features and stop (no probe, no files)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 when sharing the machine)")
    parser.add_argument("--report-only", action="store_true", help="rebuild the markdown from the JSON")
    args = parser.parse_args(argv)
    if args.report_only:
        MARKDOWN_FILE.write_text(markdown_table(json.loads(SUMMARY_FILE.read_text(encoding="utf-8"))) + "\n", encoding="utf-8")
        print(MARKDOWN_FILE.read_text(encoding="utf-8"))
        return 0
    import numpy as np
    import torch

    from affectgym.models import resolve_model

    use_threads(args.threads)
    start_s = time.perf_counter()
    model_path = str(resolve_model(MODEL))
    model, tokenizer = load_policy(MODEL)
    model.eval()
    n_layers = model.config.num_hidden_layers
    layers = (n_layers // 2, n_layers)
    features: dict[tuple[str, str], dict[str, Any]] = {}
    for form in FORMS:  # a form with every split cached joins the choice even when not asked for
        for split in SPLITS:
            if form in args.forms or (CACHE / f"{form}-{split}.npz").is_file():
                features[(form, split)] = extract(form, split, model, tokenizer, model_path, layers)
    extract_s = time.perf_counter() - start_s
    if args.extract_only:
        print(f"features cached in {CACHE} ({extract_s:.0f} s)")
        return 0
    complete = [form for form in FORMS if all((form, split) in features for split in SPLITS)]
    fit_start_s = time.perf_counter()
    rows, predictions = fit_all(features, layers)
    chosen = choose(rows)
    frozen = (chosen["form"], chosen["hidden_state"], chosen["pooling"], chosen["C"])
    held = features[(chosen["form"], "eval")]
    played = eval_summary(held, predictions[frozen])  # eval played once, with the frozen choice
    fit_s = time.perf_counter() - fit_start_s
    gaps = {}
    for form in complete:
        held_form = features[(form, "eval")]
        sarcastic = held_form["labels"] == "sarcastic"
        gaps[form] = {"sarcastic": float(np.mean(held_form["yes_no_gap"][sarcastic])),
                      "sincere": float(np.mean(held_form["yes_no_gap"][~sarcastic]))}
    summary = {
        "benchmark": "bench_sarcasm_probe", "rung": "linear probe of the frozen model's hidden states",
        "env_id": SARCASM_ENV_ID, "env_kwargs": {form: sarcasm_form(form) for form in complete},
        "corpus": "embedded v2 (affectgym/data/speech_v2)", "model": MODEL, "model_path": model_path,
        "num_hidden_layers": n_layers, "hidden_states": list(layers), "poolings": list(POOLINGS), "Cs": list(CS),
        "forms": complete, "rule": RULE, "chosen_on": "validation",
        "n_clips": {split: len(features[(complete[0], split)]["ids"]) for split in SPLITS},
        "n_line_groups": {split: len(set(features[(complete[0], split)]["groups"])) for split in SPLITS},
        "prompt_tokens_mean": {form: float(np.mean(np.concatenate([features[(form, s)]["tokens"] for s in SPLITS])))
                               for form in complete},
        "chosen": chosen,
        "validation_ties_at_best": sum(r["validation_accuracy"] == chosen["validation_accuracy"] for r in rows),
        "eval": played, "intervals": method_text(GROUPS, mcnemar=True),
        "configurations": rows,
        "configurations_note": "eval_accuracy_for_record_only was used for no choice",
        "base_model_yes_minus_no_logit_gap_eval": gaps,
        "leakage_checks": leakage_checks(features, tokenizer),
        "seconds": {"extract_per_form_split_when_computed": {f"{f}-{s}": float(v["seconds"]) for (f, s), v in features.items()},
                    "extract_per_clip": {f"{f}-{s}": float(v["seconds"]) / len(v["ids"]) for (f, s), v in features.items()},
                    "this_run_extract": round(extract_s, 1), "this_run_fit_and_eval": round(fit_s, 1),
                    "this_run_total": round(time.perf_counter() - start_s, 1)},
        "cached_this_run": {f"{f}-{s}": bool(v["cached"]) for (f, s), v in features.items()},
        "torch_threads": torch.get_num_threads(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    SUMMARY_FILE.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    MARKDOWN_FILE.write_text(markdown_table(summary) + "\n", encoding="utf-8")
    print(validation_table(rows))
    print(f"\nchosen on validation: {chosen}")
    print(f"eval (played once): accuracy {Estimate.from_dict(played['accuracy']).format(groups=GROUPS)}")
    print("\n" + markdown_table(summary))
    print(f"results: {SUMMARY_FILE.relative_to(ROOT)}, {MARKDOWN_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
