"""The policy's own replies to the train prompts, scored by the env (DPO's pairs, SFT's ``--best-of``).

:func:`train_prompts` gives the env that scores and the flat prompts of the run's train
scenarios; :func:`sample_replies` samples the policy's replies to them, each decoded as an
agent's message; :func:`scored_replies` scores them all in one ``env.score_batch`` call, the
env's one reward path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from affectgym.train.config import TrainConfig
from affectgym.train.flatten import shared_env

#: Prompts sampled at once (each with ``samples_per_prompt`` replies).
SAMPLE_BATCH_PROMPTS = 8


def sample_replies(model: Any, tokenizer: Any, prompts: Sequence[list[dict[str, str]]], *, samples: int,
                   max_new_tokens: int, temperature: float) -> list[list[str]]:
    """``samples`` sampled replies to each chat prompt, decoded as an agent's message (ending at its turn's end)."""
    import torch

    from affectgym.agents.transformers_agent import generation_config

    decoding = generation_config(model, tokenizer, max_new_tokens=max_new_tokens, temperature=temperature)
    decoding.num_return_sequences = samples
    texts = [tokenizer.apply_chat_template(list(p), tokenize=False, add_generation_prompt=True) for p in prompts]
    was_training = model.training
    model.eval()
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    replies: list[list[str]] = []
    try:
        for start in range(0, len(texts), SAMPLE_BATCH_PROMPTS):
            batch = tokenizer(texts[start:start + SAMPLE_BATCH_PROMPTS], return_tensors="pt", padding=True,
                              add_special_tokens=False).to(model.device)
            with torch.no_grad():
                output = model.generate(**batch, generation_config=decoding)
            decoded = tokenizer.batch_decode(output[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
            replies += [[text.strip() for text in decoded[i:i + samples]] for i in range(0, len(decoded), samples)]
    finally:
        tokenizer.padding_side = side
        model.train(was_training)
    return replies


def scored_replies(env: Any, scenarios: Sequence[Any], replies: Sequence[Sequence[str]]
                   ) -> list[list[tuple[float, str, dict[str, Any]]]]:
    """Each scenario's replies as ``(score, reply, components)``, scored in one ``env.score_batch`` call on the
    flat trace; a reply the env left unscored (e.g. by a judge outage) is left out."""
    flat = [(i, reply) for i, group in enumerate(replies) for reply in group]
    traces = [env.flat_trace(scenario) for scenario in scenarios]
    results = env.score_batch([scenarios[i] for i, _ in flat], [reply for _, reply in flat], [traces[i] for i, _ in flat])
    scored: list[list[tuple[float, str, dict[str, Any]]]] = [[] for _ in scenarios]
    for (i, reply), result in zip(flat, results, strict=True):
        if not result.unscored:
            scored[i].append((float(result.total), reply, dict(result.components)))
    return scored


def train_prompts(config: TrainConfig) -> tuple[Any, list[Any], list[list[dict[str, str]]]]:
    """The env that scores (the run's options, train split), the ``n_train`` train scenarios (in order, repeated
    when more are asked for; default one pass) and each one's flat prompt."""
    env = shared_env(config.env_id, {**config.env_kwargs, "split": "train"})
    scenarios = list(env.scenarios)
    if config.n_train is not None:
        scenarios = [scenarios[i % len(scenarios)] for i in range(config.n_train)]
    return env, scenarios, [env.flat_prompt(scenario) for scenario in scenarios]


__all__ = ["SAMPLE_BATCH_PROMPTS", "sample_replies", "scored_replies", "train_prompts"]
