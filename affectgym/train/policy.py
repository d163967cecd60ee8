"""The policy a training run trains: its model and tokenizer, its LoRA adapter, its chat template.

Every language-model algorithm (GRPO, SFT, DPO) loads the policy here:

* :func:`check_policy` fails before any weights load when the model, the ``init_adapter`` or
  the LoRA options cannot be what the run asks (``--print-config`` refuses the same);
* :func:`load_policy` loads the model (fp32 on CPU, bf16 on GPU) and its tokenizer, with
  affectgym's ChatML tool template when the model has none;
* :func:`trainable_policy` gives the trainer a fresh LoRA config (:func:`peft_config`, on the
  modules :func:`lora_target_modules` names) or the ``init_adapter`` to keep training;
* :func:`training_chat_template` marks the assistant's spans for the supervised losses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from affectgym.models import load_pretrained
from affectgym.train.adapters import check_init_adapter
from affectgym.train.config import TrainConfig

#: LoRA target modules by ``config.model_type``; other architectures fall back to "all-linear".
LORA_TARGETS: dict[str, list[str]] = {
    **{name: ["q_proj", "k_proj", "v_proj", "o_proj"] for name in (
        "llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3_text", "olmo2", "smollm3", "phi3",
    )},
    "gpt2": ["c_attn", "c_proj"],
    "gpt_neox": ["query_key_value", "dense"],
}


def resolve_model(name_or_path: str) -> str:
    """The folder (or hub id) of a model alias, through :mod:`affectgym.models`.

    >>> resolve_model("./some/folder")
    './some/folder'
    """
    try:
        from affectgym.models import resolve_model as resolve
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


def load_policy(config: TrainConfig, *, gpu: bool) -> tuple[Any, Any, str]:
    """The model (fp32 on CPU, bf16 on GPU), its tokenizer and the resolved path."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(config.model)
    bf16 = gpu if config.bf16 is None else bool(config.bf16)
    model = load_pretrained(AutoModelForCausalLM.from_pretrained, path, dtype=torch.bfloat16 if bf16 else torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        from affectgym.models import CHATML_TOOL_TEMPLATE

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
    return load_pretrained(PeftModel.from_pretrained, model, config.init_adapter, is_trainable=True), None


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
            "(affectgym.models.CHATML_TOOL_TEMPLATE has them)"
        ) from None
    return patched or tokenizer.chat_template


__all__ = [
    "LORA_TARGETS",
    "check_lora_targets",
    "check_policy",
    "has_gpu",
    "load_policy",
    "lora_target_modules",
    "peft_config",
    "resolve_model",
    "trainable_policy",
    "training_chat_template",
]
