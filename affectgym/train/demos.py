"""Demonstrations to learn from: played episodes and the env's references, rendered and masked as they are trained.

Two sources are read before a model loads (:func:`demonstrations`):

* episodes any agent played, read from ``affectgym eval`` results folders (``demos``;
  several allowed): the answered, error-free episodes of the env's **train** split, kept
  when their reward is at least ``min_reward`` and, with ``correct_only``, when their
  outcome is correct. Held-out scenarios never reach training: a folder of another env or
  split is refused, so is one whose split cannot be established (no ``metadata.json``), and
  every episode's scenario must be one of the train split's; torn lines are skipped with a
  warning;
* the env's reference replies (``references``): ``env.reference_answer(scenario)`` after
  ``env.flat_prompt(scenario)``, for every train scenario (EmpatheticDialogue-v0's reference
  turns, for instance).

A third, the policy's own best replies, is sampled once the policy is loaded
(:mod:`affectgym.train.best_of`).

Each demonstration is one conversational row, ``messages`` plus the env's tool schemas
(``tools``, JSON), rendered by the policy's chat template exactly as a local agent sees the
episode at inference (:class:`~affectgym.agents.transformers_agent.TransformersAgent`):
the assistant's tool calls as the text it wrote, tool results as tool messages, the final
answer and its end-of-turn token. The loss covers the assistant turns only (the template's
``{% generation %}`` marks, end of turn included); system prompt, observations and tool
outputs are masked (:func:`assistant_token_mask`). ``--algo sft`` trains on them
(:mod:`affectgym.train.sft`), GRPO's supervised anchor keeps them (:mod:`affectgym.train.anchor`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from affectgym.envs.registration import split_shaping_arguments
from affectgym.train.config import TrainConfig
from affectgym.train.flatten import make_env

logger = logging.getLogger(__name__)


class DemonstrationError(ValueError):
    """A demonstrations folder cannot be used: missing, of another env, or of a held-out split."""


def results_file(source: str | Path) -> Path:
    """The ``results.jsonl`` of an eval folder (or the file itself).

    Raises:
        DemonstrationError: Neither a results file nor a folder holding one.
    """
    path = Path(source)
    candidate = path / "results.jsonl" if path.is_dir() else path
    if not candidate.is_file():
        raise DemonstrationError(
            f"--demos {str(source)!r}: no results.jsonl there; pass the --out folder of an affectgym eval run "
            "(e.g. affectgym eval ENV --agent protocol --split train --out runs/demos)"
        )
    return candidate


def episode_demonstrations(
    sources: Sequence[str | Path], env_id: str, *, min_reward: float | None = None, correct_only: bool = False,
    tool_turns_only: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Conversations of the kept episodes of eval results folders, and what was dropped.

    Args:
        sources: ``affectgym eval`` output folders (or their ``results.jsonl``).
        env_id: The env being trained; every folder must have played it, on its train split.
        min_reward: Keep episodes with at least this reward.
        correct_only: Keep episodes whose ``outcome["correct"]`` is true.
        tool_turns_only: End each conversation after its last tool result (:func:`through_last`).

    Returns:
        ``(rows, counts)``: rows ``{"messages", "tools", "source", "scenario_id"}`` and the
        counts ``read``, ``kept``, ``unanswered``, ``errors``, ``below_min_reward``, ``incorrect``.

    Raises:
        DemonstrationError: A folder of another env or of a held-out split, one whose split
            cannot be established, or an episode of a scenario outside the train split.
    """
    from affectgym.agents.base import raw_text_messages
    from affectgym.eval.results import read_json, read_results
    rows: list[dict[str, Any]] = []
    counts = dict.fromkeys(("read", "kept", "unanswered", "errors", "below_min_reward", "incorrect"), 0)
    for source in sources:
        path = results_file(source)
        metadata_path = path.parent / "metadata.json"
        metadata = read_json(metadata_path) if metadata_path.is_file() else {}
        split = metadata.get("split")
        if split is None:
            raise DemonstrationError(
                f"--demos {str(source)!r}: {'no metadata.json beside' if not metadata_path.is_file() else 'no split in the metadata.json of'} "
                f"{path}, so the split its episodes played cannot be established; pass the whole --out folder of an "
                f"affectgym eval run (affectgym eval {env_id} --split train ... writes metadata.json there)"
            )
        played = metadata.get("env_id", env_id)
        if played != env_id:
            raise DemonstrationError(f"--demos {str(source)!r} played {played}, not {env_id}; demonstrate the env you train")
        if split != "train":
            raise DemonstrationError(
                f"--demos {str(source)!r} played the {split!r} split; demonstrations must come from the train split "
                f"(affectgym eval {env_id} --split train ...), so that no held-out scenario is trained on"
            )
        env_kwargs = {k: v for k, v in (metadata.get("env_kwargs") or {}).items() if k != "split"}
        reshaping = split_shaping_arguments(env_id, env_kwargs)
        if reshaping:
            raise DemonstrationError(
                f"--demos {str(source)!r} was played with {', '.join(f'{key}={env_kwargs[key]!r}' for key in reshaping)}, "
                f"which change which scenarios {env_id} holds out; its train split is not the registered one, so its "
                f"episodes may be held-out scenarios. Play the demonstrations with the env's own splits"
            )
        env = make_env(env_id, {**env_kwargs, "split": "train"})
        tools = json.dumps(env.tool_schemas)
        records, torn = read_results(path)
        if torn:
            logger.warning("--demos %s: %d line(s) are no complete episode record (torn or corrupt) and are skipped", path, torn)
        train_ids = {scenario.id for scenario in env.scenarios}
        outside = sorted({str(record.get("scenario_id")) for record in records} - train_ids)
        if outside:
            raise DemonstrationError(
                f"--demos {str(source)!r}: {len(outside)} scenario(s) of {path} are not in the train split of {env_id} "
                f"({', '.join(outside[:5])}{', ...' if len(outside) > 5 else ''}); demonstrations must come from the "
                "train split, so that no held-out scenario is trained on"
            )
        for record in records:
            counts["read"] += 1
            if record.get("error"):
                counts["errors"] += 1
            elif not record.get("terminated"):
                counts["unanswered"] += 1
            elif min_reward is not None and float(record.get("reward") or 0.0) < min_reward:
                counts["below_min_reward"] += 1
            elif correct_only and not (record.get("outcome") or {}).get("correct"):
                counts["incorrect"] += 1
            else:
                messages = raw_text_messages(record["messages"])
                if tool_turns_only:
                    messages = through_last(messages, "tool")
                    if not messages:
                        counts.setdefault("no_tool_call", 0)
                        counts["no_tool_call"] += 1
                        continue
                counts["kept"] += 1
                rows.append({"messages": messages, "tools": tools, "source": str(path), "scenario_id": record["scenario_id"]})
    return rows, counts


