"""GRPO training of a language model on an affectgym env with TRL (``affectgym train``).

:func:`train` runs the whole job from a :class:`~affectgym.train.config.TrainConfig`:

1. the policy: an alias (``smollm2-135m``, resolved by :mod:`affectgym.models`), a
   folder or a hub id, with a LoRA adapter (PEFT; ``q_proj,k_proj,v_proj,o_proj`` on
   llama/qwen/mistral-like models) unless ``lora_r=0`` (:mod:`affectgym.train.policy`);
2. the data: the env's train split (:func:`~affectgym.train.flatten.to_dataset`), flat
   prompts or the episode openings for multi-turn;
3. the reward: one TRL reward function per rubric component with the rubric's weights
   (:func:`~affectgym.train.rewards.reward_functions`); in multi-turn mode the components
   are logged at weight 0 and the episode total comes from the ``environment_factory``
   adapter's ``get_reward`` (:mod:`affectgym.train.environment`);
4. ``GRPOTrainer``: CPU-safe settings without a GPU (fp32, ``use_cpu``, no gradient
   checkpointing), bf16 and optional vLLM with one;
5. outputs in ``output_dir``: ``config.yaml``, ``log_history.json``, one reward-curve PNG per
   component (``figures/``), the adapter (``adapter/``), every scored rollout
   (``rollouts/rank<N>.jsonl``, see :mod:`affectgym.train.rewards`), and a held-out
   evaluation of the base model and the trained adapter side by side (``eval/``) through the
   eval runner (:mod:`affectgym.train.run`).

Several processes (GPUs): the same entry under ``accelerate launch`` (TRL and transformers
handle the distribution), e.g. ``accelerate launch --num_processes 4 -m affectgym.cli train ...``.
Every process builds its own env, reward functions and (multi-turn) environments, scores
its shard of each batch and writes its own ``rollouts/rank<N>.jsonl``; the main process
alone writes the other outputs and runs the held-out evaluations.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from affectgym.train.arguments import activation_checkpointing_option, checkpoint_saving_options
from affectgym.train.config import LR_SCHEDULERS, TrainConfig, config_to_yaml
from affectgym.train.demos import demonstrations
from affectgym.train.environment import environment_factory
from affectgym.train.flatten import to_dataset
from affectgym.train.heldout import HeldOutEvaluator, heldout_callback
from affectgym.train.plots import plot_reward_curves
from affectgym.train.policy import (
    check_policy,
    has_gpu,
    load_policy,
    trainable_policy,
    training_chat_template,
)
from affectgym.train.progress import show_progress
from affectgym.train.rewards import reward_functions
from affectgym.train.run import eval_max_new_tokens, finish_run, finished_training, run_summary
from affectgym.train.run_dir import claim_output_dir, hold_output_dir, resume_checkpoint

logger = logging.getLogger(__name__)


def grpo_config(config: TrainConfig, reward_weights: list[float], *, gpu: bool | None = None) -> Any:
    """The ``trl.GRPOConfig`` of a run: CPU-safe without a GPU, bf16 (and vLLM if asked) with one.

    Args:
        config: The run's options.
        reward_weights: One weight per reward function.
        gpu: Whether a GPU is used; default: :func:`has_gpu`.
    """
    from trl import GRPOConfig

    gpu = has_gpu() if gpu is None else gpu
    if config.use_vllm and not gpu:
        raise ValueError("--use-vllm needs a CUDA GPU; drop it to generate with transformers on CPU")
    bf16 = gpu if config.bf16 is None else bool(config.bf16)
    if bf16 and not gpu:
        raise ValueError("bf16 training needs a GPU here; drop --bf16 (CPU runs use fp32)")
    checkpointing = gpu if config.gradient_checkpointing is None else bool(config.gradient_checkpointing)
    options: dict[str, Any] = {
        "output_dir": str(Path(config.output_dir) / "trainer"),
        "max_steps": config.max_steps,
        "per_device_train_batch_size": config.batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "num_generations": config.num_generations,
        "max_completion_length": config.max_completion_length,
        "learning_rate": config.learning_rate,
        "warmup_steps": config.warmup_steps,
        "lr_scheduler_type": LR_SCHEDULERS[config.lr_scheduler],
        "scale_rewards": config.scale_rewards,
        "temperature": config.temperature,
        "beta": config.beta,
        "entropy_coef": config.entropy_coef,
        "reward_weights": reward_weights,
        "logging_steps": config.logging_steps,
        **checkpoint_saving_options(config),
        "report_to": config.report_to,
        "seed": config.seed,
        "data_seed": config.seed,
        "bf16": bf16,
        "fp16": False,
        "use_cpu": not gpu,
        "use_vllm": config.use_vllm,
        "vllm_mode": config.vllm_mode,
        "vllm_server_base_url": config.vllm_server_base_url,
        "remove_unused_columns": False,
        "shuffle_dataset": not config.group_batches,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
    }
    options.update(activation_checkpointing_option(GRPOConfig, checkpointing))
    if config.mode == "multiturn":
        options["max_tool_calling_iterations"] = config.max_tool_calling_iterations
    return GRPOConfig(**options)


def chat_text_prompts(dataset: Any, tokenizer: Any) -> Any:
    """A ``"chat"`` dataset with each prompt rendered to text by the policy's template, with the row's tools.

    TRL renders conversational prompts without tool schemas (flat mode has no tools to run),
    so the chat form is handed over as the text the agent's template gives
    (:meth:`~affectgym.agents.transformers_agent.TransformersAgent.prompt`): the same tokens.
    """
    def render(row: dict[str, Any]) -> dict[str, Any]:
        text = tokenizer.apply_chat_template(
            row["prompt"], tools=json.loads(row["tools"]) or None, add_generation_prompt=True, tokenize=False
        )
        return {"prompt": text}

    return dataset.map(render, remove_columns=["tools"])


def prepare_tool_parsing(tokenizer: Any) -> None:
    """Give the tokenizer a response parser for tool calls when TRL does not know its template.

    TRL sets one for the chat templates it ships; affectgym's ChatML tool template (used for
    SmolLM2 and the test models) writes Hermes/Qwen ``<tool_call>`` blocks, which TRL's Qwen
    parser reads.
    """
    from trl.chat_template_utils import add_response_schema

    if getattr(tokenizer, "response_template", None) is not None or getattr(tokenizer, "response_schema", None) is not None:
        return
    try:
        add_response_schema(tokenizer)
    except ValueError:
        template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else ""
        if "<tool_call>" not in template or "<|im_start|>" not in template:
            raise ValueError(
                "multiturn training needs a chat template that writes tool calls as <tool_call> blocks "
                "(ChatML/Qwen style) or one TRL knows; this tokenizer's template is neither"
            ) from None
        from trl.chat_template_utils import qwen3_template

        tokenizer.response_template = qwen3_template


def build_trainer(config: TrainConfig, *, gpu: bool | None = None, reward_funcs: list[Callable] | None = None,
                  reward_weights: list[float] | None = None) -> Any:
    """A ready GRPO trainer for ``config`` (used by :func:`train`, tests and the benchmark).

    A :class:`~affectgym.train.shared_prefix.SharedPrefixGRPOTrainer`, or TRL's own
    ``GRPOTrainer`` with ``share_prompts=False``.

    Args:
        config: The run's options.
        gpu: Whether to use a GPU; default: :func:`has_gpu`.
        reward_funcs: Replace affectgym's reward functions (the benchmark's constant reward).
        reward_weights: Their weights (default: 1 each).
    """
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOTrainer

    from affectgym.train.anchor import anchored  # torch and TRL: imported when a trainer is built
    from affectgym.train.shared_prefix import SharedPrefixGRPOTrainer

    gpu = has_gpu() if gpu is None else gpu
    multiturn = config.mode == "multiturn"
    dataset = to_dataset(
        config.env_id,
        split="train",
        n=config.n_train,
        seed=config.seed,
        balance=config.balance,
        oversample=config.oversample or None,
        env_kwargs=config.env_kwargs,
        prompt_form="interactive" if multiturn else config.prompt_form,
        group_rows=config.group_batches,
        rows_per_batch=max(1, config.batch_size // config.num_generations),  # prompts in one device batch
    )
    if reward_funcs is None:
        reward_funcs, reward_weights = reward_functions(
            config.env_id, {**config.env_kwargs, "split": "train"}, rollouts_dir=Path(config.output_dir) / "rollouts"
        )
        if multiturn:  # the adapter's get_reward carries the total; the components are logged metrics
            reward_weights = [0.0] * len(reward_funcs)
    elif reward_weights is None:
        reward_weights = [1.0] * len(reward_funcs)
    model, tokenizer, _ = load_policy(config, gpu=gpu)
    model, lora = trainable_policy(config, model)
    factory = None
    if multiturn:
        prepare_tool_parsing(tokenizer)
        factory = environment_factory(config.env_id, {**config.env_kwargs, "split": "train"})
    if config.prompt_form == "chat":
        dataset = chat_text_prompts(dataset, tokenizer)
    trainer_class = SharedPrefixGRPOTrainer if config.share_prompts else GRPOTrainer
    anchor = supervised_anchor(config, tokenizer) if config.anchor_coef else None
    trainer = (anchored(trainer_class) if anchor is not None else trainer_class)(
        model=model,
        reward_funcs=reward_funcs,
        args=grpo_config(config, list(reward_weights), gpu=gpu),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora,
        environment_factory=factory,
    )
    if anchor is not None:
        trainer.set_anchor(anchor, config.anchor_coef)
    return trainer


def supervised_anchor(config: TrainConfig, tokenizer: Any) -> Any:
    """The :class:`~affectgym.train.anchor.SupervisedAnchor` of ``config.demos`` (filtered as ``--algo sft`` filters them)."""
    from affectgym.train.anchor import SupervisedAnchor  # torch

    rows, _ = demonstrations(config)
    tokenizer.chat_template = training_chat_template(tokenizer)  # the same text, with the assistant's spans marked
    return SupervisedAnchor(tokenizer, rows, rows_per_step=config.anchor_rows, seed=config.seed)


def train(config: TrainConfig, *, gpu: bool | None = None, progress: bool = False,
          overwrite: bool = False, resume: bool = False, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run GRPO on ``config.env_id`` and write the outputs (see the module docstring).

    Args:
        config: The run's options.
        gpu: Whether to use a GPU; default: :func:`has_gpu`.
        progress: Show a progress bar with the step's reward and loss.
        overwrite: Replace an earlier run in ``config.output_dir`` (otherwise it is refused
            before anything loads; :func:`~affectgym.train.run_dir.claim_output_dir`).
        resume: Continue the run in ``config.output_dir`` (started with the same config) from
            its last checkpoint, or, when its training finished, complete its held-out evaluation.
        callbacks: More ``transformers.TrainerCallback`` objects for the trainer.

    Returns:
        A summary: output paths, wall time, first and last mean reward, and the held-out
        evaluation (when ``eval_episodes > 0``). Under ``accelerate launch`` every process
        returns it; only the main process's has the evaluation.

    Raises:
        affectgym.eval.results.RunFolderLocked: Another process trains into ``config.output_dir``.
    """
    from accelerate import PartialState

    if not config.env_id:
        raise ValueError("no environment id given; e.g. affectgym train affectgym/Sarcasm-v0 --model smollm2-135m")
    main_process = PartialState().is_main_process
    # the main process holds the folder for the whole run; the others write only their rollouts there
    with hold_output_dir(config.output_dir) if main_process else nullcontext():
        return _train(config, gpu=gpu, progress=progress, overwrite=overwrite, resume=resume, callbacks=callbacks,
                      main_process=main_process)


