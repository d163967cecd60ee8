"""GRPO training of a language model on an affectgym env with TRL (``affectgym train``).

:func:`train` runs the whole job from a :class:`~affectgym.train.config.TrainConfig`:

1. the policy: an alias (``smollm2-135m``, resolved by :mod:`affectgym.agents.models`), a
   folder or a hub id, with a LoRA adapter (PEFT; ``q_proj,k_proj,v_proj,o_proj`` on
   llama/qwen/mistral-like models) unless ``lora_r=0``;
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
   eval runner.

Several processes (GPUs): the same entry under ``accelerate launch`` (TRL and transformers
handle the distribution), e.g. ``accelerate launch --num_processes 4 -m affectgym.cli train ...``.
Every process builds its own env, reward functions and (multi-turn) environments, scores
its shard of each batch and writes its own ``rollouts/rank<N>.jsonl``; the main process
alone writes the other outputs and runs the held-out evaluations.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from affectgym.train.config import LR_SCHEDULERS, TrainConfig, config_to_yaml

logger = logging.getLogger(__name__)

#: LoRA target modules by ``config.model_type``; other architectures fall back to "all-linear".
LORA_TARGETS: dict[str, list[str]] = {
    **{name: ["q_proj", "k_proj", "v_proj", "o_proj"] for name in (
        "llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3_text", "olmo2", "smollm3", "phi3",
    )},
    "gpt2": ["c_attn", "c_proj"],
    "gpt_neox": ["query_key_value", "dense"],
}


def resolve_model(name_or_path: str) -> str:
    """The folder (or hub id) of a model alias, through :mod:`affectgym.agents.models`.

    >>> resolve_model("./some/folder")
    './some/folder'
    """
    try:
        from affectgym.agents.models import resolve_model as resolve
    except ImportError:  # the agents package is optional for training from a folder
        return name_or_path
    return resolve(name_or_path)


def lora_target_modules(model_type: str, requested: str = "auto") -> list[str] | str:
    """Modules LoRA adapts: ``requested`` (comma-separated), or a sensible set per architecture.

    >>> lora_target_modules("qwen2")
    ['q_proj', 'k_proj', 'v_proj', 'o_proj']
    >>> lora_target_modules("something_new")
    'all-linear'
    >>> lora_target_modules("llama", "q_proj,v_proj")
    ['q_proj', 'v_proj']
    """
    if requested and requested != "auto":
        return [name.strip() for name in requested.split(",") if name.strip()]
    return list(LORA_TARGETS.get(model_type, [])) or "all-linear"


def has_gpu() -> bool:
    """Whether torch sees a CUDA device."""
    import torch

    return bool(torch.cuda.is_available())


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
        "remove_unused_columns": False,
        "shuffle_dataset": not config.group_batches,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
    }
    options.update(activation_checkpointing_option(GRPOConfig, checkpointing))
    if config.mode == "multiturn":
        options["max_tool_calling_iterations"] = config.max_tool_calling_iterations
    return GRPOConfig(**options)


def check_policy(config: TrainConfig, *, resolve_alias: bool = True) -> None:
    """Fail before any weights load when the policy cannot be what ``config`` asks.

    Reads the model's ``config.json`` and the ``init_adapter``'s config and weights headers
    only: a local path that is no model folder, an adapter that cannot start the run, and a
    LoRA rank above the model's width, are named here instead of in the hub client's, PEFT's
    or the allocator's words.

    Raises:
        FileNotFoundError: ``config.model`` looks like a path and is no model folder, or
            ``config.init_adapter`` is no adapter folder.
        ValueError: ``lora_r`` exceeds the model's hidden size, or ``config.init_adapter`` is
            torn, has a field of the wrong type or was trained on another base model
            (:func:`~affectgym.train.adapters.check_init_adapter`).
    """
    path = resolve_model(config.model) if resolve_alias else config.model
    local = Path(path).expanduser()
    looks_local = path.startswith((".", "/", "~")) or path.count("/") > 1 or local.exists()
    if looks_local and not (local / "config.json").is_file():
        raise FileNotFoundError(
            f"--model {config.model!r}: {'no such folder' if not local.exists() else 'no config.json in that folder'}; "
            "pass a model folder (one from_pretrained loads), a hub id such as HuggingFaceTB/SmolLM2-135M-Instruct, "
            "or the alias smollm2-135m"
        )
    if config.init_adapter is not None:
        from affectgym.train.adapters import check_init_adapter

        check_init_adapter(config, model_path=path)
        return
    if not looks_local or config.lora_r == 0:
        return
    model_config = json.loads((local / "config.json").read_text(encoding="utf-8"))
    width, layers = model_config.get("hidden_size"), model_config.get("num_hidden_layers")
    if isinstance(width, int) and config.lora_r > width:
        raise ValueError(f"lora_r ({config.lora_r}) exceeds the hidden size of {config.model!r} ({width}); use a rank <= {width}")
    if isinstance(layers, int) and config.lora_layers > layers:
        raise ValueError(f"lora_layers ({config.lora_layers}) exceeds the {layers} layers of {config.model!r}; "
                         f"use 1 to {layers}, or 0 (every layer)")
    if config.lora_target_modules != "auto":
        check_lora_targets(config, local)


def check_lora_targets(config: TrainConfig, model_folder: Path) -> None:
    """Refuse ``lora_target_modules`` that name no module of the model, listing the ones it has.

    The model is built from its ``config.json`` on the meta device (no weights are read); a
    name matches a module whose dotted name is it or ends with it, as PEFT matches them.
    """
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    with init_empty_weights():
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(model_folder)))
    names = [name for name, _ in model.named_modules() if name]
    wanted = lora_target_modules(model.config.model_type, config.lora_target_modules)
    missing = [target for target in wanted if not any(name == target or name.endswith("." + target) for name in names)]
    if missing:
        linear = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules()
                         if type(module).__name__ == "Linear" and name})
        raise ValueError(
            f"lora_target_modules {missing} name no module of {config.model!r}; its linear modules: {', '.join(linear)} "
            "(or auto)"
        )


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


def load_policy(config: TrainConfig, *, gpu: bool) -> tuple[Any, Any, str]:
    """The model (fp32 on CPU, bf16 on GPU), its tokenizer and the resolved path."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(config.model)
    bf16 = gpu if config.bf16 is None else bool(config.bf16)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16 if bf16 else torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        from affectgym.agents.models import CHATML_TOOL_TEMPLATE

        if "<|im_start|>" not in tokenizer.get_vocab():
            raise ValueError(f"the tokenizer of {config.model!r} has no chat template and no ChatML tokens")
        tokenizer.chat_template = CHATML_TOOL_TEMPLATE
    return model, tokenizer, path


