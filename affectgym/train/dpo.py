"""Preference optimisation from the env's own reward (``affectgym train --algo dpo``), with TRL's ``DPOTrainer``.

Online (iterative) DPO in rounds. Each round:

1. the current policy samples ``samples_per_prompt`` replies to every train prompt (the
   env's flat prompts, at ``temperature``, at most ``max_completion_length`` tokens, ending
   at the end of the turn as an agent's message does);
2. the env scores them all with ``env.score_batch``, its one reward path (classifier,
   judge, rules, rubric), on the flat trace;
3. each prompt gives one pair, its best reply as ``chosen`` and its worst as ``rejected``,
   when the env scores the best at least ``pair_margin`` higher (:func:`preference_pairs`;
   a reply left unscored, e.g. by a judge outage, is never in a pair);
4. ``DPOTrainer`` trains the policy's LoRA adapter on the pairs for ``max_steps`` steps,
   against the round's starting policy as the reference (a fresh adapter's reference is the
   base model; an adapter's, a frozen copy of it, as TRL does for a ``PeftModel``).

The next round samples from the updated adapter. Offline pairs (``pairs``: JSONL files of
``{"prompt", "chosen", "rejected"}`` rows, the prompt a list of chat messages or a text)
train one round with no sampling.

A run writes ``config.yaml``, ``pairs/round-<r>.jsonl`` (every pair: scenario, prompt,
chosen and rejected replies with their scores and components), ``rounds/<r>/`` (each
round's adapter and log history), ``adapter/`` (the last round's), ``log_history.json``
(every round's rows, with ``round``), ``figures/dpo_loss.png``, ``summary.json`` and, with
``eval_episodes``, ``eval/`` (base vs trained, played multi-step through the eval runner).
``resume`` skips the rounds whose adapter is saved and trains a round whose pairs are
written without sampling them again (a pairs file is written whole, through a temporary
file; one that cannot be read back is named in a warning and its pairs are sampled again);
resumed with more ``rounds`` (all else the same), a run keeps the rounds it has and adds the
rest, as a longer run's first rounds are the same.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from affectgym.data.jsonl import json_lines
from affectgym.train.arguments import trainer_arguments
from affectgym.train.config import TrainConfig, config_to_yaml
from affectgym.train.plots import plot_loss_curve
from affectgym.train.policy import check_policy, has_gpu, load_policy, trainable_policy
from affectgym.train.progress import show_progress
from affectgym.train.run import finish_run
from affectgym.train.run_dir import claim_output_dir, hold_output_dir
from affectgym.train.sampling import sample_replies, scored_replies, train_prompts

logger = logging.getLogger(__name__)


class PairsError(ValueError):
    """An offline pairs file cannot be used: missing, not JSONL, or a row without its fields."""


def preference_pairs(env: Any, scenarios: Sequence[Any], prompts: Sequence[list[dict[str, str]]],
                     replies: Sequence[Sequence[str]], margin: float) -> list[dict[str, Any]]:
    """One pair per scenario whose replies the env tells apart by at least ``margin``.

    Args:
        env: The (unwrapped) env that scores, with ``score_batch`` and ``flat_trace``.
        scenarios: The train scenarios, one per prompt.
        prompts: Each scenario's prompt (chat messages).
        replies: Each scenario's sampled replies.
        margin: Least score difference between the chosen and the rejected reply.

    Returns:
        Rows of ``scenario_id``, ``prompt``, ``chosen``, ``rejected``, ``chosen_score``,
        ``rejected_score``, ``chosen_components`` and ``rejected_components``: the best and the
        worst scored reply of the scenario (the first of equals), replies left unscored excluded.
    """
    pairs = []
    for scenario, prompt, candidates in zip(scenarios, prompts, scored_replies(env, scenarios, replies), strict=True):
        if len(candidates) < 2:
            continue
        best = max(candidates, key=lambda candidate: candidate[0])
        worst = min(candidates, key=lambda candidate: candidate[0])
        if best[0] - worst[0] >= margin and best[0] > worst[0]:
            pairs.append({
                "scenario_id": scenario.id, "prompt": prompt, "chosen": best[1], "rejected": worst[1],
                "chosen_score": best[0], "rejected_score": worst[0],
                "chosen_components": best[2], "rejected_components": worst[2],
            })
    return pairs


def read_pairs(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The rows of offline pairs files.

    Raises:
        PairsError: A file is missing, a line is not a JSON object, or a row lacks a text
            ``chosen`` or ``rejected`` or a ``prompt`` (chat messages or a text).
    """
    rows: list[dict[str, Any]] = []
    for path in map(Path, paths):
        if not path.is_file():
            raise PairsError(f"--pairs {str(path)!r}: no such file; pass JSONL rows of {{prompt, chosen, rejected}}")
        for number, row in json_lines(path.read_text(encoding="utf-8"), path, PairsError):
            problem = _pair_problem(row)
            if problem:
                raise PairsError(f"{path}:{number}: {problem}; a row is {{\"prompt\": [messages] or text, "
                                 "\"chosen\": text, \"rejected\": text}")
            prompt = row["prompt"] if isinstance(row["prompt"], list) else [{"role": "user", "content": row["prompt"]}]
            rows.append({**row, "prompt": prompt})
    if not rows:
        raise PairsError(f"--pairs {[str(p) for p in paths]}: no pair in the files")
    return rows


