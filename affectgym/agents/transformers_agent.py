"""An agent backed by a local causal language model (transformers).

The prompt is the tokenizer's chat template applied to the env's messages with the env's
tool schemas (``apply_chat_template(messages, tools=...)``); the generated text, tool calls
included, is the action. Concurrent episodes share one model through a batching queue: the
requests that arrive within ``batch_wait_s`` of each other (up to ``max_batch_size``) are
answered together. By default each is generated on its own, reusing the key/value cache of
the longest prefix it shares with a recent generation (:mod:`affectgym.agents.prefix_cache`),
so a multi-step episode reads only each turn's new tokens; with ``prefix_cache=0`` they go
into one left-padded ``generate`` call and every prompt is read whole.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from affectgym.agents.base import Agent, TokenCount, raw_text_messages
from affectgym.agents.prefix_cache import PrefixCache
from affectgym.hub import pretrained_problem
from affectgym.library_output import hf_progress_bars_hidden
from affectgym.models import CHATML_TOOL_TEMPLATE, load_pretrained, resolve_model

#: A local model's longest message by default, in tokens: a tool call or an answer takes 20-60,
#: and a base model that never ends its turn costs at most this much a message on a CPU.
DEFAULT_MAX_NEW_TOKENS = 128


class GenerationBatcher:
    """Gathers prompts from concurrent callers into batched calls of ``generate_batch``.

    Args:
        generate_batch: ``fn(prompts) -> replies``, called from one background thread only.
        max_batch_size: Most prompts per call.
        batch_wait_s: How long the first prompt of a batch waits for company.

    >>> batcher = GenerationBatcher(lambda prompts: [p.upper() for p in prompts])
    >>> batcher.submit("hi")
    'HI'
    >>> batcher.close()
    """

    def __init__(self, generate_batch: Callable[[list[str]], list[str]], max_batch_size: int = 8, batch_wait_s: float = 0.005):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.generate_batch = generate_batch
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_s
        self.batch_sizes: list[int] = []
        self._queue: queue.Queue[tuple[str, concurrent.futures.Future[str]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, prompt: str) -> str:
        """Generate a reply to ``prompt`` (blocks until its batch is done)."""
        future: concurrent.futures.Future[str] = concurrent.futures.Future()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="affectgym-generate", daemon=True)
                self._thread.start()
            self._queue.put((prompt, future))
        return future.result()

    def close(self) -> None:
        """Stop the background thread (pending prompts are answered first)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self._queue.put(None)
                self._thread.join(timeout=60)
            self._thread = None

    def _serve(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            deadline = time.monotonic() + self.batch_wait_s
            while len(batch) < self.max_batch_size:
                remaining_s = deadline - time.monotonic()
                try:
                    item = self._queue.get(timeout=remaining_s) if remaining_s > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            self.batch_sizes.append(len(batch))
            try:
                replies = self.generate_batch([prompt for prompt, _ in batch])
            except Exception as exc:  # handed to every waiting caller, which records it
                for _, future in batch:
                    future.set_exception(exc)
            else:
                for (_, future), reply in zip(batch, replies, strict=True):
                    future.set_result(reply)
            if stop:
                return


class TransformersAgent(Agent):
    """A local causal LM as an agent.

    Args:
        model: An alias (``"smollm2-135m"``), a local folder, a hub id, or a loaded
            ``PreTrainedModel`` (then ``tokenizer`` is required).
        tokenizer: A tokenizer object or folder; default: the model's.
        adapter: Folder of a PEFT (LoRA) adapter to apply, e.g. a trained checkpoint.
        max_new_tokens: Longest reply (:data:`DEFAULT_MAX_NEW_TOKENS`).
        temperature: Sampling temperature; ``0`` means greedy decoding.
        top_p: Nucleus sampling mass (when sampling).
        top_k: Top-k sampling (when sampling); ``None`` leaves the model's default.
        repetition_penalty: Passed to ``generate`` when given.
        max_batch_size: Most concurrent requests answered together.
        batch_wait_s: How long a request waits for others to join its batch.
        prefix_cache: Key/value caches of recent generations kept for reuse (one an episode
            is enough); ``0`` reads every prompt whole, in left-padded batches.
        device: ``"cpu"``, ``"cuda"``...; default: CUDA when available.
        dtype: Torch dtype name for loading (``"float32"``, ``"bfloat16"``, ``"auto"``).
        seed: Seeds torch's generator once at load (sampled replies are then reproducible
            for a fixed order of requests).
        chat_template: Template overriding the tokenizer's; when the tokenizer has none and
            uses ChatML tokens, affectgym's tool-capable ChatML template is used.
        name: Name shown in tables.
    """

    def __init__(
        self,
        model: Any = "smollm2-135m",
        *,
        tokenizer: Any = None,
        adapter: str | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = 0.0,
        top_p: float = 1.0,
        top_k: int | None = None,
        repetition_penalty: float | None = None,
        max_batch_size: int = 8,
        batch_wait_s: float = 0.005,
        prefix_cache: int = 8,
        device: str | None = None,
        dtype: str = "float32",
        seed: int | None = 0,
        chat_template: str | None = None,
        name: str | None = None,
    ):
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
        if isinstance(prefix_cache, bool) or not isinstance(prefix_cache, int) or prefix_cache < 0:
            raise ValueError(f"prefix_cache must be a whole number of caches >= 0 (0: none), got {prefix_cache!r}")
        path = resolve_model(model) if isinstance(model, str) else None
        # Checked before torch loads: a missing folder or an offline hub id fails at once
        # instead of after from_pretrained's retries.
        for what, source in (("model", path), ("adapter", adapter)):
            problem = pretrained_problem(source) if source is not None else None
            if problem is not None:
                raise OSError(f"cannot load the {what}: {problem}")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model_ref = model if isinstance(model, str) else type(model).__name__
        self.adapter = adapter
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        if isinstance(model, str):
            torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
            with hf_progress_bars_hidden():
                loaded = load_pretrained(AutoModelForCausalLM.from_pretrained, path, dtype=torch_dtype)
            tokenizer = AutoTokenizer.from_pretrained(tokenizer or path) if not _is_tokenizer(tokenizer) else tokenizer
        else:
            loaded = model
            if tokenizer is None:
                raise ValueError("TransformersAgent(model=<a loaded model>) needs tokenizer=<its tokenizer>")
            if isinstance(tokenizer, str):
                tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        if adapter is not None:
            from peft import PeftModel

            loaded = load_pretrained(PeftModel.from_pretrained, loaded, adapter).merge_and_unload()
        self.model = loaded.to(device).eval()
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if chat_template is not None:
            self.tokenizer.chat_template = chat_template
        elif not getattr(self.tokenizer, "chat_template", None):
            if "<|im_start|>" not in self.tokenizer.get_vocab():
                raise ValueError(
                    f"the tokenizer of {self.model_ref!r} has no chat template and no ChatML tokens; "
                    "pass chat_template=<a Jinja template that renders tools>"
                )
            self.tokenizer.chat_template = CHATML_TOOL_TEMPLATE
        self.sampling = {
            "max_new_tokens": int(max_new_tokens),
            "temperature": float(temperature),
            "top_p": float(top_p),
            "top_k": top_k,
            "repetition_penalty": repetition_penalty,
        }
        self.name = name or (self.model_ref if adapter is None else f"{self.model_ref}+{adapter}")
        if seed is not None:
            torch.manual_seed(seed)
        self._generation_config = self._make_generation_config()
        self._tokens = TokenCount()
        self.prefix_cache = PrefixCache(prefix_cache) if prefix_cache else None
        self.batcher = GenerationBatcher(self.generate_batch, max_batch_size=max_batch_size, batch_wait_s=batch_wait_s)

    def prompt(self, info: Mapping[str, Any]) -> str:
        """The prompt text for the env's current messages and tools."""
        tools = list(info.get("tools") or []) or None
        return self.tokenizer.apply_chat_template(
            raw_text_messages(info.get("messages") or []), tools=tools, add_generation_prompt=True, tokenize=False
        )

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """Generate the next message (batched with concurrent episodes)."""
        return self.batcher.submit(self.prompt(info))

    def generate_batch(self, prompts: Sequence[str]) -> list[str]:
        """Generate one reply per prompt: each on its own from its cached prefix, or all in one left-padded call."""
        if self.prefix_cache is not None:
            return [self._generate_from_prefix(prompt, self.prefix_cache) for prompt in prompts]
        import torch

        encoded = self.tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
        encoded = {key: value.to(self.device) for key, value in encoded.items()}
        with torch.inference_mode():
            output = self.model.generate(**encoded, generation_config=self._generation_config)
        return self._replies(output[:, encoded["input_ids"].shape[1]:])

    def _generate_from_prefix(self, prompt: str, prefix_cache: PrefixCache) -> str:
        """One reply, reading only the prompt's tokens after the longest prefix cached; its cache is kept."""
        import torch
        from transformers import DynamicCache

        prompt_ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        cache = prefix_cache.take(prompt_ids)
        if cache is None:
            cache = DynamicCache(config=self.model.config)
        input_ids = torch.tensor([prompt_ids], device=self.device)
        with torch.inference_mode():
            output = self.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), cache=cache,
                                         generation_config=self._generation_config)
        prefix_cache.put(output[0, :cache.get_seq_length()].tolist(), cache)
        return self._replies(output[:, len(prompt_ids):])[0]

    def _replies(self, new_tokens: Any) -> list[str]:
        """The decoded replies of generated rows, counted up to each one's stop token."""
        self._tokens.add(sum(_reply_length(row.tolist(), self._generation_config.eos_token_id) for row in new_tokens))
        return [self.tokenizer.decode(row, skip_special_tokens=True).strip() for row in new_tokens]

    def tokens_generated(self) -> int:
        """Tokens generated so far by every worker (up to each reply's end-of-turn token, padding not counted)."""
        return self._tokens.total

    def describe(self) -> dict[str, Any]:
        """Class, model, adapter, sampling settings and the prefix caches kept."""
        cached = self.prefix_cache.max_entries if self.prefix_cache is not None else 0
        return {**super().describe(), "model": self.model_ref, "adapter": self.adapter, **self.sampling, "prefix_cache": cached}

    def close(self) -> None:
        """Stop the batching thread."""
        self.batcher.close()

    def _make_generation_config(self) -> Any:
        return generation_config(self.model, self.tokenizer, **self.sampling)