def trainable_policy(config: TrainConfig, model: Any) -> tuple[Any, Any]:
    """``(model, peft_config)`` for a trainer: a fresh LoRA config, or ``config.init_adapter`` loaded to keep training.

    A run that starts from an adapter (the warm start of an ``--algo sft`` run) trains that
    adapter further, so its output is again one adapter over the base model.
    """
    if config.init_adapter is None:
        return model, peft_config(config, model.config.model_type, getattr(model.config, "num_hidden_layers", None))
    from peft import PeftModel

    from affectgym.hub import pretrained_problem

    problem = pretrained_problem(config.init_adapter)
    if problem is not None:
        raise OSError(f"cannot load --init-adapter: {problem}")
    return PeftModel.from_pretrained(model, config.init_adapter, is_trainable=True), None


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

    from affectgym.train.anchor import anchored
    from affectgym.train.environment import environment_factory
    from affectgym.train.flatten import to_dataset
    from affectgym.train.rewards import reward_functions
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
    from affectgym.train.anchor import SupervisedAnchor
    from affectgym.train.sft import demonstrations, training_chat_template

    rows, _ = demonstrations(config)
    tokenizer.chat_template = training_chat_template(tokenizer)  # the same text, with the assistant's spans marked
    return SupervisedAnchor(tokenizer, rows, rows_per_step=config.anchor_rows, seed=config.seed)


