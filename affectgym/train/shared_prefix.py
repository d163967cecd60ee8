"""GRPO that runs each distinct prompt through the model once per step.

GRPO samples ``num_generations`` completions of every prompt, and TRL runs the model over
prompt + completion for every one of them, when sampling and again in the loss. With the
short Sarcasm-v0 form (a ~130-token prompt, a 1-token answer) 99% of those tokens are copies
of a prompt, and on a CPU their forward and backward passes are the whole cost of a step.

:class:`SharedPrefixGRPOTrainer` runs each distinct prompt once, keeps its key/value cache
(``transformers``' prefix caching), repeats the cache for the completions of that prompt and
runs only the completion tokens from it. The log-probabilities, and so the loss and its
gradient, are those of TRL's own forward pass, and sampling draws from the same
distribution (tests pin both). One-token completions sampled by temperature alone are
drawn from the distinct prompts' last logits, with no cache repeated for each completion
(with a ~700-token prompt and 256 completions that cache would be 8 GB). A step of 2 prompts x 128 completions then costs 3.3 s on one
CPU core against 2.0 s for 2 x 8 (17.6 s in TRL's trainer; ``benchmarks/bench_learning.py``),
and larger groups are the lever that keeps GRPO's sampled gradient from collapsing onto one
answer (``benchmarks/bench_estimator.py``).

Multi-turn rollouts (TRL's ``environment_factory``) go further. TRL builds each turn's prompt
by appending token ids (the last prompt, the reply, the tool results), so every turn extends
the one before. The trainer keeps each rollout's cache after it generates
(:class:`RolloutCaches`, for the length of one step) and the next turn runs only the tool
results' tokens from it, the rollouts of a turn batched in one ``generate``. The loss pass
runs the shared opening prompt once, and each rollout's turns and tool results from it.

It applies to text-only rollouts on TRL's default generation path; with vLLM, continuous
batching, images or a rollout of distinct prompts, TRL's code runs unchanged. It overrides
two private methods of ``GRPOTrainer``, so it runs only on the TRL releases it is tested on
(:data:`SUPPORTED_TRL`, the range ``setup.cfg`` pins); on another it refuses to start.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from trl import GRPOTrainer
from trl.extras.profiling import profiling_context
from trl.models import unwrap_model_for_generation
from trl.trainer.utils import entropy_from_logits, pad, selective_log_softmax

from affectgym.agents.prefix_cache import common_prefix_length

#: The TRL releases whose ``GRPOTrainer`` internals this trainer is tested against.
SUPPORTED_TRL = ">=1.16,<1.17"


def check_trl_version(version: str) -> None:
    """Refuse a TRL release outside :data:`SUPPORTED_TRL`, naming it and what to do.

    >>> check_trl_version("1.16.0")
    >>> check_trl_version("2.0.0")
    Traceback (most recent call last):
    ...
    RuntimeError: SharedPrefixGRPOTrainer overrides private methods of TRL's GRPOTrainer and is tested on trl>=1.16,<1.17, not trl 2.0.0; install a tested release (pip install 'trl>=1.16,<1.17') or train with TRL's own trainer (--no-share-prompts)
    """
    from packaging.specifiers import SpecifierSet

    if version not in SpecifierSet(SUPPORTED_TRL):
        raise RuntimeError(
            f"SharedPrefixGRPOTrainer overrides private methods of TRL's GRPOTrainer and is tested on trl{SUPPORTED_TRL}, "
            f"not trl {version}; install a tested release (pip install 'trl{SUPPORTED_TRL}') or train with TRL's own "
            "trainer (--no-share-prompts)"
        )


def distinct_rows(ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The distinct (token ids, attention mask) rows of a padded batch.

    Args:
        ids: ``(batch, length)`` token ids.
        mask: ``(batch, length)`` attention mask.

    Returns:
        ``(distinct_ids, distinct_mask, inverse)``: row ``i`` of the batch is row ``inverse[i]``
        of the distinct ones.
    """
    keys = torch.cat([ids, mask.to(ids.dtype)], dim=1)
    distinct, inverse = torch.unique(keys, dim=0, return_inverse=True)
    return distinct[:, : ids.size(1)], distinct[:, ids.size(1) :].to(mask.dtype), inverse


