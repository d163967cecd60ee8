"""The policy's own best replies as demonstrations (``affectgym train --algo sft --best-of N``).

Rejection sampling: the starting policy (the base model, or ``init_adapter``) samples ``N``
replies to each train prompt (the env's flat prompt; ``n_train`` of them, at ``temperature``,
at most ``max_completion_length`` tokens), the env scores them all through its one reward
path (``env.score_batch``: classifier, judge, rules, rubric), and the best reply of each
prompt becomes a demonstration when its score reaches ``min_reward``. Supervised training
on them is one round of rejection-sampling fine-tuning (expert iteration; RAFT): the policy
moves toward what the env already rewards among its own samples, with no reference model
and no pair.

Every sampled reply, its score and components are written to the run's
``best_of.jsonl`` before training; a resumed run reads them back instead of sampling again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from affectgym.train.config import TrainConfig
from affectgym.train.sampling import sample_replies, scored_replies, train_prompts


def best_of_demonstrations(config: TrainConfig, model: Any, tokenizer: Any, samples_file: Path
                           ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The best scored reply to each train prompt, kept when it reaches ``config.min_reward``, and the counts.

    Args:
        config: The run's options (``best_of`` samples per prompt, ``n_train``, ``temperature``,
            ``max_completion_length``, ``min_reward``, ``seed``, the env and its options).
        model: The policy to sample from.
        tokenizer: Its tokenizer.
        samples_file: Where every sampled reply is written (read back when it exists).

    Returns:
        Demonstration rows (``messages``: the prompt and the best reply; ``tools``; ``source``
        ``"best_of"``; ``scenario_id``; ``score``) and counts ``best_of_prompts``,
        ``best_of_kept``, ``best_of_below_min_reward`` and ``best_of_unscored`` (prompts whose
        replies the env left all unscored).
    """
    if samples_file.is_file():
        records = [json.loads(line) for line in samples_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        records = _sampled_records(config, model, tokenizer)
        samples_file.parent.mkdir(parents=True, exist_ok=True)
        samples_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    rows: list[dict[str, Any]] = []
    counts = {"best_of_prompts": len(records), "best_of_kept": 0, "best_of_below_min_reward": 0, "best_of_unscored": 0}
    for record in records:
        if not record["replies"]:
            counts["best_of_unscored"] += 1
            continue
        best = max(record["replies"], key=lambda reply: reply["score"])
        if config.min_reward is not None and best["score"] < config.min_reward:
            counts["best_of_below_min_reward"] += 1
            continue
        rows.append({"messages": [*record["prompt"], {"role": "assistant", "content": best["text"]}],
                     "tools": json.dumps([]), "source": "best_of", "scenario_id": record["scenario_id"],
                     "score": best["score"]})
    counts["best_of_kept"] = len(rows)
    return rows, counts


def _sampled_records(config: TrainConfig, model: Any, tokenizer: Any) -> list[dict[str, Any]]:
    """Every train prompt with its sampled replies, each with the env's score and components."""
    from transformers import set_seed

    env, scenarios, prompts = train_prompts(config)
    set_seed(config.seed)
    replies = sample_replies(model, tokenizer, prompts, samples=config.best_of,
                             max_new_tokens=config.max_completion_length, temperature=config.temperature)
    return [
        {"scenario_id": scenario.id, "prompt": prompt,
         "replies": [{"text": text, "score": score, "components": components} for score, text, components in scored]}
        for scenario, prompt, scored in zip(scenarios, prompts, scored_replies(env, scenarios, replies), strict=True)
    ]


__all__ = ["best_of_demonstrations"]