def peft_config(config: TrainConfig, model_type: str, num_layers: int | None = None) -> Any:
    """The LoRA config of a run, or ``None`` for full fine-tuning (``lora_r=0``).

    Args:
        config: The run's options (``lora_layers > 0`` adapts only the last layers).
        model_type: ``config.model_type`` of the policy.
        num_layers: The policy's number of transformer layers (needed with ``lora_layers``).
    """
    if config.lora_r == 0:
        return None
    from peft import LoraConfig

    layers = None
    if config.lora_layers:
        if not num_layers:
            raise ValueError("lora_layers needs the model's number of layers (config.num_hidden_layers)")
        if config.lora_layers > num_layers:
            raise ValueError(f"lora_layers ({config.lora_layers}) exceeds the model's {num_layers} layers; "
                             f"use 1 to {num_layers}, or 0 (every layer)")
        layers = list(range(max(0, num_layers - config.lora_layers), num_layers))
    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=lora_target_modules(model_type, config.lora_target_modules),
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )


def eval_max_new_tokens(config: TrainConfig) -> int:
    """The token limit of a message in the run's held-out evaluations (``eval_max_new_tokens``, or its default).

    >>> eval_max_new_tokens(TrainConfig(env_id="x", max_completion_length=4))
    4
    """
    if config.eval_max_new_tokens is not None:
        return config.eval_max_new_tokens
    return config.max_completion_length if config.algo == "grpo" else 256


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
    from contextlib import nullcontext

    from accelerate import PartialState

    from affectgym.train.run_dir import hold_output_dir

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

    from affectgym.train.run_dir import claim_output_dir, resume_checkpoint

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
        from affectgym.train.heldout import HeldOutEvaluator, heldout_callback

        evaluator = HeldOutEvaluator(
            config.env_id, config.env_kwargs, trainer.processing_class, max_new_tokens=eval_max_new_tokens(config),
            prompt_form=config.prompt_form, split=config.heldout_split,
        )
        trainer.add_callback(heldout_callback(evaluator, config.eval_every_steps, output_dir / "heldout.jsonl"))
    if progress and main_process:
        from affectgym.train.progress import show_progress

        show_progress(trainer, f"GRPO {config.mode} on {config.env_id}", ("reward", "loss"))
    trainer.train(resume_from_checkpoint=checkpoint)
    train_s = time.perf_counter() - start_s
    history = list(trainer.state.log_history)
    adapter_dir = output_dir / "adapter"
    trainer.save_model(str(adapter_dir))  # every process: sharded (ZeRO-3) weights are gathered; the main one writes
    figures: list[Path] = []
    if main_process:
        trainer.processing_class.save_pretrained(str(adapter_dir))
        from affectgym.train.plots import plot_reward_curves

        figures = plot_reward_curves(
            history, output_dir / "figures", title=f"GRPO {config.mode} on {config.env_id}, {config.model}"
        )
        # written last: with the adapter, it marks the training as finished (finished_training)
        (output_dir / "log_history.json").write_text(json.dumps(history, indent=2), encoding="utf-8")
    summary = run_summary(config, output_dir, history, figures, train_s=train_s)
    del trainer
    return finish_run(config, output_dir, summary, gpu=gpu, resume=resume) if main_process else summary


def finished_training(output_dir: str | Path) -> bool:
    """Whether the run in ``output_dir`` finished training (its adapter and log history are written)."""
    folder = Path(output_dir)
    return (folder / "log_history.json").is_file() and (folder / "adapter").is_dir()


def run_summary(config: TrainConfig, output_dir: Path, history: list[dict[str, Any]], figures: list[Path], *,
                train_s: float | None = None) -> dict[str, Any]:
    """The summary of a trained run, before its held-out evaluation.

    ``train_s``: the wall time of this call's loading and training; by default the log's
    ``train_runtime`` (the training loop alone).
    """
    rewards = [row["reward"] for row in history if "reward" in row]
    steps, runtime_s = logged_steps_and_runtime(history)
    return {
        "env_id": config.env_id,
        "model": config.model,
        "mode": config.mode,
        "seed": config.seed,
        "steps": steps,
        "train_s": round(runtime_s if train_s is None else train_s, 2),
        "first_reward": rewards[0] if rewards else None,
        "last_reward": rewards[-1] if rewards else None,
        "output_dir": str(output_dir),
        "adapter_dir": str(output_dir / "adapter"),
        "log_history": str(output_dir / "log_history.json"),
        "figures": [str(p) for p in figures],
    }


