"""Measured CPU recipes: GRPO of a small model on Sarcasm-v0's short form, and train flat, play with tools.

The transfer recipes (:func:`sarcasm_protocol_sft_config`, :func:`sarcasm_chat_grpo_config`,
:func:`sarcasm_multiturn_grpo_config`) train a model that plays Sarcasm-v0 as a multi-step
agent, in :data:`SARCASM_AGENT_FORM`: a supervised warm start on the label-blind protocol
demonstrator's episodes (it learns to call the two flat tools in one message, answer yes or
no and end its turn, never which answer), then GRPO on the ``"chat"`` prompt form (the
conversation after those tool calls, the agent's own answer turn) or multi-turn GRPO with
the tools in the rollout. ``benchmarks/bench_transfer.py`` measures them multi-step.

The short-form recipe, :func:`sarcasm_cpu_config`:

On two CPU cores a GRPO step costs a forward and a backward pass over the prompt of every
completion, so the prompt is the budget. :func:`sarcasm_cpu_config` trains on the short
form of ``affectgym/Sarcasm-v0``, through its public options:

* the task format ``{"answer": "yesno", "flat_prompt": "compact"}``
  (:class:`~affectgym.envs.label_format.LabelFormat`): the line and one line of delivery
  cues, ~130 tokens instead of ~600, and "yes" or "no" to "is the line sarcastic?". The base model starts
  "sarcastic" and "sincere" with the same token and all but never samples "sincere", so
  GRPO would never see it rewarded; "yes" and "no" it samples alike;
* the rubric ``"label"`` with the format weight lowered from 0.30 to 0.05
  (``reward_weights={"format": 0.05}``): 0.70 signed correctness (+1 right, -1 wrong, 0
  unanswered) + 0.05 format (an answer could be read). A right answer earns 0.75, none 0,
  a wrong one -0.65. Some credit for answering is needed (without it the policy learns to
  say nothing), but while the policy is learning to answer, that credit is shared by both
  answers and raises the one it already favours most: at 0.30 the yes/no split collapsed
  onto one answer within 20 steps; at 0.05 the sampled answers stayed mixed for 60 steps
  (entropy above 1.2), though the greedy answer still settled on one label;
* 1-token answers ("Yes", "No"), read leniently, sampled at temperature 1.0: with the
  question asked last, about a third of the base model's samples answer, and the format
  credit makes every sample answer within ~10 steps; at 0.7, or with a peak learning rate
  of 1e-3 or more, the yes/no split collapsed onto one answer within 20 steps (every group
  then has zero reward variance and gives no gradient). A second token (the end of the
  turn) carried nothing and doubled the cost of a step;
* 128 completions of each prompt (2 prompts a step): GRPO's gradient is a sampled estimate,
  and with 8 completions its noise carries the yes/no split shared by both deliveries onto
  one answer, after which every group is constant and gives no gradient. With 64, one seed
  of three still collapsed; with 128 the groups stay mixed until the deliveries part.
  :class:`~affectgym.train.shared_prefix.SharedPrefixGRPOTrainer` runs each prompt once a
  step, so a step of 256 completions costs less than one of 16 in TRL's own trainer;
* learning rate 5e-4, constant after a linear warmup over the first sixth of the steps (a
  linear decay to 0 slows the late steps in which the deliveries part);
* LoRA on the last 10 of 30 layers: a linear probe of the frozen model's hidden state at
  the answer position tells held-out sarcastic from sincere clips apart at 0.98 from the
  input of layer 20 but at 0.74 from the top layers, so the adapter must reach that deep;
* both deliveries of a line in one batch (``group_batches``), no reference model (``beta=0``).

``benchmarks/bench_learning.py`` measures it against the base model and a format-only
control; ``affectgym demo`` runs a short version.

>>> config = sarcasm_cpu_config("runs/x", max_steps=5)
>>> config.env_kwargs["task_format"], config.lora_layers, config.group_batches
({'answer': 'yesno', 'flat_prompt': 'compact'}, 10, True)
>>> sarcasm_cpu_config("runs/x", control=True).env_kwargs["reward_weights"]
{'format': 0.05, 'correctness': 0.0}
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from affectgym.train.config import TrainConfig, config_fields

SARCASM_ENV_ID = "affectgym/Sarcasm-v0"
#: The short form of Sarcasm-v0 (public env options; scored by the env's own rubric).
SARCASM_SHORT_FORM: dict[str, Any] = {"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "rubric": "label"}
#: Sarcasm-v0 as the transfer recipes' agent plays it: the short form's answer and reward,
#: the compact flat tool calls (the transcript and the one-line delivery summary) and 4 turns.
SARCASM_AGENT_FORM: dict[str, Any] = {**SARCASM_SHORT_FORM, "reward_weights": {"format": 0.05}, "max_turns": 4}
#: Tokens a message of the agent may take (the two tool calls take ~45); held-out evaluations decode greedily to it.
AGENT_MAX_NEW_TOKENS = 64
#: Tokens of a whole multi-turn rollout in TRL (its limit counts the tool results too): the
#: tool-call message (~45), the two tool results (~90) and the answer.
MULTITURN_COMPLETION_TOKENS = 192
#: LoRA of the transfer recipes: rank 16 on the last 10 of SmolLM2's 30 layers (as the short-form recipe).
_TRANSFER_LORA: dict[str, Any] = {"lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "lora_layers": 10}


def last_layers(model: str, wanted: int) -> int:
    """A recipe's ``lora_layers`` for ``model``: ``wanted``, or every layer of a local model that has fewer.

    The recipes adapt the last 10 of SmolLM2-135M's 30 layers; a smaller model (a test's
    two-layer one) is adapted whole, where ``--lora-layers 10`` given by hand is refused.

    >>> last_layers("smollm2-135m", 10)
    10
    """
    config = Path(model).expanduser() / "config.json"
    layers = json.loads(config.read_text(encoding="utf-8")).get("num_hidden_layers") if config.is_file() else None
    return min(wanted, layers) if isinstance(layers, int) and layers > 0 else wanted


def _transfer_lora(model: str) -> dict[str, Any]:
    return {**_TRANSFER_LORA, "lora_layers": last_layers(model, _TRANSFER_LORA["lora_layers"])}


def sarcasm_cpu_config(output_dir: str | Path, *, max_steps: int = 80, seed: int = 0, control: bool = False,
                       eval_every_steps: int | None = None, model: str = "smollm2-135m", **overrides: Any) -> TrainConfig:
    """The recipe's options (see the module docstring).

    Args:
        output_dir: Where the run writes.
        max_steps: GRPO steps (256 completions each: 2 prompts x 128).
        seed: Seed of data order, sampling and LoRA initialisation.
        control: Reward only the answer format (correctness weight 0): the control arm.
        eval_every_steps: Greedy held-out evaluation every N steps (``heldout.jsonl``); default 10 (at most ``max_steps``).
        model: Policy model (an alias, a folder or a hub id).
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    env_kwargs = dict(SARCASM_SHORT_FORM)
    env_kwargs["reward_weights"] = {"format": 0.05}
    if control:
        env_kwargs["reward_weights"]["correctness"] = 0.0
    options: dict[str, Any] = {
        "env_id": SARCASM_ENV_ID,
        "model": model,
        "mode": "flat",
        "max_steps": max_steps,
        "num_generations": 128,
        "batch_size": 256,
        "learning_rate": 5e-4,
        "warmup_steps": max_steps // 6,
        "lr_scheduler": "constant",
        "max_completion_length": 1,
        "temperature": 1.0,
        "beta": 0.0,
        "lora_r": 16,
        "lora_alpha": 32,
        "lora_dropout": 0.0,
        "lora_layers": last_layers(model, 10),
        "n_train": max_steps * 2,
        "group_batches": True,
        "eval_every_steps": min(10, max_steps) if eval_every_steps is None else eval_every_steps,
        "eval_episodes": 0,
        "env_kwargs": env_kwargs,
        "seed": seed,
        "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


def sarcasm_protocol_sft_config(output_dir: str | Path, demos: list[str], *, seed: int = 0, max_steps: int = 20,
                                model: str = "smollm2-135m", **overrides: Any) -> TrainConfig:
    """The supervised warm start: the protocol demonstrator's train-split episodes, assistant turns only.

    4 episodes a step at a constant learning rate of 1e-3 after 2 warmup steps; LoRA r=16 on
    the last 10 layers (the adapter the GRPO recipes keep training).

    Args:
        output_dir: Where the run writes.
        demos: ``affectgym eval --agent protocol --split train`` folders.
        seed: Seed of data order and LoRA initialisation.
        max_steps: Optimizer steps.
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    options: dict[str, Any] = {
        "env_id": SARCASM_ENV_ID, "algo": "sft", "model": model, "demos": list(demos), "max_steps": max_steps,
        "batch_size": 4, "learning_rate": 1e-3, "warmup_steps": min(2, max_steps - 1), "lr_scheduler": "constant",
        **_transfer_lora(model),
        "eval_episodes": 0, "eval_max_new_tokens": AGENT_MAX_NEW_TOKENS, "env_kwargs": dict(SARCASM_AGENT_FORM),
        "seed": seed, "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


def sarcasm_protocol_refresher_config(output_dir: str | Path, demos: list[str], init_adapter: str, *, seed: int = 0,
                                      max_steps: int = 8, model: str = "smollm2-135m", **overrides: Any) -> TrainConfig:
    """A few supervised steps on the protocol demonstrator's tool-call turns alone, after GRPO on the answer.

    GRPO on the chat prompts trains the first token of the answer turn, and the same adapter
    writes the first token of the opening turn: measured on SmolLM2-135M, after 60 steps the
    model answered yes or no at once instead of calling the tools (multi-step tool use 0.00,
    flat accuracy 1.00). These steps train the tool-call turn again (``tool_turns_only``: the
    demonstrations end after the tool results, so no answer, and no label, is learned), from
    the GRPO adapter, at the warm start's learning rate.

    Args:
        output_dir: Where the run writes.
        demos: ``affectgym eval --agent protocol --split train`` folders.
        init_adapter: The GRPO run's ``adapter/``.
        seed: Seed of data order.
        max_steps: Optimizer steps.
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    return sarcasm_protocol_sft_config(output_dir, demos, seed=seed, max_steps=max_steps, model=model,
                                       init_adapter=init_adapter, tool_turns_only=True, **overrides)


def sarcasm_chat_grpo_config(output_dir: str | Path, init_adapter: str | None, *, seed: int = 0, max_steps: int = 60,
                             eval_every_steps: int | None = None, model: str = "smollm2-135m",
                             **overrides: Any) -> TrainConfig:
    """Flat GRPO on the ``"chat"`` prompt form, from the warm start's adapter.

    The short-form recipe's reward and group shape (2 prompts x 128 one-token completions,
    learning rate 5e-4 constant after a warmup, both deliveries of a line in one batch), with
    the agent's own answer turn as the prompt. The completion is the answer word alone: the
    end of the turn after it was learned in the warm start, and the held-out evaluations
    (greedy, up to 64 tokens, stopping at the end of the turn, as the agent decodes) measure
    that it stays (``benchmarks/bench_transfer.py`` counts the answers that end right after
    the word). A second token would cost a key/value cache of the ~700-token prompt for each
    of the 256 completions (8 GB), 20 times the step time.

    Args:
        output_dir: Where the run writes.
        init_adapter: The warm start's ``adapter/`` (``None``: a fresh LoRA).
        seed: Seed of data order and sampling.
        max_steps: GRPO steps.
        eval_every_steps: Flat held-out evaluation every N steps (``heldout.jsonl``); default 20 (at most ``max_steps``).
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    options: dict[str, Any] = {
        "env_id": SARCASM_ENV_ID, "model": model, "init_adapter": init_adapter, "mode": "flat", "prompt_form": "chat",
        "max_steps": max_steps, "num_generations": 128, "batch_size": 256, "learning_rate": 5e-4,
        "warmup_steps": max_steps // 6, "lr_scheduler": "constant", "max_completion_length": 1,
        "temperature": 1.0, "beta": 0.0, **_transfer_lora(model),
        "n_train": max_steps * 2, "group_batches": True,
        "eval_every_steps": min(20, max_steps) if eval_every_steps is None else eval_every_steps, "eval_episodes": 0,
        "eval_max_new_tokens": AGENT_MAX_NEW_TOKENS, "env_kwargs": dict(SARCASM_AGENT_FORM), "seed": seed,
        "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


def sarcasm_anchored_chat_grpo_config(output_dir: str | Path, init_adapter: str | None, demos: list[str], *,
                                      seed: int = 0, max_steps: int = 60, eval_every_steps: int | None = None,
                                      anchor_coef: float = 1.0, model: str = "smollm2-135m",
                                      **overrides: Any) -> TrainConfig:
    """:func:`sarcasm_chat_grpo_config` with a supervised anchor on the protocol demonstrator's episodes.

    Each step adds ``anchor_coef`` x the mean NLL of 2 demonstrated episodes' assistant turns
    (:mod:`affectgym.train.anchor`): their tool calls, their random answer and its end of
    turn. The demonstrations carry no label, so the anchor holds the protocol in place while
    GRPO on the answer token learns the answer.

    Args:
        output_dir: Where the run writes.
        init_adapter: The warm start's ``adapter/``.
        demos: ``affectgym eval --agent protocol --split train`` folders (the warm start's own).
        seed: Seed of data order and sampling.
        max_steps: GRPO steps.
        eval_every_steps: Flat held-out evaluation every N steps (``heldout.jsonl``); default 20 (at most ``max_steps``).
        anchor_coef: Weight of the anchor's NLL in the loss.
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    return sarcasm_chat_grpo_config(output_dir, init_adapter, seed=seed, max_steps=max_steps,
                                    eval_every_steps=eval_every_steps, model=model,
                                    **{"demos": list(demos), "anchor_coef": anchor_coef, "anchor_rows": 2, **overrides})


def sarcasm_multiturn_grpo_config(output_dir: str | Path, init_adapter: str | None, *, seed: int = 0,
                                  max_steps: int = 60, model: str = "smollm2-135m", **overrides: Any) -> TrainConfig:
    """Multi-turn GRPO (TRL's ``environment_factory``: the policy's own tool calls), from the warm start's adapter.

    The same steps, learning rate and LoRA as :func:`sarcasm_chat_grpo_config`, with 2
    prompts x 4 rollouts a step: each rollout generates its tool-call message (~45 tokens)
    and its answer and is trained on all of it (tool results masked), so a rollout costs
    some 100 times a flat completion.

    Args:
        output_dir: Where the run writes.
        init_adapter: The warm start's ``adapter/``.
        seed: Seed of data order and sampling.
        max_steps: GRPO steps.
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    options: dict[str, Any] = {
        "env_id": SARCASM_ENV_ID, "model": model, "init_adapter": init_adapter, "mode": "multiturn",
        "max_steps": max_steps, "num_generations": 4, "batch_size": 8, "learning_rate": 5e-4,
        "warmup_steps": max_steps // 6, "lr_scheduler": "constant", "max_completion_length": MULTITURN_COMPLETION_TOKENS,
        "max_tool_calling_iterations": 2, "temperature": 1.0, "beta": 0.0, **_transfer_lora(model),
        "n_train": max_steps * 2, "group_batches": True, "eval_episodes": 0,
        "eval_max_new_tokens": AGENT_MAX_NEW_TOKENS, "env_kwargs": dict(SARCASM_AGENT_FORM), "seed": seed,
        "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


EMOTION_STYLE_ENV_ID = "affectgym/EmotionStyle-v0"
#: Tokens of an EmotionStyle reply, sampled or decoded: two or three sentences, enough for
#: the classifier to read an emotion; a reply that runs past it is cut (and scored as cut).
STYLE_MAX_NEW_TOKENS = 40
#: Weight of the classifier's P(target) in the EmotionStyle recipe's reward (the env's default
#: is 1): three times the heaviest rule's 0.5 in magnitude, so within a group of replies the
#: emotion moves the advantages as much as a broken rule does.
STYLE_EMOTION_WEIGHT = 3.0


#: The offline classifier's neutral weight chosen on the embedded dialogue corpus's train
#: references (``benchmarks/bench_classifier_calibration.py``: highest macro recall of the
#: writers' tags; at 1, neutral outranks the tagged emotion in 9 emotional sentences of 10).
CALIBRATED_NEUTRAL_WEIGHT = 0.25


def neutral_weight_options(neutral_weight: float) -> dict[str, Any]:
    """The env option that sets the offline classifier's neutral weight (none at the default 1).

    >>> neutral_weight_options(1.0), neutral_weight_options(0.25)
    ({}, {'classifier_options': {'neutral_weight': 0.25}})
    """
    return {} if neutral_weight == 1.0 else {"classifier_options": {"neutral_weight": neutral_weight}}


def _style_env_kwargs(neutral_weight: float, rubric: str, classifier: str = "nade") -> dict[str, Any]:
    """EmotionStyle-v0's options in its recipes: the offline ``classifier`` (at ``neutral_weight``), ``rubric``, and
    P(target) weighed :data:`STYLE_EMOTION_WEIGHT`."""
    credit = "emotion_probability" if rubric == "classifier-only" else "emotion"
    return {"classifier": classifier, "rubric": rubric, "reward_weights": {credit: STYLE_EMOTION_WEIGHT},
            **neutral_weight_options(neutral_weight)}


def emotion_style_grpo_config(output_dir: str | Path, *, seed: int = 0, max_steps: int = 48, control: bool = False,
                              model: str = "smollm2-135m", neutral_weight: float = 1.0, classifier: str = "nade",
                              **overrides: Any) -> TrainConfig:
    """Flat GRPO on EmotionStyle-v0 (EMOTRON): the offline classifier's P(target) and the rules, no judge.

    4 instructions a step, 8 sampled replies each (at most :data:`STYLE_MAX_NEW_TOKENS`
    tokens, temperature 1.0), each prompt run once a step (shared prompts); learning rate
    1e-3 constant after a warmup over the first sixth of the steps; LoRA r=16 on every
    layer; no reference model (``beta=0``). The classifier's P(target) weighs
    :data:`STYLE_EMOTION_WEIGHT` (the rules keep theirs): at weight 1, 2e-4 and the last 10
    layers, 40 steps left the replies all but the base model's; at 1e-3 on every layer they
    learned to avoid the rules and nothing of the emotion (P(target) varies far less within
    a group than a rule's -0.5 does, so the advantages followed the rules).

    Args:
        output_dir: Where the run writes.
        seed: Seed of data order, sampling and LoRA initialisation.
        max_steps: GRPO steps.
        control: Train on the ``"shuffled-target"`` rubric (the classifier scores another
            emotion than the one shown; the rules the shown one): the same budget, with no
            reward for following the requested emotion.
        model: Policy model.
        neutral_weight: The offline classifier's neutral weight (``classifier_options``;
            :data:`CALIBRATED_NEUTRAL_WEIGHT` is the calibrated one): 1 keeps the
            mapping under which neutral tops 99% of the base model's samples.
        classifier: The offline classifier: ``"nade"``, which the learning benchmarks' committed runs used, or
            ``"probe"``, which reads all seven labels (``classifier="auto"``'s offline choice).
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    env_kwargs = _style_env_kwargs(neutral_weight, rubric="shuffled-target" if control else "default",
                                   classifier=classifier)
    options: dict[str, Any] = {
        "env_id": EMOTION_STYLE_ENV_ID, "model": model, "mode": "flat", "max_steps": max_steps, "num_generations": 8,
        "batch_size": 32, "learning_rate": 1e-3, "warmup_steps": max_steps // 6, "lr_scheduler": "constant",
        "max_completion_length": STYLE_MAX_NEW_TOKENS, "temperature": 1.0, "beta": 0.0, **_transfer_lora(model),
        "lora_layers": 0,
        "n_train": max_steps * 4, "eval_every_steps": 0, "eval_episodes": 0, "eval_max_new_tokens": STYLE_MAX_NEW_TOKENS,
        "env_kwargs": env_kwargs, "seed": seed, "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


def emotion_style_classifier_only_grpo_config(output_dir: str | Path, *, seed: int = 0, max_steps: int = 48,
                                              neutral_weight: float = CALIBRATED_NEUTRAL_WEIGHT,
                                              classifier: str = "nade", **overrides: Any) -> TrainConfig:
    """:func:`emotion_style_grpo_config` on the ``"classifier-only"`` rubric: the classifier's P(target) is the
    whole reward (no rules, no judge), EMOTRON's first attempt and the reward a policy learns to hack
    (``benchmarks/bench_style_hacking.py``). The calibrated classifier by default.

    >>> emotion_style_classifier_only_grpo_config("runs/x").env_kwargs["rubric"]
    'classifier-only'
    """
    return emotion_style_grpo_config(output_dir, seed=seed, max_steps=max_steps, neutral_weight=neutral_weight,
                                     **{"env_kwargs": _style_env_kwargs(neutral_weight, rubric="classifier-only",
                                                                        classifier=classifier), **overrides})


def emotion_style_dpo_config(output_dir: str | Path, *, seed: int = 0, max_steps: int = 24,
                             neutral_weight: float = CALIBRATED_NEUTRAL_WEIGHT, model: str = "smollm2-135m",
                             **overrides: Any) -> TrainConfig:
    """DPO on EmotionStyle-v0 from the env's own reward: one round of 8 sampled replies to 128 train scenarios.

    The replies (temperature 1.0, at most :data:`STYLE_MAX_NEW_TOKENS` tokens) are scored
    by the env (the classifier's P(target) weighed :data:`STYLE_EMOTION_WEIGHT`, the rules)
    and the best and the worst of each scenario, when at least 0.1 apart, make a pair;
    ``max_steps`` steps of 4 pairs at 1e-4 (beta 0.1, the starting policy as the
    reference), LoRA r=16 on every layer. The reference model holds the policy near the
    base, which GRPO without one (``beta=0``) did not: at lr 1e-3 its replies collapsed
    into repeated clauses.

    Args:
        output_dir: Where the run writes.
        seed: Seed of sampling, data order and LoRA initialisation.
        max_steps: Optimizer steps.
        neutral_weight: The offline classifier's neutral weight (:data:`CALIBRATED_NEUTRAL_WEIGHT`).
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    env_kwargs = _style_env_kwargs(neutral_weight, rubric="default")
    options: dict[str, Any] = {
        "env_id": EMOTION_STYLE_ENV_ID, "algo": "dpo", "model": model, "rounds": 1, "samples_per_prompt": 8,
        "pair_margin": 0.1, "dpo_beta": 0.1, "n_train": 128, "max_steps": max_steps, "batch_size": 4,
        "learning_rate": 1e-4, "max_completion_length": STYLE_MAX_NEW_TOKENS, "temperature": 1.0,
        **_transfer_lora(model), "lora_layers": 0, "eval_episodes": 0, "eval_max_new_tokens": STYLE_MAX_NEW_TOKENS,
        "env_kwargs": env_kwargs, "seed": seed, "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


#: The least env score a best-of-8 EmotionStyle reply needs to be learned: P(target) about 0.2 or more
#: (weighed :data:`STYLE_EMOTION_WEIGHT`) with no rule broken; half the base policy's best-of-8
#: replies reach it.
STYLE_BEST_OF_MIN_REWARD = 0.6


def emotion_style_best_of_config(output_dir: str | Path, *, seed: int = 0, max_steps: int = 32, control: bool = False,
                                 neutral_weight: float = CALIBRATED_NEUTRAL_WEIGHT, model: str = "smollm2-135m",
                                 **overrides: Any) -> TrainConfig:
    """Rejection-sampling fine-tuning on EmotionStyle-v0: the base policy's best of 8 replies, learned.

    8 replies to each of 128 train scenarios (temperature 1.0, at most
    :data:`STYLE_MAX_NEW_TOKENS` tokens), scored by the env as the GRPO recipe's reward
    (the classifier's P(target) weighed :data:`STYLE_EMOTION_WEIGHT`, the rules); each
    scenario's best is kept when it scores at least :data:`STYLE_BEST_OF_MIN_REWARD`, and
    ``max_steps`` supervised steps of 4 learn them at 5e-4 (LoRA r=16 on every layer, as the
    dialogue SFT). No advantage, pair or reference model: the policy imitates its own replies
    that the classifier already reads as the requested emotion.

    Args:
        output_dir: Where the run writes.
        seed: Seed of sampling, data order and LoRA initialisation.
        max_steps: Optimizer steps.
        control: Score for the ``"shuffled-target"`` rubric (another emotion than the one shown; the
            rules the shown one): the same budget, keeping the replies that read as the wrong emotion.
        neutral_weight: The offline classifier's neutral weight (:data:`CALIBRATED_NEUTRAL_WEIGHT`).
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    env_kwargs = _style_env_kwargs(neutral_weight, rubric="shuffled-target" if control else "default")
    options: dict[str, Any] = {
        "env_id": EMOTION_STYLE_ENV_ID, "algo": "sft", "model": model, "best_of": 8, "n_train": 128,
        "min_reward": STYLE_BEST_OF_MIN_REWARD, "temperature": 1.0, "max_completion_length": STYLE_MAX_NEW_TOKENS,
        "max_steps": max_steps, "batch_size": 4, "learning_rate": 5e-4, **_transfer_lora(model), "lora_layers": 0,
        "eval_episodes": 0, "eval_max_new_tokens": STYLE_MAX_NEW_TOKENS, "env_kwargs": env_kwargs, "seed": seed,
        "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


#: Passes over the embedded EmotionStyle demonstrations of the warm start (the dialogue reference SFT's
#: 90 steps are ~3.4 passes over its train turns; fixed before any warm-started run was played).
STYLE_DEMONSTRATION_PASSES = 3


def emotion_style_demonstration_sft_config(output_dir: str | Path, demos: list[str], *, seed: int = 0,
                                           max_steps: int | None = None, model: str = "smollm2-135m",
                                           **overrides: Any) -> TrainConfig:
    """The EmotionStyle warm start: supervised fine-tuning on the embedded demonstrations.

    The 210 replies of ``affectgym/data/style_demonstrations`` (7 emotions × 30 train
    instructions, each showing its emotion without naming it), written as an eval folder by
    :func:`affectgym.train.style_demonstrations.write_style_demonstrations`; 4 a step at 5e-4
    (linear decay), :data:`STYLE_DEMONSTRATION_PASSES` passes, LoRA r=16 on every layer (the
    adapter the EmotionStyle GRPO recipe then keeps training, ``init_adapter``).

    Args:
        output_dir: Where the run writes.
        demos: The demonstrations' eval folder(s).
        seed: Seed of data order and LoRA initialisation.
        max_steps: Optimizer steps; default :data:`STYLE_DEMONSTRATION_PASSES` passes over 210 demonstrations.
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    batch_size = 4
    options: dict[str, Any] = {
        "env_id": EMOTION_STYLE_ENV_ID, "algo": "sft", "model": model, "demos": list(demos),
        "max_steps": max_steps or STYLE_DEMONSTRATION_PASSES * 210 // batch_size, "batch_size": batch_size,
        "learning_rate": 5e-4, **_transfer_lora(model), "lora_layers": 0, "eval_episodes": 0,
        "eval_max_new_tokens": STYLE_MAX_NEW_TOKENS,
        "env_kwargs": _style_env_kwargs(CALIBRATED_NEUTRAL_WEIGHT, rubric="default"), "seed": seed,
        "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


DIALOGUE_ENV_ID = "affectgym/EmpatheticDialogue-v0"
#: Tokens of a dialogue reply, sampled or decoded: a three-sentence turn of 20-25 words and
#: its tags is ~45 tokens, so 80 leaves room for a longer reply and cuts off babbling early.
DIALOGUE_MAX_NEW_TOKENS = 80


def dialogue_reference_sft_config(output_dir: str | Path, *, seed: int = 0, max_steps: int = 90,
                                  model: str = "smollm2-135m", **overrides: Any) -> TrainConfig:
    """Supervised fine-tuning on the train split's reference replies (the RLAIF adapters' first stage).

    Every train turn's reference reply, its dialogue's history before it (``--references``),
    4 turns a step at 5e-4 (linear decay); LoRA r=16 on every layer (on the last 10 alone, as the
    Sarcasm recipes adapt, the loss hardly moved in 30 steps and the replies came out worse than
    the base model's). 90 steps: at 30 the held-out reward was 0.615 over 3 seeds, at 90 0.760.

    Args:
        output_dir: Where the run writes.
        seed: Seed of data order and LoRA initialisation.
        max_steps: Optimizer steps (107 train turns: 90 steps are ~3.4 passes).
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    options: dict[str, Any] = {
        "env_id": DIALOGUE_ENV_ID, "algo": "sft", "model": model, "references": True, "max_steps": max_steps,
        "batch_size": 4, "learning_rate": 5e-4, **_transfer_lora(model), "lora_layers": 0, "eval_episodes": 0,
        "eval_max_new_tokens": DIALOGUE_MAX_NEW_TOKENS, "seed": seed, "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


def dialogue_dpo_config(output_dir: str | Path, init_adapter: str | None, *, seed: int = 0, rounds: int = 3,
                        max_steps: int = 12, model: str = "smollm2-135m", **overrides: Any) -> TrainConfig:
    """Online DPO from the env's per-turn rubric, from the reference SFT adapter.

    Each round samples 4 replies to 32 train turns at temperature 1.0 (at most
    :data:`DIALOGUE_MAX_NEW_TOKENS` tokens), pairs the best and the worst scored by the env
    when they are at least 0.1 apart, and trains ``max_steps`` steps of 4 pairs at 1e-4
    (beta 0.1) against the round's starting policy.

    Args:
        output_dir: Where the run writes.
        init_adapter: The SFT run's ``adapter/`` (``None``: a fresh adapter on the base model).
        seed: Seed of sampling, data order and (without ``init_adapter``) LoRA initialisation.
        rounds: Rounds of sampling and training.
        max_steps: Optimizer steps per round.
        model: Policy model.
        **overrides: Any other :class:`~affectgym.train.config.TrainConfig` field.
    """
    options: dict[str, Any] = {
        "env_id": DIALOGUE_ENV_ID, "algo": "dpo", "model": model, "init_adapter": init_adapter, "rounds": rounds,
        "samples_per_prompt": 4, "pair_margin": 0.1, "dpo_beta": 0.1, "n_train": 32, "max_steps": max_steps,
        "batch_size": 4, "learning_rate": 1e-4, "max_completion_length": DIALOGUE_MAX_NEW_TOKENS, "temperature": 1.0,
        **_transfer_lora(model), "eval_episodes": 0, "eval_max_new_tokens": DIALOGUE_MAX_NEW_TOKENS, "seed": seed,
        "output_dir": str(output_dir),
    }
    options.update(overrides)
    return TrainConfig(**options)


#: The recipes of ``affectgym train --recipe NAME``: name -> (function, what it trains).
RECIPES: dict[str, tuple[Callable[..., TrainConfig], str]] = {
    "sarcasm-cpu": (sarcasm_cpu_config,
                    "flat GRPO on Sarcasm-v0's short yes/no form, 2 prompts x 128 one-token answers a step"),
    "sarcasm-protocol-sft": (sarcasm_protocol_sft_config,
                             "supervised warm start on protocol demonstrations: tool calls, answer format, end of turn"),
    "sarcasm-chat-grpo": (sarcasm_chat_grpo_config,
                          "flat GRPO on the agent's answer turn (prompt form chat), from a warm-start adapter"),
    "sarcasm-anchored-chat-grpo": (sarcasm_anchored_chat_grpo_config,
                                   "the same, with the demonstrations' NLL in every step's loss to hold the protocol"),
    "sarcasm-protocol-refresher": (sarcasm_protocol_refresher_config,
                                   "a few supervised steps on the demonstrations' tool-call turns, after GRPO"),
    "sarcasm-multiturn-grpo": (sarcasm_multiturn_grpo_config,
                               "multi-turn GRPO: the policy's own tool calls in the rollout (environment_factory)"),
    "emotion-style-grpo": (emotion_style_grpo_config,
                           "EmotionStyle-v0: flat GRPO on the classifier's P(target) and the rules (control=True: shuffled target)"),
    "emotion-style-classifier": (emotion_style_classifier_only_grpo_config,
                                 "EmotionStyle-v0: the same GRPO, P(target) the whole reward (rubric classifier-only, hackable)"),
    "emotion-style-dpo": (emotion_style_dpo_config,
                          "EmotionStyle-v0: one round of DPO on the policy's replies ranked by the env (calibrated classifier)"),
    "emotion-style-best-of": (emotion_style_best_of_config,
                              "EmotionStyle-v0: supervised training on the policy's best of 8 replies by the env (control=True: shuffled target)"),
    "dialogue-reference-sft": (dialogue_reference_sft_config,
                               "EmpatheticDialogue-v0: supervised fine-tuning on the train split's reference replies"),
    "dialogue-dpo": (dialogue_dpo_config,
                     "EmpatheticDialogue-v0: online DPO on the policy's own replies ranked by the env's rubric"),
}


def recipe_needs(name: str) -> list[str]:
    """The options recipe ``name`` cannot do without (its arguments with no default), output folder aside.

    >>> recipe_needs("sarcasm-anchored-chat-grpo")
    ['init_adapter', 'demos']
    """
    parameters = inspect.signature(RECIPES[name][0]).parameters.values()
    return [p.name for p in parameters
            if p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD and p.name != "output_dir"]


def recipe_config(name: str, options: Mapping[str, Any] | None = None) -> TrainConfig:
    """The config of recipe ``name``, with ``options`` (:class:`TrainConfig` fields) over the recipe's own values.

    The options go through the recipe's function, so those it derives from (``max_steps``:
    the warmup and the number of rows) follow them. The output folder defaults to
    ``runs/<name>``.

    >>> config = recipe_config("sarcasm-cpu", {"max_steps": 12})
    >>> config.max_steps, config.warmup_steps, config.n_train, config.output_dir
    (12, 2, 24, 'runs/sarcasm-cpu')

    Raises:
        ValueError: An unknown name, another env or algorithm than the recipe's, or a needed
            option missing (each named).
    """
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; recipes: {', '.join(RECIPES)} (affectgym train --list-recipes)")
    values = {"output_dir": f"runs/{name}", **dict(options or {})}
    own = recipe_defaults(name)
    if values.get("env_id") and values["env_id"] != own.env_id:
        raise ValueError(f"--recipe {name}: this recipe trains {own.env_id}, not {values['env_id']}; leave ENV_ID out, "
                         f"or pick a recipe of {values['env_id']} (affectgym train --list-recipes)")
    if values.get("algo", own.algo) != own.algo:
        raise ValueError(f"--recipe {name} is an --algo {own.algo} recipe; drop --algo {values['algo']}, or drop --recipe "
                         "and give that algorithm's options")
    missing = [need for need in recipe_needs(name) if values.get(need) in (None, [])]
    if missing:
        raise ValueError(f"--recipe {name} needs " + " and ".join(f"--{need.replace('_', '-')}" for need in missing))
    return RECIPES[name][0](**values)


def recipe_defaults(name: str) -> TrainConfig:
    """Recipe ``name`` with its own values alone (placeholders for what it needs): its env, algorithm and options.

    >>> recipe_defaults("sarcasm-anchored-chat-grpo").env_id, recipe_defaults("dialogue-dpo").algo
    ('affectgym/Sarcasm-v0', 'dpo')
    """
    lists = {item.name for item in config_fields() if item.default_factory is list}
    placeholders = {need: [need] if need in lists else need for need in recipe_needs(name)}
    return RECIPES[name][0](output_dir=f"runs/{name}", **placeholders)


def recipe_listing() -> str:
    """One line per recipe: its name, what it trains and the options it needs."""
    lines = []
    for name, (_, summary) in RECIPES.items():
        needs = " ".join(f"--{need.replace('_', '-')} ..." for need in recipe_needs(name))
        lines.append(f"{name:27} {summary}" + (f"; needs {needs}" if needs else ""))
    return "\n".join(lines)


__all__ = [
    "AGENT_MAX_NEW_TOKENS",
    "DIALOGUE_ENV_ID",
    "DIALOGUE_MAX_NEW_TOKENS",
    "EMOTION_STYLE_ENV_ID",
    "MULTITURN_COMPLETION_TOKENS",
    "RECIPES",
    "SARCASM_AGENT_FORM",
    "SARCASM_ENV_ID",
    "SARCASM_SHORT_FORM",
    "STYLE_BEST_OF_MIN_REWARD",
    "STYLE_DEMONSTRATION_PASSES",
    "STYLE_MAX_NEW_TOKENS",
    "dialogue_dpo_config",
    "dialogue_reference_sft_config",
    "emotion_style_best_of_config",
    "emotion_style_demonstration_sft_config",
    "emotion_style_classifier_only_grpo_config",
    "emotion_style_grpo_config",
    "sarcasm_anchored_chat_grpo_config",
    "sarcasm_chat_grpo_config",
    "sarcasm_cpu_config",
    "sarcasm_multiturn_grpo_config",
    "sarcasm_protocol_refresher_config",
    "sarcasm_protocol_sft_config",
    "recipe_config",
    "recipe_defaults",
    "recipe_listing",
    "recipe_needs",
]
