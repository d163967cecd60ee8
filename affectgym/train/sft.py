"""Supervised warm start on demonstrations (``affectgym train --algo sft``), with TRL's ``SFTTrainer``.

Three sources of demonstrations:

* episodes any agent played, read from ``affectgym eval`` results folders (``demos``;
  several allowed): the answered, error-free episodes of the env's **train** split, kept
  when their reward is at least ``min_reward`` and, with ``correct_only``, when their
  outcome is correct. Held-out scenarios never reach training: a folder of another env or
  split is refused, so is one whose split cannot be established (no ``metadata.json``), and
  every episode's scenario must be one of the train split's; torn lines are skipped with a
  warning;
* the env's reference replies (``references``): ``env.reference_answer(scenario)`` after
  ``env.flat_prompt(scenario)``, for every train scenario (EmpatheticDialogue-v0's reference
  turns, for instance);
* the policy's own best replies (``best_of``): ``N`` sampled to each train prompt, scored by
  the env, the best kept when it reaches ``min_reward`` (rejection sampling,
  :mod:`affectgym.train.best_of`; every sample is written to ``best_of.jsonl``).

Each demonstration is one conversational row, ``messages`` plus the env's tool schemas
(``tools``, JSON), rendered by the policy's chat template exactly as a local agent sees the
episode at inference (:class:`~affectgym.agents.transformers_agent.TransformersAgent`):
the assistant's tool calls as the text it wrote, tool results as tool messages, the final
answer and its end-of-turn token. The loss covers the assistant turns only
(``assistant_only_loss``: the template's ``{% generation %}`` marks, end of turn included);
system prompt, observations and tool outputs are masked (:func:`assistant_token_mask`).

A run writes what a GRPO run writes: ``config.yaml``, ``demonstrations.jsonl`` (the rows it
trained on), ``log_history.json``, ``figures/sft_loss.png``, ``adapter/`` and, with
``eval_episodes``, ``eval/``: base vs trained, played multi-step through the eval runner.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from affectgym.train.best_of import best_of_demonstrations
from affectgym.train.config import LR_SCHEDULERS, TrainConfig, config_to_yaml

logger = logging.getLogger(__name__)


class DemonstrationError(ValueError):
    """A demonstrations folder cannot be used: missing, of another env, or of a held-out split."""


def results_file(source: str | Path) -> Path:
    """The ``results.jsonl`` of an eval folder (or the file itself).

    Raises:
        DemonstrationError: Neither a results file nor a folder holding one.
    """
    path = Path(source)
    candidate = path / "results.jsonl" if path.is_dir() else path
    if not candidate.is_file():
        raise DemonstrationError(
            f"--demos {str(source)!r}: no results.jsonl there; pass the --out folder of an affectgym eval run "
            "(e.g. affectgym eval ENV --agent protocol --split train --out runs/demos)"
        )
    return candidate


def episode_demonstrations(
    sources: Sequence[str | Path], env_id: str, *, min_reward: float | None = None, correct_only: bool = False,
    tool_turns_only: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Conversations of the kept episodes of eval results folders, and what was dropped.

    Args:
        sources: ``affectgym eval`` output folders (or their ``results.jsonl``).
        env_id: The env being trained; every folder must have played it, on its train split.
        min_reward: Keep episodes with at least this reward.
        correct_only: Keep episodes whose ``outcome["correct"]`` is true.
        tool_turns_only: End each conversation after its last tool result (:func:`through_last`).

    Returns:
        ``(rows, counts)``: rows ``{"messages", "tools", "source", "scenario_id"}`` and the
        counts ``read``, ``kept``, ``unanswered``, ``errors``, ``below_min_reward``, ``incorrect``.

    Raises:
        DemonstrationError: A folder of another env or of a held-out split, one whose split
            cannot be established, or an episode of a scenario outside the train split.
    """
    from affectgym.agents.base import raw_text_messages
    from affectgym.eval.results import read_json, read_results
    from affectgym.train.flatten import make_env

    rows: list[dict[str, Any]] = []
    counts = dict.fromkeys(("read", "kept", "unanswered", "errors", "below_min_reward", "incorrect"), 0)
    for source in sources:
        path = results_file(source)
        metadata_path = path.parent / "metadata.json"
        metadata = read_json(metadata_path) if metadata_path.is_file() else {}
        split = metadata.get("split")
        if split is None:
            raise DemonstrationError(
                f"--demos {str(source)!r}: {'no metadata.json beside' if not metadata_path.is_file() else 'no split in the metadata.json of'} "
                f"{path}, so the split its episodes played cannot be established; pass the whole --out folder of an "
                f"affectgym eval run (affectgym eval {env_id} --split train ... writes metadata.json there)"
            )
        played = metadata.get("env_id", env_id)
        if played != env_id:
            raise DemonstrationError(f"--demos {str(source)!r} played {played}, not {env_id}; demonstrate the env you train")
        if split != "train":
            raise DemonstrationError(
                f"--demos {str(source)!r} played the {split!r} split; demonstrations must come from the train split "
                f"(affectgym eval {env_id} --split train ...), so that no held-out scenario is trained on"
            )
        env_kwargs = {k: v for k, v in (metadata.get("env_kwargs") or {}).items() if k != "split"}
        env = make_env(env_id, {**env_kwargs, "split": "train"})
        tools = json.dumps(env.tool_schemas)
        records, torn = read_results(path)
        if torn:
            logger.warning("--demos %s: %d line(s) are no complete episode record (torn or corrupt) and are skipped", path, torn)
        train_ids = {scenario.id for scenario in env.scenarios}
        outside = sorted({str(record.get("scenario_id")) for record in records} - train_ids)
        if outside:
            raise DemonstrationError(
                f"--demos {str(source)!r}: {len(outside)} scenario(s) of {path} are not in the train split of {env_id} "
                f"({', '.join(outside[:5])}{', ...' if len(outside) > 5 else ''}); demonstrations must come from the "
                "train split, so that no held-out scenario is trained on"
            )
        for record in records:
            counts["read"] += 1
            if record.get("error"):
                counts["errors"] += 1
            elif not record.get("terminated"):
                counts["unanswered"] += 1
            elif min_reward is not None and float(record.get("reward") or 0.0) < min_reward:
                counts["below_min_reward"] += 1
            elif correct_only and not (record.get("outcome") or {}).get("correct"):
                counts["incorrect"] += 1
            else:
                messages = raw_text_messages(record["messages"])
                if tool_turns_only:
                    messages = through_last(messages, "tool")
                    if not messages:
                        counts.setdefault("no_tool_call", 0)
                        counts["no_tool_call"] += 1
                        continue
                counts["kept"] += 1
                rows.append({"messages": messages, "tools": tools, "source": str(path), "scenario_id": record["scenario_id"]})
    return rows, counts