def _pair_problem(row: Any) -> str | None:
    if not isinstance(row, dict):
        return f"a {type(row).__name__}, not an object"
    missing = [key for key in ("prompt", "chosen", "rejected") if key not in row]
    if missing:
        return f"missing {missing}"
    if not isinstance(row["chosen"], str) or not isinstance(row["rejected"], str):
        return "chosen and rejected must be texts"
    prompt = row["prompt"]
    if isinstance(prompt, str):
        return None
    if not isinstance(prompt, list) or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in prompt):
        return "prompt must be a text or a list of {role, content} messages"
    return None


def dpo_config(config: TrainConfig, output_dir: Path, *, gpu: bool) -> Any:
    """The ``trl.DPOConfig`` of a round (its checkpoints under ``output_dir/trainer``): CPU-safe without a GPU."""
    from trl import DPOConfig

    return trainer_arguments(DPOConfig, config, output_dir, gpu=gpu, beta=config.dpo_beta)


def train_dpo(config: TrainConfig, *, gpu: bool | None = None, progress: bool = False,
              overwrite: bool = False, resume: bool = False) -> dict[str, Any]:
    """Run the rounds of ``config`` and write their outputs (see the module docstring).

    Args:
        config: The run's options (``algo="dpo"``).
        gpu: Whether to use a GPU; default: when torch sees one.
        progress: Show a progress bar with the loss and the reward margin.
        overwrite: Replace an earlier run in ``config.output_dir`` (otherwise it is refused).
        resume: Continue the run in ``config.output_dir`` (same config, or more ``rounds``) at its first
            unfinished round.

    Returns:
        A summary: the pairs of every round, paths, ``train_s`` (wall seconds of sampling and
        training the rounds; a finished run resumed with more rounds adds theirs to its
        recorded seconds), first and last loss, and the held-out evaluation when ``eval_episodes > 0``.

    Raises:
        affectgym.eval.results.RunFolderLocked: Another process trains into ``config.output_dir``.
    """
    with hold_output_dir(config.output_dir):
        return _train_dpo(config, gpu=gpu, progress=progress, overwrite=overwrite, resume=resume)


