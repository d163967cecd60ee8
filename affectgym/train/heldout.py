"""Held-out evaluation of a flat-mode policy during training.

:class:`HeldOutEvaluator` decodes the flat prompts of an env's held-out split (validation
for a learning curve that settings are chosen from, eval for a final score; ``"flat"``, or
``"chat"``: the answer turn of the multi-step episode, see :mod:`affectgym.train.flatten`)
greedily, in batches, with the decoding of the eval runner's local agent
(:func:`~affectgym.agents.transformers_agent.generation_config`: the same stop tokens and
token limit), and scores each reply with the env's own ``score`` (the one reward path, the
flat trace as the trace). It reports accuracy (an unanswered or malformed reply counts as
wrong), the answered rate, the accuracy on flagged subsets (e.g. pivot clips), the mean
reward, and every reply with its answer, the gold label, its correctness and its split group (the unit an interval
resamples, :mod:`affectgym.eval.stats`). :class:`HeldOutCallback` runs it every few optimizer steps of a ``transformers``
trainer and appends one JSON line per evaluation, which gives the learning curve.

Greedy decoding makes an evaluation a function of the weights alone: the base model scores
the same on every seed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from affectgym.train.flatten import chat_prompt, kwargs_json, make_env, scenario_columns, shared_env

#: Prompts decoded at once.
EVAL_BATCH_SIZE = 32
#: The splits a held-out evaluation may play.
HELD_OUT_SPLITS = ("validation", "eval")


class HeldOutEvaluator:
    """Greedy decoding and scoring of an env's held-out split (see the module docstring).

    Args:
        env_id: A registered id.
        env_kwargs: Env keyword arguments (their ``split`` is replaced by ``split``).
        tokenizer: The policy's tokenizer (with a chat template).
        max_new_tokens: Longest reply decoded.
        limit: Evaluate only the first ``limit`` eval scenarios (``None`` = all).
        prompt_form: ``"flat"`` or ``"chat"`` (see :func:`~affectgym.train.flatten.to_dataset`).
        split: ``"validation"`` or ``"eval"``.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None, tokenizer: Any,
                 max_new_tokens: int = 8, limit: int | None = None, prompt_form: str = "flat", split: str = "eval"):
        if split not in HELD_OUT_SPLITS:
            raise ValueError(f"a held-out evaluation plays 'validation' or 'eval', got split={split!r}")
        self.split = split
        kwargs = {**dict(env_kwargs or {}), "split": split}
        self.env = shared_env(env_id, kwargs_json(kwargs))
        self.scenarios = list(self.env.scenarios)[:limit]
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        if prompt_form == "chat":
            player = make_env(env_id, kwargs)
            self.prompts = [
                tokenizer.apply_chat_template(chat_prompt(player, s.id), tools=player.tool_schemas or None,
                                              tokenize=False, add_generation_prompt=True)
                for s in self.scenarios
            ]
        elif prompt_form == "flat":
            self.prompts = [
                tokenizer.apply_chat_template(self.env.flat_prompt(s), tokenize=False, add_generation_prompt=True)
                for s in self.scenarios
            ]
        else:
            raise ValueError(f"prompt_form must be 'flat' or 'chat', got {prompt_form!r}")
        self.traces = [self.env.flat_trace(s) for s in self.scenarios]

    def replies(self, model: Any) -> list[str]:
        """The model's greedy reply to every eval prompt."""
        import torch

        from affectgym.agents.transformers_agent import generation_config

        decoding = generation_config(model, self.tokenizer, max_new_tokens=self.max_new_tokens)
        was_training = model.training
        model.eval()
        side, self.tokenizer.padding_side = self.tokenizer.padding_side, "left"
        replies: list[str] = []
        try:
            for start in range(0, len(self.prompts), EVAL_BATCH_SIZE):
                batch = self.tokenizer(
                    self.prompts[start:start + EVAL_BATCH_SIZE], return_tensors="pt", padding=True,
                    add_special_tokens=False,
                ).to(model.device)
                with torch.no_grad():
                    output = model.generate(**batch, generation_config=decoding)
                new_tokens = output[:, batch["input_ids"].shape[1]:]
                replies += [text.strip() for text in self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)]
        finally:
            self.tokenizer.padding_side = side
            model.train(was_training)
        return replies

    def evaluate(self, model: Any) -> dict[str, Any]:
        """Accuracy, answered rate, subset accuracies, mean reward and the label counts of ``model``."""
        replies = self.replies(model)
        results = self.env.score_batch(self.scenarios, replies, self.traces)
        rows = []
        for scenario, reply in zip(self.scenarios, replies, strict=True):
            answer, _ = self.env.parse_final(reply)
            prediction = answer.get("label") if isinstance(answer, Mapping) else None
            rows.append({"scenario": scenario, "prediction": prediction, "correct": prediction == getattr(scenario, "label", None)})
        n = len(rows)
        summary: dict[str, Any] = {
            "split": self.split,
            "episodes": n,
            "accuracy": sum(r["correct"] for r in rows) / n,
            "answered_rate": sum(r["prediction"] is not None for r in rows) / n,
            "reward": sum(result.total for result in results) / n,
            "predictions": _counts(r["prediction"] for r in rows),
            "replies": {scenario.id: reply for scenario, reply in zip(self.scenarios, replies, strict=True)},
            "answers": {r["scenario"].id: r["prediction"] for r in rows},
            "labels": {r["scenario"].id: getattr(r["scenario"], "label", None) for r in rows},
            "correct": {r["scenario"].id: r["correct"] for r in rows},
            "groups": {r["scenario"].id: str(self.env.split_group(r["scenario"])) for r in rows},
        }
        flags = [name for name, value in scenario_columns(self.scenarios[0]).items() if isinstance(value, bool)]
        for flag in flags:
            subset = [r for r in rows if getattr(r["scenario"], flag, False) is True]
            if subset:
                summary[f"{flag}_accuracy"] = sum(r["correct"] for r in subset) / len(subset)
        return summary


def _counts(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        key = "unanswered" if value is None else str(value)
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def heldout_callback(evaluator: HeldOutEvaluator, every_steps: int, path: str | Path, **fields: Any) -> Any:
    """A ``transformers.TrainerCallback`` that evaluates every ``every_steps`` steps (and at step 0).

    Each evaluation is appended to ``path`` as one JSON line: ``fields``, ``step``,
    ``eval_s`` and the :meth:`HeldOutEvaluator.evaluate` summary. A run starts a new curve:
    the file is emptied at the start of training, so a rerun into the same folder does not
    mix its curve with an earlier run's; a run resumed from a checkpoint continues it.
    """
    from transformers import TrainerCallback

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)

    def record(step: int, model: Any) -> None:
        start_s = time.perf_counter()
        summary = evaluator.evaluate(model)
        row = {**fields, "step": step, "eval_s": round(time.perf_counter() - start_s, 2), **summary}
        with target.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

    class HeldOutCallback(TrainerCallback):
        """Held-out accuracy along training (see :func:`heldout_callback`)."""

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if state.global_step == 0:  # a resumed run keeps the curve up to its checkpoint
                target.write_text("", encoding="utf-8")
                record(0, model)

        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if state.global_step % every_steps == 0 or state.global_step == state.max_steps:
                record(state.global_step, model)

    return HeldOutCallback()


__all__ = ["EVAL_BATCH_SIZE", "HELD_OUT_SPLITS", "HeldOutEvaluator", "heldout_callback"]