def through_last(messages: Sequence[Mapping[str, Any]], role: str) -> list[dict[str, Any]]:
    """The conversation up to and including its last message of ``role`` (empty when it has none).

    ``"tool"``: the episode without its answer (``tool_turns_only``); ``"assistant"``: without
    what follows the last assistant turn, which has nothing to learn.

    >>> episode = [{"role": "user", "content": "?"}, {"role": "assistant", "content": "<tool_call>..."},
    ...            {"role": "tool", "content": "out"}, {"role": "assistant", "content": "Yes"}]
    >>> through_last(episode, "tool")[-1], len(through_last(episode, "assistant")), through_last(episode[:1], "tool")
    ({'role': 'tool', 'content': 'out'}, 4, [])
    """
    last = max((i for i, message in enumerate(messages) if message.get("role") == role), default=-1)
    return [dict(message) for message in messages[: last + 1]]


def reference_demonstrations(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The env's reference reply after its flat prompt, for every train scenario.

    Args:
        env_id: A registered id.
        env_kwargs: Env keyword arguments (the split is always ``"train"``).
    """
    from affectgym.train.flatten import make_env

    env = make_env(env_id, {**dict(env_kwargs or {}), "split": "train"})
    rows = []
    for scenario in env.scenarios:
        reply, _ = env.reference_answer(scenario)
        messages = [*(dict(m) for m in env.flat_prompt(scenario)), {"role": "assistant", "content": reply}]
        rows.append({"messages": messages, "tools": json.dumps([]), "source": "references", "scenario_id": scenario.id})
    return rows


def assistant_token_mask(tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None) -> tuple[list[int], list[int]]:
    """Token ids of a rendered conversation and its loss mask (1 on the assistant's tokens).

    The mask ``SFTTrainer(assistant_only_loss=True)`` trains with: the template's
    ``{% generation %}`` spans, so each assistant message and its end-of-turn token.
    """
    rendered = tokenizer.apply_chat_template(
        list(messages), tools=list(tools) if tools else None, tokenize=True, return_dict=True,
        return_assistant_tokens_mask=True,
    )
    return list(rendered["input_ids"]), list(rendered["assistant_masks"])


def training_chat_template(tokenizer: Any) -> str:
    """The tokenizer's chat template with ``{% generation %}`` marks (affectgym's and TRL's known templates).

    Raises:
        ValueError: The template marks no assistant span and TRL has no training version of it.
    """
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if has_generation_markers(tokenizer.chat_template):
        return tokenizer.chat_template
    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError:
        raise ValueError(
            "supervised training masks everything but the assistant's turns, and this tokenizer's chat template "
            "has no {% generation %} marks that TRL could add; give the model a template with them "
            "(affectgym.agents.models.CHATML_TOOL_TEMPLATE has them)"
        ) from None
    return patched or tokenizer.chat_template


def demonstrations(config: TrainConfig) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The demonstrations of ``config`` read before a model loads (its ``demos`` folders, then ``references``), and the counts.

    Raises:
        DemonstrationError: No demonstration was kept and none is to be sampled (``best_of``).
    """
    rows, counts = episode_demonstrations(
        config.demos, config.env_id, min_reward=config.min_reward, correct_only=config.correct_only,
        tool_turns_only=config.tool_turns_only,
    )
    if config.references:
        references = reference_demonstrations(config.env_id, config.env_kwargs)
        rows += references
        counts["references"] = len(references)
    if not rows and not config.best_of:
        raise _no_demonstration(counts)
    return rows, counts


def _no_demonstration(counts: Mapping[str, int]) -> DemonstrationError:
    """The error of a run left with nothing to learn, with what was read and dropped."""
    return DemonstrationError(
        f"no demonstration to learn from: {dict(counts)}; lower --min-reward, drop --correct-only, add --demos "
        "folders or raise --best-of"
    )


def trainer_arguments(arguments_class: type, config: TrainConfig, output_dir: Path, *, gpu: bool, **specific: Any) -> Any:
    """``arguments_class`` (``trl.SFTConfig``, ``trl.DPOConfig``) with the run's shared settings, CPU-safe without a GPU.

    Args:
        arguments_class: The trainer's config class.
        config: The run's options: steps, batch, schedule, checkpoints, seed, precision.
        output_dir: The run's folder; the trainer writes its checkpoints under ``trainer/``.
        gpu: Whether a GPU trains.
        **specific: The trainer's own settings (e.g. DPO's ``beta``).
    """
    from affectgym.train.grpo import activation_checkpointing_option, checkpoint_saving_options

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
    from affectgym.train.run_dir import hold_output_dir

    with hold_output_dir(config.output_dir):
        return _train_sft(config, gpu=gpu, progress=progress, overwrite=overwrite, resume=resume, callbacks=callbacks)


def _train_sft(config: TrainConfig, *, gpu: bool | None, progress: bool, overwrite: bool, resume: bool,
               callbacks: list[Any] | None) -> dict[str, Any]:
    """:func:`train_sft` in its held output folder."""
    import datasets
    from transformers import set_seed
    from trl import SFTTrainer

    from affectgym.train.grpo import (
        check_policy,
        finish_run,
        finished_training,
        has_gpu,
        load_policy,
        trainable_policy,
    )
    from affectgym.train.progress import show_progress
    from affectgym.train.run_dir import claim_output_dir, resume_checkpoint

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
            raise _no_demonstration(counts)
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
    from affectgym.train.grpo import logged_steps_and_runtime
    from affectgym.train.plots import plot_loss_curve

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


__all__ = [
    "DemonstrationError",
    "assistant_token_mask",
    "demonstrations",
    "episode_demonstrations",
    "reference_demonstrations",
    "results_file",
    "sft_config",
    "sft_summary",
    "through_last",
    "train_sft",
    "trainer_arguments",
    "training_chat_template",
]
