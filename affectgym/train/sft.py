"""Supervised warm start on demonstrations (``affectgym train --algo sft``), with TRL's ``SFTTrainer``.

Three sources of demonstrations:

* episodes any agent played, read from ``affectgym eval`` results folders (``demos``), and
  the env's reference replies (``references``): :mod:`affectgym.train.demos`;
* the policy's own best replies (``best_of``): ``N`` sampled to each train prompt, scored by
  the env, the best kept when it reaches ``min_reward`` (rejection sampling,
  :mod:`affectgym.train.best_of`; every sample is written to ``best_of.jsonl``).

Each demonstration is one conversational row, rendered by the policy's chat template exactly
as a local agent sees the episode at inference; the loss covers the assistant turns only
(``assistant_only_loss``: the template's ``{% generation %}`` marks, end of turn included;
:func:`~affectgym.train.demos.assistant_token_mask`).

A run writes what a GRPO run writes: ``config.yaml``, ``demonstrations.jsonl`` (the rows it
trained on), ``log_history.json``, ``figures/sft_loss.png``, ``adapter/`` and, with
``eval_episodes``, ``eval/``: base vs trained, played multi-step through the eval runner.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from affectgym.train.arguments import trainer_arguments
from affectgym.train.best_of import best_of_demonstrations
from affectgym.train.config import TrainConfig, config_to_yaml
from affectgym.train.demos import demonstrations, no_demonstration_error
from affectgym.train.plots import plot_loss_curve
from affectgym.train.policy import (
    check_policy,
    has_gpu,
    load_policy,
    trainable_policy,
    training_chat_template,
)
from affectgym.train.progress import show_progress
from affectgym.train.run import finish_run, finished_training, logged_steps_and_runtime
from affectgym.train.run_dir import claim_output_dir, hold_output_dir, resume_checkpoint


def sft_config(config: TrainConfig, *, gpu: bool) -> Any:
    """The ``trl.SFTConfig`` of a run: assistant-only loss, CPU-safe without a GPU."""
    from trl import SFTConfig

    return trainer_arguments(SFTConfig, config, Path(config.output_dir), gpu=gpu, assistant_only_loss=True)


def train_sft(config: TrainConfig, *, gpu: bool | None = None, progress: bool = False,
              overwrite: bool = False, resume: bool = False, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run the supervised warm start of ``config`` and write its outputs (see the module docstring).

    Args:
        config: The run's options (``algo="sft"``).
        gpu: Whether to use a GPU; default: when torch sees one.
        progress: Show a progress bar with the loss instead of nothing.
        overwrite: Replace an earlier run in ``config.output_dir`` (otherwise it is refused
            before anything loads).
        resume: Continue the run in ``config.output_dir`` (same config) from its last
            checkpoint, or complete its held-out evaluation.
        callbacks: More ``transformers.TrainerCallback`` objects for the trainer.

    Returns:
        A summary: demonstration counts, paths, wall time, first and last loss, and the
        held-out evaluation when ``eval_episodes > 0``.

    Raises:
        affectgym.eval.results.RunFolderLocked: Another process trains into ``config.output_dir``.
    """
    with hold_output_dir(config.output_dir):
        return _train_sft(config, gpu=gpu, progress=progress, overwrite=overwrite, resume=resume, callbacks=callbacks)


def _train_sft(config: TrainConfig, *, gpu: bool | None, progress: bool, overwrite: bool, resume: bool,
               callbacks: list[Any] | None) -> dict[str, Any]:
    """:func:`train_sft` in its held output folder."""
    import datasets
    from transformers import set_seed
    from trl import SFTTrainer


    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    output_dir = claim_output_dir(config.output_dir, overwrite=overwrite,
                                  resume_config=config_to_yaml(config) if resume else None)
    check_policy(config)
    rows, counts = demonstrations(config)
    gpu = has_gpu() if gpu is None else gpu
    if resume and finished_training(output_dir):
        history = json.loads((output_dir / "log_history.json").read_text(encoding="utf-8"))
        if config.best_of:
            counts.update(best_of_demonstrations(config, None, None, output_dir / "best_of.jsonl")[1])
        return finish_run(config, output_dir, sft_summary(config, output_dir, history, counts), gpu=gpu, resume=True)
    checkpoint, _ = resume_checkpoint(output_dir) if resume else (None, 0)
    set_seed(config.seed)
    start_s = time.perf_counter()
    model, tokenizer, _ = load_policy(config, gpu=gpu)
    tokenizer.chat_template = training_chat_template(tokenizer)
    model, lora = trainable_policy(config, model)
    (output_dir / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")
    if config.best_of:
        sampled, sampled_counts = best_of_demonstrations(config, model, tokenizer, output_dir / "best_of.jsonl")
        rows, counts = rows + sampled, {**counts, **sampled_counts}
        if not rows:
            raise no_demonstration_error(counts)
    with (output_dir / "demonstrations.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    dataset = datasets.Dataset.from_list([{"messages": row["messages"], "tools": row["tools"]} for row in rows])
    trainer = SFTTrainer(
        model=model, args=sft_config(config, gpu=gpu), train_dataset=dataset, processing_class=tokenizer,
        peft_config=lora, callbacks=callbacks,
    )
    if progress:
        show_progress(trainer, f"SFT on {len(rows)} demonstrations", ("loss", "mean_token_accuracy"))
    trainer.train(resume_from_checkpoint=checkpoint)
    train_s = time.perf_counter() - start_s
    history = list(trainer.state.log_history)
    trainer.save_model(str(output_dir / "adapter"))
    tokenizer.save_pretrained(str(output_dir / "adapter"))
    # written last: with the adapter, it marks the training as finished
    (output_dir / "log_history.json").write_text(json.dumps(history, indent=2), encoding="utf-8")
    del trainer
    return finish_run(config, output_dir, sft_summary(config, output_dir, history, counts, train_s=train_s), gpu=gpu,
                      resume=resume)


def sft_summary(config: TrainConfig, output_dir: Path, history: list[dict[str, Any]], counts: dict[str, int], *,
                train_s: float | None = None) -> dict[str, Any]:
    """The summary of a trained SFT run, before its held-out evaluation; draws ``figures/sft_loss.png``."""
    losses = [row["loss"] for row in history if isinstance(row.get("loss"), int | float) and math.isfinite(row["loss"])]
    figure = plot_loss_curve(history, output_dir / "figures" / "sft_loss.png",
                             title=f"SFT on {config.env_id}, {config.model}, {counts['kept'] + counts.get('references', 0) + counts.get('best_of_kept', 0)} demonstrations")
    steps, runtime_s = logged_steps_and_runtime(history)
    return {
        "env_id": config.env_id, "model": config.model, "algo": "sft", "seed": config.seed,
        "demonstrations": counts, "steps": steps, "train_s": round(runtime_s if train_s is None else train_s, 2),
        "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
        "output_dir": str(output_dir), "adapter_dir": str(output_dir / "adapter"),
        "log_history": str(output_dir / "log_history.json"), "figures": [str(figure)] if figure else [],
    }


__all__ = ["sft_config", "sft_summary", "train_sft"]