def generation_positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids of left-padded rows as ``generate`` counts them (pads get position 1)."""
    positions = mask.long().cumsum(-1) - 1
    return positions.masked_fill(mask == 0, 1)


class RolloutCaches:
    """The key/value caches of a step's rollouts, one row each, under the token ids each holds.

    A cache is valid only for the weights that computed it, so the trainer keeps one store for
    the rollouts of one step and drops it after. Each entry holds, per layer, the keys and
    values of one sequence, ``(1, heads, tokens, head_dim)``: about 46 KB a token for
    SmolLM2-135M in fp32, so 8 rollouts of 800 tokens hold about 300 MB.

    Attributes:
        reused_tokens: Prompt tokens read from a cache so far.
        prefilled_tokens: Prompt tokens the model had to read so far.
    """

    def __init__(self) -> None:
        self.entries: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self.reused_tokens = 0
        self.prefilled_tokens = 0

    def longest_prefix(self, ids: list[int]) -> tuple[tuple[int, ...] | None, int]:
        """The key of the entry sharing the longest prefix with ``ids`` (at most all but its last token) and that
        length."""
        best, shared = None, 0
        for key in self.entries:
            length = min(common_prefix_length(key, ids), len(ids) - 1)
            if length > shared:
                best, shared = key, length
        return best, shared

    def keep(self, cache: DynamicCache, rows: list[list[int]], starts: list[int]) -> None:
        """Keep each row of a batch's ``cache``: row ``i`` holds ``rows[i]`` from column ``starts[i]`` on (its left
        padding before), as far as the cache reaches."""
        columns = cache.get_seq_length()
        for index, (ids, start) in enumerate(zip(rows, starts, strict=True)):
            stop = min(start + len(ids), columns)
            self.entries[tuple(ids[: stop - start])] = [
                (layer.keys[index : index + 1, :, start:stop].clone(), layer.values[index : index + 1, :, start:stop].clone())
                for layer in cache.layers
            ]

    def batched(self, prompts: list[list[int]], width: int) -> DynamicCache | None:
        """A cache for ``prompts`` left-padded to ``width`` columns, built from the entries.

        Every row's cache must cover the same leading columns, so the batch covers the columns before the first
        token that some row has no entry for (a row that shares more recomputes the rest). ``None`` when no row has
        an entry.
        """
        found = [self.longest_prefix(ids) for ids in prompts]
        lefts = [width - len(ids) for ids in prompts]
        columns = min(left + shared for left, (_, shared) in zip(lefts, found, strict=True))
        if all(key is None for key, _ in found):
            return None
        if columns < 1:
            self.prefilled_tokens += sum(map(len, prompts))
            return None
        reference = self.entries[next(key for key, _ in found if key is not None)]
        data = []
        for layer, (keys, _) in enumerate(reference):
            shape = (len(prompts), keys.size(1), columns, keys.size(3))
            layer_keys, layer_values = keys.new_zeros(shape), keys.new_zeros(shape)
            for row, (left, (key, _)) in enumerate(zip(lefts, found, strict=True)):
                if columns > left:  # the row's first (columns - left) tokens come from its entry
                    row_keys, row_values = self.entries[key][layer]
                    layer_keys[row, :, left:] = row_keys[0, :, : columns - left]
                    layer_values[row, :, left:] = row_values[0, :, : columns - left]
            data.append((layer_keys, layer_values))
        for key, shared in found:  # a prompt that extends a whole entry replaces it once generated
            if key is not None and shared == len(key):
                self.entries.pop(key, None)
        self.reused_tokens += sum(max(columns - left, 0) for left in lefts)
        self.prefilled_tokens += sum(len(ids) - max(columns - left, 0) for ids, left in zip(prompts, lefts, strict=True))
        return DynamicCache(data)


class SharedPrefixGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` that computes each distinct prompt once per step (see the module docstring).

    Takes the same arguments as ``GRPOTrainer``.

    Raises:
        RuntimeError: The installed TRL is not one it is tested on (:func:`check_trl_version`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import trl

        check_trl_version(trl.__version__)
        super().__init__(*args, **kwargs)
        #: The caches of the rollouts of the step being generated (``None`` between steps).
        self.rollout_caches: RolloutCaches | None = None

    def _generate(self, prompts: list):
        self.rollout_caches = RolloutCaches()
        try:
            return super()._generate(prompts)
        finally:
            self._log_cache_use(self.rollout_caches)
            self.rollout_caches = None

    def _log_cache_use(self, caches: RolloutCaches) -> None:
        """Log the share of the later turns' prompt tokens read from the rollouts' caches."""
        read = caches.reused_tokens + caches.prefilled_tokens
        if read:
            mode = "train" if self.model.training else "eval"
            self._metrics[mode]["rollout_cache/reused_fraction"].append(caches.reused_tokens / read)

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        rows = [torch.tensor(ids) for ids in prompt_ids]
        input_ids = pad(rows, padding_value=self._tokenizer.pad_token_id, padding_side="left")
        attention_mask = pad([torch.ones_like(row) for row in rows], padding_value=0, padding_side="left")
        distinct_ids, distinct_mask, inverse = distinct_rows(input_ids, attention_mask)
        caches = self.rollout_caches
        if self.use_vllm or self.use_transformers_continuous_batching or images is not None or multimodal_fields \
                or has_tool_images or min(map(len, prompt_ids)) < 2 \
                or (caches is None and len(distinct_ids) == len(input_ids)):
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations, has_tool_images)
        from_rollouts = None if caches is None else caches.batched(prompt_ids, input_ids.size(1))
        device = self.accelerator.device
        input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
        distinct_ids, distinct_mask, inverse = distinct_ids.to(device), distinct_mask.to(device), inverse.to(device)
        with (
            profiling_context(self, "transformers.generate"),
            unwrap_model_for_generation(
                self.model_wrapped,
                self.accelerator,
                gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                generation_kwargs=self.generation_kwargs,
                gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs,
            ) as unwrapped_model,
            torch.no_grad(),
            self._dist.summon_full_params(self.model_wrapped, recurse=False),
        ):
            if self._samples_one_token_by_temperature() and from_rollouts is None:
                # One token from the distinct prompts' last logits: no cache to repeat for every completion.
                logits = unwrapped_model(
                    input_ids=distinct_ids, attention_mask=distinct_mask,
                    position_ids=generation_positions(distinct_mask), logits_to_keep=1,
                ).logits[:, -1].float()
                probabilities = torch.softmax(logits[inverse] / self.generation_config.temperature, dim=-1)
                return torch.multinomial(probabilities, 1).cpu().tolist(), None
            if from_rollouts is not None:  # a later turn: each rollout's cache, to the tool results
                cache = from_rollouts
            elif len(distinct_ids) < len(input_ids):
                # The cache of every prompt token but the last, which generate runs to start sampling.
                cache = unwrapped_model(
                    input_ids=distinct_ids[:, :-1],
                    attention_mask=distinct_mask[:, :-1],
                    position_ids=generation_positions(distinct_mask)[:, :-1],
                    use_cache=True,
                    logits_to_keep=1,
                ).cache
                cache.batch_select_indices(inverse)
            else:
                cache = DynamicCache()
            sequences = unwrapped_model.generate(
                input_ids=input_ids, attention_mask=attention_mask, cache=cache,
                generation_config=self.generation_config,
            )
        completions = self._completions_up_to_eos(sequences[:, input_ids.size(1) :])
        if caches is not None:
            caches.keep(cache, [ids + completion for ids, completion in zip(prompt_ids, completions, strict=True)],
                        [input_ids.size(1) - len(ids) for ids in prompt_ids])
        return completions, None

    def _samples_one_token_by_temperature(self) -> bool:
        """Whether sampling is one token from the temperature-scaled softmax and nothing else.

        That is what ``generate`` does then (its temperature warper, then a multinomial
        draw), so it can be done on the distinct prompts' logits directly.
        """
        config = self.generation_config
        return (
            config.max_new_tokens == 1 and config.do_sample and config.temperature > 0
            and config.top_k in (None, 0) and config.top_p in (None, 1.0) and not config.min_p
            and config.repetition_penalty in (None, 1.0) and not getattr(config, "bad_words_ids", None)
        )

    def _completions_up_to_eos(self, completion_ids: torch.Tensor) -> list[list[int]]:
        """Each row's tokens up to and including its first end-of-sequence token."""
        is_eos = torch.isin(completion_ids, torch.tensor(self.eos_token_ids, device=completion_ids.device))
        lengths = torch.where(is_eos.any(dim=1), is_eos.int().argmax(dim=1) + 1, completion_ids.size(1))
        return [row[:length].tolist() for row, length in zip(completion_ids.cpu(), lengths.cpu(), strict=True)]

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **multimodal: Any):
        prompt_ids, prompt_mask = input_ids[:, :-logits_to_keep], attention_mask[:, :-logits_to_keep]
        distinct_ids, distinct_mask, inverse = distinct_rows(prompt_ids, prompt_mask)
        if compute_aux_loss or any(value is not None for value in multimodal.values()) \
                or len(distinct_ids) == len(input_ids):
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss,
                **multimodal,
            )
        completion_ids = input_ids[:, -logits_to_keep:]
        with self.accelerator.autocast():
            # Positions count from the first column, padding included, as in TRL's forward pass.
            prompt_out = model(input_ids=distinct_ids, attention_mask=distinct_mask, use_cache=True, logits_to_keep=1)
            logits = prompt_out.logits[inverse]  # predicts the first completion token
            if logits_to_keep > 1:
                cache = prompt_out.cache
                cache.batch_select_indices(inverse)
                completion_out = model(input_ids=completion_ids[:, :-1], attention_mask=attention_mask[:, :-1],
                                       cache=cache, use_cache=True)
                logits = torch.cat([logits, completion_out.logits], dim=1)
        logits = logits.float() / self.temperature
        logps = selective_log_softmax(logits, completion_ids)
        entropies = entropy_from_logits(logits) if compute_entropy else None
        return logps, entropies, None


__all__ = ["SUPPORTED_TRL", "RolloutCaches", "SharedPrefixGRPOTrainer", "check_trl_version", "distinct_rows", "generation_positions"]
