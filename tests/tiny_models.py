"""Tiny causal language models for tests: built from a config, no hub access.

:func:`tiny_causal_lm` writes a randomly initialised Qwen2 (or Llama) model of a few
hundred thousand parameters and a byte-level BPE tokenizer trained on the fly with
``tokenizers``, with the ChatML tool-calling chat template of affectgym. The directory loads
with ``AutoModelForCausalLM.from_pretrained`` / ``AutoTokenizer.from_pretrained`` like a real
checkpoint, so tests exercise the same code paths as the real models.

:func:`teach_tiny_lm` fits such a model for a few steps on (messages, completion) pairs, so a
test can make it produce a known reply (for example a tool call) from a known prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Special tokens of the ChatML format (the same as Qwen2.5's and SmolLM2's).
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

_CORPUS = [
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n",
    "<|im_start|>user\nHello, how are you today?<|im_end|>\n<|im_start|>assistant\nI am fine.<|im_end|>\n",
    '<tool_call>\n{"name": "read_note", "arguments": {}}\n</tool_call>',
    '<tool_call>{"name": "get_transcript", "arguments": {"lines": 3}}</tool_call>',
    "<tool_response>\nThe sun came out and my sister called.\n</tool_response>",
    "<answer>happy</answer> <answer>sad</answer> sarcastic sincere confidence label",
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n<tools>\n{"type": "function", '
    '"function": {"name": "read_note", "description": "Read the note.", "parameters": {"type": "object", '
    '"properties": {}, "required": []}}}\n</tools>',
    "The train left without me again. Nobody came to the reading. I found the letter.",
    "Read the note with read_note, then answer. A note is waiting for you. Error: the message is empty.",
    "0123456789 {}[]():;,.!?'\"-_/\\ abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ",
]


def tiny_causal_lm(
    tmp_path: str | Path,
    *,
    architecture: str = "qwen2",
    hidden_size: int = 64,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    vocab_size: int = 600,
    seed: int = 0,
    name: str = "tiny-lm",
) -> Path:
    """Save a tiny random causal LM with a ChatML tool-calling tokenizer; return its folder.

    Args:
        tmp_path: Parent folder (a pytest ``tmp_path`` works).
        architecture: ``"qwen2"`` or ``"llama"``.
        hidden_size: Model width.
        num_hidden_layers: Decoder layers.
        num_attention_heads: Attention heads (two key/value heads).
        vocab_size: BPE vocabulary size to train (the model's embedding rows match it).
        seed: Seed of the random weights.
        name: Sub-folder name.

    Returns:
        ``tmp_path / name``, loadable with ``from_pretrained``.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    from affectgym.models import CHATML_TOOL_TEMPLATE

    directory = Path(tmp_path) / name
    tokenizer_model = Tokenizer(models.BPE())
    tokenizer_model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer_model.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer_model.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer_model,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    tokenizer.chat_template = CHATML_TOOL_TEMPLATE
    common: dict[str, Any] = {
        "vocab_size": tokenizer_model.get_vocab_size(),
        "hidden_size": hidden_size,
        "intermediate_size": hidden_size * 2,
        "num_hidden_layers": num_hidden_layers,
        "num_attention_heads": num_attention_heads,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        "bos_token_id": None,
        "tie_word_embeddings": True,
    }
    torch.manual_seed(seed)
    if architecture == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**common))
    elif architecture == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common))
    else:
        raise ValueError(f"architecture must be 'qwen2' or 'llama', got {architecture!r}")
    model.generation_config.eos_token_id = common["eos_token_id"]
    model.generation_config.pad_token_id = common["pad_token_id"]
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def teach_tiny_lm(
    directory: str | Path,
    examples: Sequence[tuple[Sequence[dict[str, Any]], str]],
    *,
    tools: Sequence[dict[str, Any]] | None = None,
    steps: int = 150,
    learning_rate: float = 1e-2,
    seed: int = 0,
) -> Path:
    """Fit the model in ``directory`` so that each prompt's reply is its completion; save in place.

    Args:
        directory: A folder written by :func:`tiny_causal_lm`.
        examples: ``(messages, completion)`` pairs; the prompt is the chat template applied to
            ``messages`` (with ``tools``) plus the generation prompt, exactly as
            ``TransformersAgent`` renders it (assistant turns as raw text); the completion is
            followed by the end-of-turn token.
        tools: Tool schemas given to the chat template.
        steps: Optimiser steps (full batch).
        learning_rate: Adam learning rate.
        seed: Seed of the optimisation.

    Returns:
        ``directory``.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from affectgym.agents.base import raw_text_messages

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory)
    rows = []
    for messages, completion in examples:
        prompt = tokenizer.apply_chat_template(
            raw_text_messages(messages), tools=list(tools) if tools else None, add_generation_prompt=True, tokenize=False
        )
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        completion_ids = tokenizer(completion + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        rows.append((prompt_ids + completion_ids, [-100] * len(prompt_ids) + completion_ids))
    width = max(len(ids) for ids, _ in rows)
    pad_id = tokenizer.pad_token_id
    input_ids = torch.tensor([[pad_id] * (width - len(ids)) + ids for ids, _ in rows])
    labels = torch.tensor([[-100] * (width - len(lab)) + lab for _, lab in rows])
    attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids, _ in rows])
    positions = (attention.cumsum(-1) - 1).clamp(min=0)  # as generate() numbers left-padded rows
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: extra threads only contend on a shared CPU
    try:
        model.train()
        for _ in range(steps):
            loss = model(input_ids=input_ids, attention_mask=attention, position_ids=positions, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(directory)
    return Path(directory)