def _train_dpo(config: TrainConfig, *, gpu: bool | None, progress: bool, overwrite: bool, resume: bool) -> dict[str, Any]:
    """:func:`train_dpo` in its held output folder."""
    from transformers import set_seed

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    output_dir = claim_output_dir(config.output_dir, overwrite=overwrite,
                                  resume_config=config_to_yaml(_as_started(config)) if resume else None)
    check_policy(config)
    offline = read_pairs(config.pairs) if config.pairs else None
    gpu = has_gpu() if gpu is None else gpu
    (output_dir / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")
    set_seed(config.seed)
    train_s = _recorded_train_s(output_dir) if resume else 0.0
    rounds: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    adapter = config.init_adapter
    for number in range(config.rounds):
        round_dir = output_dir / "rounds" / str(number)
        if not (round_dir / "log_history.json").is_file():
            start_s = time.perf_counter()
            _run_round(dataclasses.replace(config, init_adapter=adapter), offline,
                       output_dir / "pairs" / f"round-{number}.jsonl", round_dir, gpu=gpu, progress=progress,
                       seed=config.seed + number, title=f"DPO round {number + 1}/{config.rounds}")
            train_s += time.perf_counter() - start_s
        round_history = json.loads((round_dir / "log_history.json").read_text(encoding="utf-8"))
        history += [{**row, "round": number} for row in round_history]
        rounds.append({"round": number, "pairs": _count_lines(output_dir / "pairs" / f"round-{number}.jsonl")
                       if offline is None else len(offline)})
        adapter = str(round_dir / "adapter")
    _publish(Path(adapter), output_dir / "adapter")
    (output_dir / "log_history.json").write_text(json.dumps(history, indent=2), encoding="utf-8")
    summary = dpo_summary(config, output_dir, history, rounds, train_s=train_s)
    return finish_run(config, output_dir, summary, gpu=gpu, resume=resume)


def _as_started(config: TrainConfig) -> TrainConfig:
    """The config a resumed run must have been started with: ``config``, or it with fewer rounds (the run adds the rest)."""
    from affectgym.train.config_parser import load_config  # TRL's parser, a heavy import

    written = Path(config.output_dir) / "config.yaml"
    if not written.is_file():
        return config
    started = load_config(written)
    return dataclasses.replace(config, rounds=started.rounds) if started.rounds < config.rounds else config


def _recorded_train_s(output_dir: Path) -> float:
    """The seconds the summary of a finished run records (0 when none): a run resumed with more rounds adds to them."""
    written = output_dir / "summary.json"
    return float(json.loads(written.read_text(encoding="utf-8")).get("train_s") or 0.0) if written.is_file() else 0.0


def _run_round(config: TrainConfig, offline: list[dict[str, Any]] | None, pairs_file: Path, round_dir: Path, *,
               gpu: bool, progress: bool, seed: int, title: str) -> None:
    """One round on one load of its starting policy: its pairs, then its training; saves the adapter and log history.

    The log history is written last: it marks the round as done.
    """
    import datasets
    from trl import DPOTrainer

    model, tokenizer, _ = load_policy(config, gpu=gpu)
    # the round's starting policy: the base model with a fresh LoRA config, or the adapter it continues
    model, lora = trainable_policy(config, model)
    pairs = offline if offline is not None else _round_pairs(config, model, tokenizer, pairs_file, seed=seed)
    trainer = DPOTrainer(model=model, args=dpo_config(config, round_dir, gpu=gpu),
                         train_dataset=datasets.Dataset.from_list(pair_rows(pairs)), processing_class=tokenizer,
                         peft_config=lora)
    if progress:
        show_progress(trainer, f"{title} on {len(pairs)} pairs", ("loss", "rewards/margins"))
    trainer.train()
    trainer.save_model(str(round_dir / "adapter"))
    tokenizer.save_pretrained(str(round_dir / "adapter"))
    (round_dir / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=2), encoding="utf-8")