def generation_config(model: Any, tokenizer: Any, *, max_new_tokens: int, temperature: float = 0.0, top_p: float = 1.0,
                      top_k: int | None = None, repetition_penalty: float | None = None) -> Any:
    """How a local model decodes one message: up to ``max_new_tokens``, stopping at the end of its turn.

    The stop tokens are the model's and the tokenizer's end-of-sequence tokens and ChatML's
    ``<|im_end|>``; ``temperature=0`` decodes greedily. :class:`TransformersAgent` and the
    held-out evaluation of training (:mod:`affectgym.train.heldout`) both decode with it.
    """
    from transformers import GenerationConfig

    eos_ids = []
    for candidate in (model.generation_config.eos_token_id, tokenizer.eos_token_id):
        for token_id in candidate if isinstance(candidate, list) else [candidate]:
            if token_id is not None and token_id not in eos_ids:
                eos_ids.append(token_id)
    im_end = tokenizer.get_vocab().get("<|im_end|>")
    if im_end is not None and im_end not in eos_ids:
        eos_ids.append(im_end)
    settings: dict[str, Any] = {
        "max_new_tokens": int(max_new_tokens),
        "eos_token_id": eos_ids,
        "pad_token_id": tokenizer.pad_token_id,
        "do_sample": temperature > 0,
    }
    if settings["do_sample"]:
        settings.update(temperature=temperature, top_p=top_p)
        if top_k is not None:
            settings["top_k"] = top_k
    if repetition_penalty is not None:
        settings["repetition_penalty"] = repetition_penalty
    return GenerationConfig(**settings)


def _reply_length(token_ids: list[int], eos_ids: list[int]) -> int:
    """How many of a generated row's tokens the model produced: up to its first stop token, included."""
    for position, token_id in enumerate(token_ids):
        if token_id in eos_ids:
            return position + 1
    return len(token_ids)


def _is_tokenizer(value: Any) -> bool:
    return value is not None and not isinstance(value, str)


__all__ = ["DEFAULT_MAX_NEW_TOKENS", "GenerationBatcher", "TransformersAgent", "generation_config"]