def through_last(messages: Sequence[Mapping[str, Any]], role: str) -> list[dict[str, Any]]:
    """The conversation up to and including its last message of ``role`` (empty when it has none).

    ``"tool"``: the episode without its answer (``tool_turns_only``); ``"assistant"``: without
    what follows the last assistant turn, which has nothing to learn.

    >>> episode = [{"role": "user", "content": "?"}, {"role": "assistant", "content": "<tool_call>..."},
    ...            {"role": "tool", "content": "out"}, {"role": "assistant", "content": "Yes"}]
    >>> through_last(episode, "tool")[-1], len(through_last(episode, "assistant")), through_last(episode[:1], "tool")
    ({'role': 'tool', 'content': 'out'}, 4, [])
    """
    last = max((i for i, message in enumerate(messages) if message.get("role") == role), default=-1)
    return [dict(message) for message in messages[: last + 1]]


def reference_demonstrations(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The env's reference reply after its flat prompt, for every train scenario.

    Args:
        env_id: A registered id.
        env_kwargs: Env keyword arguments (the split is always ``"train"``).
    """
    env = make_env(env_id, {**dict(env_kwargs or {}), "split": "train"})
    rows = []
    for scenario in env.scenarios:
        reply, _ = env.reference_answer(scenario)
        messages = [*(dict(m) for m in env.flat_prompt(scenario)), {"role": "assistant", "content": reply}]
        rows.append({"messages": messages, "tools": json.dumps([]), "source": "references", "scenario_id": scenario.id})
    return rows


def assistant_token_mask(tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None) -> tuple[list[int], list[int]]:
    """Token ids of a rendered conversation and its loss mask (1 on the assistant's tokens).

    The mask ``SFTTrainer(assistant_only_loss=True)`` trains with: the template's
    ``{% generation %}`` spans, so each assistant message and its end-of-turn token.
    """
    rendered = tokenizer.apply_chat_template(
        list(messages), tools=list(tools) if tools else None, tokenize=True, return_dict=True,
        return_assistant_tokens_mask=True,
    )
    return list(rendered["input_ids"]), list(rendered["assistant_masks"])


def demonstrations(config: TrainConfig) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The demonstrations of ``config`` read before a model loads (its ``demos`` folders, then ``references``), and the counts.

    Raises:
        DemonstrationError: No demonstration was kept and none is to be sampled (``best_of``).
    """
    rows, counts = episode_demonstrations(
        config.demos, config.env_id, min_reward=config.min_reward, correct_only=config.correct_only,
        tool_turns_only=config.tool_turns_only,
    )
    if config.references:
        references = reference_demonstrations(config.env_id, config.env_kwargs)
        rows += references
        counts["references"] = len(references)
    if not rows and not config.best_of:
        raise no_demonstration_error(counts)
    return rows, counts


def no_demonstration_error(counts: Mapping[str, int]) -> DemonstrationError:
    """The error of a run left with nothing to learn, with what was read and dropped."""
    return DemonstrationError(
        f"no demonstration to learn from: {dict(counts)}; lower --min-reward, drop --correct-only, add --demos "
        "folders or raise --best-of"
    )


__all__ = [
    "DemonstrationError",
    "assistant_token_mask",
    "demonstrations",
    "episode_demonstrations",
    "no_demonstration_error",
    "reference_demonstrations",
    "results_file",
    "through_last",
]
