"""A supervised anchor for GRPO: keep the demonstrated protocol while the answer is optimised.

Flat GRPO on the chat-form prompts trains the first token of the answer turn, and the same
adapter writes the first token of every assistant turn: measured on SmolLM2-135M after a
protocol warm start, 60 steps moved the opening turn too, and the agent answered at once
instead of calling its tools (multi-step tool use 0.00 while flat accuracy was 1.00).

:class:`AnchoredGRPOMixin` adds ``anchor_coef`` times the mean negative log-likelihood of
demonstrated assistant turns to each GRPO loss (the pretraining mix of InstructGPT's
PPO-ptx, here on demonstrations): with the label-blind protocol demonstrator's episodes
(:mod:`affectgym.agents.protocol`) the anchor keeps which tools are called, how, and that
the answer ends the turn, and it carries no label, so it cannot teach the answer. The
demonstrations are rendered and masked exactly as ``--algo sft`` trains them
(:func:`~affectgym.train.demos.assistant_token_mask`); each step takes the next
``anchor_rows`` of them, in a seeded order. The step's anchor loss is logged as
``anchor_nll``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from affectgym.train.demos import assistant_token_mask, through_last


class SupervisedAnchor:
    """Demonstrations tokenized once, served a few rows a step, in a seeded cyclic order.

    Args:
        tokenizer: The policy's tokenizer, with a chat template that marks the assistant's
            spans (``{% generation %}``).
        rows: Demonstrations ``{"messages", "tools"}`` (``tools``: JSON text of the tool schemas).
        rows_per_step: Demonstrations in each step's anchor loss.
        seed: Seed of the order.

    Raises:
        ValueError: No demonstration has an assistant token to learn.
    """

    def __init__(self, tokenizer: Any, rows: Sequence[Mapping[str, Any]], *, rows_per_step: int = 1,
                 seed: int = 0) -> None:
        self.examples: list[tuple[list[int], list[int]]] = []
        for row in rows:
            messages = through_last(row["messages"], "assistant")  # what follows teaches nothing
            if not messages:
                continue
            ids, mask = assistant_token_mask(tokenizer, messages, json.loads(row.get("tools") or "[]"))
            if any(mask):
                self.examples.append((ids, mask))
        if not self.examples:
            raise ValueError("the anchor's demonstrations have no assistant turn to learn")
        self.rows_per_step = rows_per_step
        self.pad_token_id = tokenizer.pad_token_id
        self._order = random.Random(seed)
        self._queue: list[int] = []

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(input_ids, attention_mask, labels)`` of the next rows, right-padded; labels -100 off the assistant's tokens."""
        picked = []
        for _ in range(self.rows_per_step):
            if not self._queue:
                self._queue = list(range(len(self.examples)))
                self._order.shuffle(self._queue)
            picked.append(self.examples[self._queue.pop()])
        length = max(len(ids) for ids, _ in picked)
        input_ids = torch.full((len(picked), length), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(picked), length), dtype=torch.long)
        labels = torch.full((len(picked), length), -100, dtype=torch.long)
        for row, (ids, mask) in enumerate(picked):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            attention_mask[row, : len(ids)] = 1
            labels[row, : len(ids)] = torch.tensor([token if keep else -100 for token, keep in zip(ids, mask, strict=True)])
        return input_ids, attention_mask, labels

    def loss(self, model: Any) -> torch.Tensor:
        """The mean negative log-likelihood of the next rows' assistant tokens under ``model``."""
        input_ids, attention_mask, labels = self.next_batch()
        device = next(model.parameters()).device
        logits = model(input_ids=input_ids.to(device), attention_mask=attention_mask.to(device)).logits[:, :-1]
        return torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1).to(device), ignore_index=-100
        )


class AnchoredGRPOMixin:
    """Adds ``anchor_coef`` x :meth:`SupervisedAnchor.loss` to a GRPO trainer's loss (see the module docstring).

    Mix it in before the trainer class; give it the anchor with :meth:`set_anchor`.
    """

    anchor: SupervisedAnchor | None = None
    anchor_coef: float = 0.0

    def set_anchor(self, anchor: SupervisedAnchor, coef: float) -> None:
        """Use ``anchor`` with weight ``coef`` from the next step on."""
        self.anchor, self.anchor_coef = anchor, coef

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """The trainer's GRPO loss plus ``anchor_coef`` x the anchor's NLL (logged as ``anchor_nll``)."""
        loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if self.anchor is None or not self.anchor_coef:
            return loss
        anchor_nll = self.anchor.loss(model)
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["anchor_nll"].append(anchor_nll.item())
        # GRPO's loss is already divided over the accumulated micro-batches of an optimizer step
        accumulated = self.current_gradient_accumulation_steps if mode == "train" else 1
        return loss + self.anchor_coef * anchor_nll / accumulated


def anchored(trainer_class: type) -> type:
    """``trainer_class`` with :class:`AnchoredGRPOMixin` mixed in (e.g. ``anchored(SharedPrefixGRPOTrainer)``)."""
    return type(f"Anchored{trainer_class.__name__}", (AnchoredGRPOMixin, trainer_class), {})


__all__ = ["AnchoredGRPOMixin", "SupervisedAnchor", "anchored"]