def _round_pairs(config: TrainConfig, model: Any, tokenizer: Any, pairs_file: Path, *, seed: int) -> list[dict[str, Any]]:
    """The round's pairs: read back when written, else sampled from ``model`` and scored by the env."""
    from transformers import set_seed

    if pairs_file.is_file():
        try:
            return written_pairs(pairs_file)
        except PairsError as error:
            logger.warning("%s; sampling the round's pairs again", error)
    env, scenarios, prompts = train_prompts(config)
    set_seed(seed)
    replies = sample_replies(model, tokenizer, prompts, samples=config.samples_per_prompt,
                             max_new_tokens=config.max_completion_length, temperature=config.temperature)
    pairs = preference_pairs(env, scenarios, prompts, replies, config.pair_margin)
    if not pairs:
        raise ValueError(
            f"no pair: on none of {len(scenarios)} prompts did the env score {config.samples_per_prompt} sampled replies "
            f"at least {config.pair_margin} apart; raise --samples-per-prompt or --temperature, or lower --pair-margin"
        )
    pairs_file.parent.mkdir(parents=True, exist_ok=True)
    # written whole or not at all: a run killed mid-write leaves the temporary file, never a torn pairs file
    partial = pairs_file.with_name(pairs_file.name + ".partial")
    partial.write_text("".join(json.dumps(pair, ensure_ascii=False) + "\n" for pair in pairs), encoding="utf-8")
    os.replace(partial, pairs_file)
    return pairs


def written_pairs(pairs_file: Path) -> list[dict[str, Any]]:
    """The pairs a round wrote (``pairs/round-<r>.jsonl``), read back to train on when the run resumes.

    Raises:
        PairsError: A line is not JSON (the file is torn) or not a pair; the file and line are named.
    """
    pairs = []
    for number, row in json_lines(pairs_file.read_text(encoding="utf-8"), pairs_file, PairsError):
        problem = _pair_problem(row) or (None if isinstance(row["prompt"], list) else "prompt must be a list of messages")
        if problem:
            raise PairsError(f"{pairs_file}:{number}: {problem}")
        pairs.append(row)
    if not pairs:
        raise PairsError(f"{pairs_file}: no pair in the file")
    return pairs


def _publish(source: Path, target: Path) -> None:
    """Copy the last round's adapter to the run's ``adapter/`` (what ``affectgym eval --adapter`` loads)."""
    import shutil

    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)


def _count_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()) if path.is_file() else 0


def dpo_summary(config: TrainConfig, output_dir: Path, history: list[dict[str, Any]], rounds: list[dict[str, Any]], *,
                train_s: float) -> dict[str, Any]:
    """The summary of a trained DPO run, before its held-out evaluation; draws ``figures/dpo_loss.png``."""
    losses = [row["loss"] for row in history if isinstance(row.get("loss"), int | float) and math.isfinite(row["loss"])]
    steps = [row for row in history if "loss" in row]
    figure = plot_loss_curve([{**row, "step": i + 1} for i, row in enumerate(steps)], output_dir / "figures" / "dpo_loss.png",
                             title=f"DPO on {config.env_id}, {config.model}, {len(rounds)} round(s), each starting at ln 2",
                             loss_label="DPO loss per pair")
    return {
        "env_id": config.env_id, "model": config.model, "algo": "dpo", "seed": config.seed, "rounds": rounds,
        "steps": len(steps), "train_s": round(train_s, 2),
        "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
        "output_dir": str(output_dir), "adapter_dir": str(output_dir / "adapter"),
        "log_history": str(output_dir / "log_history.json"), "figures": [str(figure)] if figure else [],
    }


def pair_rows(pairs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``DPOTrainer`` rows of pairs: the prompt's messages, and each reply as the assistant's message."""
    return [
        {"prompt": list(pair["prompt"]), "chosen": [{"role": "assistant", "content": pair["chosen"]}],
         "rejected": [{"role": "assistant", "content": pair["rejected"]}]}
        for pair in pairs
    ]


__all__ = [
    "PairsError",
    "dpo_config",
    "dpo_summary",
    "pair_rows",
    "preference_pairs",
    "read_pairs",
    "train_dpo",
    "written_pairs",
]
