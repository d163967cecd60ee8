"""The trainer arguments every TRL trainer of a run shares: steps, batch, schedule, checkpoints, precision.

:func:`trainer_arguments` builds a TRL config class (``SFTConfig``, ``DPOConfig``) from a
:class:`~affectgym.train.config.TrainConfig`, CPU-safe without a GPU; GRPO's config
(:func:`affectgym.train.grpo.grpo_config`) takes its checkpoint and activation-checkpointing
options from here too.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from affectgym.train.config import LR_SCHEDULERS, TrainConfig


def activation_checkpointing_option(config_class: type, enabled: bool) -> dict[str, bool]:
    """The gradient-checkpointing option of a TRL config class, under the name its transformers version uses.

    transformers >= 5.x renamed ``gradient_checkpointing`` (TRL's default: on) to
    ``activation_checkpointing``.
    """
    names = {item.name for item in dataclasses.fields(config_class)}
    return {"activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing": enabled}


def checkpoint_saving_options(config: TrainConfig) -> dict[str, Any]:
    """``TrainingArguments`` of the run's checkpoints (``save_steps``; the last two kept).

    >>> checkpoint_saving_options(TrainConfig(env_id="x", save_steps=0))
    {'save_strategy': 'no'}
    """
    if not config.save_steps:
        return {"save_strategy": "no"}
    return {"save_strategy": "steps", "save_steps": config.save_steps, "save_total_limit": 2}


def trainer_arguments(arguments_class: type, config: TrainConfig, output_dir: Path, *, gpu: bool, **specific: Any) -> Any:
    """``arguments_class`` (``trl.SFTConfig``, ``trl.DPOConfig``) with the run's shared settings, CPU-safe without a GPU.

    Args:
        arguments_class: The trainer's config class.
        config: The run's options: steps, batch, schedule, checkpoints, seed, precision.
        output_dir: The run's folder; the trainer writes its checkpoints under ``trainer/``.
        gpu: Whether a GPU trains.
        **specific: The trainer's own settings (e.g. DPO's ``beta``).
    """
    bf16 = gpu if config.bf16 is None else bool(config.bf16)
    if bf16 and not gpu:
        raise ValueError("bf16 training needs a GPU here; drop --bf16 (CPU runs use fp32)")
    checkpointing = gpu if config.gradient_checkpointing is None else bool(config.gradient_checkpointing)
    return arguments_class(
        output_dir=str(output_dir / "trainer"),
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_steps,
        lr_scheduler_type=LR_SCHEDULERS[config.lr_scheduler],
        max_length=None,
        logging_steps=config.logging_steps,
        **checkpoint_saving_options(config),
        report_to=config.report_to,
        seed=config.seed,
        data_seed=config.seed,
        bf16=bf16,
        use_cpu=not gpu,
        dataloader_num_workers=0,
        disable_tqdm=True,
        **activation_checkpointing_option(arguments_class, checkpointing),
        **specific,
    )


__all__ = ["activation_checkpointing_option", "checkpoint_saving_options", "trainer_arguments"]