def _train(config: TrainConfig, *, gpu: bool | None, progress: bool, overwrite: bool, resume: bool,
           callbacks: list[Any] | None, main_process: bool) -> dict[str, Any]:
    """:func:`train` in its held output folder."""
    import torch
    from transformers import set_seed

    output_dir = Path(config.output_dir)
    if main_process:
        claim_output_dir(output_dir, overwrite=overwrite, resume_config=config_to_yaml(config) if resume else None)
    check_policy(config)
    gpu = has_gpu() if gpu is None else gpu
    if resume and finished_training(output_dir):
        history = json.loads((output_dir / "log_history.json").read_text(encoding="utf-8"))
        summary = run_summary(config, output_dir, history, sorted((output_dir / "figures").glob("*.png")))
        return finish_run(config, output_dir, summary, gpu=gpu, resume=True) if main_process else summary
    # every process resumes from the same checkpoint; the main one alone trims the logs
    checkpoint, _ = resume_checkpoint(output_dir, trim_logs=main_process) if resume else (None, 0)
    set_seed(config.seed)
    if not gpu:
        torch.set_num_threads(max(1, min(torch.get_num_threads(), os.cpu_count() or 1)))
    start_s = time.perf_counter()
    trainer = build_trainer(config, gpu=gpu)
    for callback in callbacks or []:
        trainer.add_callback(callback)
    # the trainer's accelerator knows the processes (its TrainingArguments set up accelerate's
    # state); one writer per file, so processes never race on the outputs
    if main_process:
        (output_dir / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")
    if config.eval_every_steps and config.mode == "flat" and main_process:
        evaluator = HeldOutEvaluator(
            config.env_id, config.env_kwargs, trainer.processing_class, max_new_tokens=eval_max_new_tokens(config),
            prompt_form=config.prompt_form, split=config.heldout_split,
        )
        trainer.add_callback(heldout_callback(evaluator, config.eval_every_steps, output_dir / "heldout.jsonl"))
    if progress and main_process:
        show_progress(trainer, f"GRPO {config.mode} on {config.env_id}", ("reward", "loss"))
    trainer.train(resume_from_checkpoint=checkpoint)
    train_s = time.perf_counter() - start_s
    history = list(trainer.state.log_history)
    adapter_dir = output_dir / "adapter"
    trainer.save_model(str(adapter_dir))  # every process: sharded (ZeRO-3) weights are gathered; the main one writes
    figures: list[Path] = []
    if main_process:
        trainer.processing_class.save_pretrained(str(adapter_dir))
        figures = plot_reward_curves(
            history, output_dir / "figures", title=f"GRPO {config.mode} on {config.env_id}, {config.model}"
        )
        # written last: with the adapter, it marks the training as finished (finished_training)
        (output_dir / "log_history.json").write_text(json.dumps(history, indent=2), encoding="utf-8")
    summary = run_summary(config, output_dir, history, figures, train_s=train_s)
    del trainer
    return finish_run(config, output_dir, summary, gpu=gpu, resume=resume) if main_process else summary


__all__ = [
    "build_trainer",
    "chat_text_prompts",
    "grpo_config",
    "prepare_tool_parsing",
    "supervised_anchor",
    "train",
]