def logged_steps_and_runtime(history: list[dict[str, Any]]) -> tuple[int, float]:
    """The last optimizer step of a trainer's ``log_history`` and its ``train_runtime`` in seconds (0 when absent).

    >>> logged_steps_and_runtime([{"loss": 1.0, "step": 1}, {"loss": 0.5, "step": 2}, {"train_runtime": 3.5, "step": 2}])
    (2, 3.5)
    """
    steps = max((int(row.get("step", 0)) for row in history), default=0)
    runtime_s = next((row["train_runtime"] for row in reversed(history) if "train_runtime" in row), 0.0)
    return steps, runtime_s


def finish_run(config: TrainConfig, output_dir: Path, summary: dict[str, Any], *, gpu: bool,
               resume: bool = False) -> dict[str, Any]:
    """Add the held-out evaluation (resumed where it stopped with ``resume``) and write ``summary.json``."""
    if config.eval_episodes > 0:
        summary["eval"] = evaluate_base_and_trained(config, output_dir / "adapter", output_dir / "eval", gpu=gpu,
                                                    resume=resume)
    (output_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def evaluate_base_and_trained(
    config: TrainConfig, adapter_dir: str | Path, out_dir: str | Path, *, gpu: bool | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Held-out evaluation of the base model and the trained adapter, side by side, as they are deployed.

    Both play ``config.eval_episodes`` scenarios of the env's ``eval`` split through the eval
    runner (:func:`affectgym.eval.runner.run_eval`) as multi-step agents: the model's
    messages are parsed for tool calls, the tools' outputs come back as tool messages and the
    env scores the final answer, whatever the training mode. Decoding is greedy, at most
    :func:`eval_max_new_tokens` tokens a message: the run of
    ``affectgym eval ENV --agent hf:MODEL --adapter ADAPTER -t N`` that ``comparison.json``
    records as ``command``. Writes ``out_dir/base/``, ``out_dir/trained/`` (the runner's
    ``results.jsonl``, ``metadata.json``, ``summary.json``), ``out_dir/comparison.json`` and
    ``out_dir/comparison.png``.
    What the trained side played is recorded in ``out_dir/trained_adapter.json`` (the folder
    and its :func:`adapter_digest`): a resumed run whose adapter changed since (a DPO run
    resumed with more rounds) plays its trained side again instead of reporting the earlier
    adapter's episodes as its own.

    Args:
        config: The run's options (model, env, eval_episodes, seed).
        adapter_dir: The trained adapter (or full model, with ``lora_r=0``).
        out_dir: Output folder.
        gpu: Whether to use a GPU; default: :func:`has_gpu`.
        resume: Keep the episodes an interrupted evaluation already played and play the rest.

    Returns:
        ``{"base": {...}, "trained": {...}, "delta_reward": ...}`` with each side's mean
        reward, its 95% interval, components, accuracy (when the env reports one), tool use
        and folder.
    """
    from affectgym.eval.runner import EvalConfig, run_eval
    from affectgym.train.plots import plot_eval_comparison

    gpu = has_gpu() if gpu is None else gpu
    out_dir = Path(out_dir)
    env_kwargs = heldout_env_kwargs(config)
    max_new_tokens = eval_max_new_tokens(config)
    trained_spec, trained_adapter = trained_agent(config, adapter_dir)
    digest = adapter_digest(adapter_dir)
    played = out_dir / "trained_adapter.json"
    if (out_dir / "trained").exists() and not (resume and _played_digest(played) == digest):
        shutil.rmtree(out_dir / "trained")  # another adapter's episodes
    out_dir.mkdir(parents=True, exist_ok=True)
    played.write_text(json.dumps({"adapter": str(adapter_dir), "sha256": digest}, indent=2), encoding="utf-8")
    sides: dict[str, Any] = {}
    for side, spec, adapter in (("base", f"hf:{resolve_model(config.model)}", None),
                                ("trained", trained_spec, trained_adapter)):
        agent_kwargs = {"max_new_tokens": max_new_tokens, "temperature": 0.0, "dtype": "bfloat16" if gpu else "float32"}
        if adapter is not None:
            agent_kwargs["adapter"] = adapter
        result = run_eval(
            EvalConfig(
                env_id=config.env_id, agent=spec, out=out_dir / side, n=config.eval_episodes, split="eval",
                seed=config.seed, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs, concurrency=8, progress=False,
                max_fail_fraction=1.0, resume=resume and (out_dir / side / "results.jsonl").is_file(),
            )
        )
        summary = result.summary
        sides[side] = {
            "reward_mean": summary["reward"]["mean"],
            "reward_ci95": summary["reward"]["ci95"],
            "episodes": summary["episodes"],
            "reward_components": summary["reward_components"],
            "accuracy": (summary.get("classification") or {}).get("accuracy"),
            "tool_use": summary["tool_use"],
            "folder": str(out_dir / side),
        }
    sides["trained"]["adapter_sha256"] = digest
    command = (
        f"affectgym eval {config.env_id} --agent {trained_spec} "
        + (f"--adapter {trained_adapter} " if trained_adapter is not None else "")
        + f"--split eval -n {config.eval_episodes} -t {max_new_tokens} --seed {config.seed} -c 8"
        + (f" --env-kwargs '{json.dumps(env_kwargs)}'" if env_kwargs else "")
    )
    comparison = {
        "env_id": config.env_id, "mode": config.mode, "seed": config.seed, "split": "eval", **sides,
        "decoding": {"greedy": True, "max_new_tokens": max_new_tokens, "multi_step": True}, "command": command,
        "delta_reward": _difference(sides["trained"]["reward_mean"], sides["base"]["reward_mean"]),
    }
    (out_dir / "comparison.json").write_text(json.dumps(comparison, indent=2), encoding="utf-8")
    title = f"{config.env_id}, {config.model} ({config.algo}), {sides['base']['episodes']} multi-step episodes each"
    comparison["figure"] = str(plot_eval_comparison(sides["base"], sides["trained"], out_dir / "comparison.png", title=title))
    return comparison


def adapter_digest(adapter_dir: str | Path) -> str:
    """The SHA-256 of a trained adapter (or model) folder: every file's name and bytes, in name order.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (Path(folder) / "adapter_config.json").write_text("{}")
    ...     adapter_digest(folder)[:12]
    '403471bc4f16'
    """
    import hashlib

    folder = Path(adapter_dir)
    digest = hashlib.sha256()
    for path in sorted(item for item in folder.rglob("*") if item.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _played_digest(record: Path) -> str | None:
    """The adapter digest a held-out evaluation's trained side recorded; ``None`` when unknown."""
    try:
        return json.loads(record.read_text(encoding="utf-8")).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None


def trained_agent(config: TrainConfig, adapter_dir: str | Path) -> tuple[str, str | None]:
    """``(agent spec, adapter folder or None)`` of a run's trained model as its held-out evaluation plays it.

    A LoRA run (or one that kept training an ``init_adapter``) plays the base model with the
    adapter; a full fine-tune (``lora_r=0``) plays the model saved in ``adapter_dir``.

    >>> trained_agent(TrainConfig(env_id="x", model="./base"), "runs/x/adapter")
    ('hf:./base', 'runs/x/adapter')
    >>> trained_agent(TrainConfig(env_id="x", model="./base", lora_r=0), "runs/x/adapter")
    ('hf:runs/x/adapter', None)
    """
    if config.lora_r == 0 and config.init_adapter is None:
        return f"hf:{adapter_dir}", None
    return f"hf:{resolve_model(config.model)}", str(adapter_dir)


def heldout_env_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The env options a run's held-out evaluation plays with: the run's own, its split left to the evaluation.

    >>> heldout_env_kwargs(TrainConfig(env_id="x", env_kwargs={"split": "train", "max_turns": 4}))
    {'max_turns': 4}
    """
    return {key: value for key, value in config.env_kwargs.items() if key != "split"}


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


__all__ = [
    "LORA_TARGETS",
    "build_trainer",
    "chat_text_prompts",
    "check_lora_targets",
    "check_policy",
    "activation_checkpointing_option",
    "adapter_digest",
    "checkpoint_saving_options",
    "finish_run",
    "finished_training",
    "heldout_env_kwargs",
    "eval_max_new_tokens",
    "evaluate_base_and_trained",
    "grpo_config",
    "has_gpu",
    "load_policy",
    "logged_steps_and_runtime",
    "lora_target_modules",
    "peft_config",
    "prepare_tool_parsing",
    "resolve_model",
    "run_summary",
    "supervised_anchor",
    "train",
    "trainable_policy",
    "trained_agent",
]
