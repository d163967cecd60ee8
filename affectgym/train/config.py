"""The training configuration: one dataclass, from which the CLI options and the YAML come.

One :class:`TrainConfig` serves every algorithm: GRPO and SFT (TRL, text envs) and PPO/SAC
(Stable-Baselines3, numeric envs). Every field carries its help text in ``metadata["help"]``
and, when it applies to some algorithms only, their names in ``metadata["algos"]``; setting
such a field away from its default under another ``algo`` is an error, not silently ignored,
and every value is checked when the config is built, naming the field and what it accepts.
TRL's ``TrlParser`` turns the fields into the options of ``affectgym train`` and reads its
YAML files (:mod:`affectgym.train.config_parser`); :func:`config_to_yaml` writes a commented
YAML file of the fields the config's algorithm uses, which that parser reads back.

>>> config = TrainConfig(env_id="affectgym/Sarcasm-v0", max_steps=3)
>>> config.max_steps, config.mode
(3, 'flat')
>>> "max_steps: 3" in config_to_yaml(config)
True
>>> ppo = TrainConfig(env_id="affectgym/EmotionState-v0", algo="ppo", timesteps=2048)
>>> ppo.output_dir, "timesteps: 2048" in config_to_yaml(ppo), "max_steps" in config_to_yaml(ppo)
('runs/sb3', True, False)
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

ALGOS = ("grpo", "sft", "dpo", "ppo", "sac")
GRPO = ("grpo",)
SFT = ("sft",)
DPO = ("dpo",)
SAMPLING = ("grpo", "dpo", "sft")  # the algorithms that sample replies from the policy (sft: with --best-of)
LM = ("grpo", "sft", "dpo")  # the algorithms that train a language model
DEMOS = ("grpo", "sft")  # the algorithms that read demonstrated episodes
SB3 = ("ppo", "sac")
#: ``lr_scheduler`` choices and the ``transformers`` schedule each names (every one warms up first).
LR_SCHEDULERS = {"linear": "linear", "constant": "constant_with_warmup", "cosine": "cosine"}


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


def _grpo(text: str, **extra: Any) -> dict[str, Any]:
    return _help(text, algos=GRPO, **extra)


def _lm(text: str, **extra: Any) -> dict[str, Any]:
    return _help(text, algos=LM, **extra)


def _sft(text: str, **extra: Any) -> dict[str, Any]:
    return _help(text, algos=SFT, **extra)


def _demos(text: str, **extra: Any) -> dict[str, Any]:
    return _help(text, algos=DEMOS, **extra)


def _dpo(text: str, **extra: Any) -> dict[str, Any]:
    return _help(text, algos=DPO, **extra)


def _sampling(text: str, **extra: Any) -> dict[str, Any]:
    return _help(text, algos=SAMPLING, **extra)


@dataclass
class TrainConfig:
    """Options of a training run (``affectgym train``); see each field's help."""

    env_id: str = field(default="", metadata=_help("environment id, e.g. affectgym/Sarcasm-v0", positional=True))
    model: str = field(
        default="smollm2-135m",
        metadata=_lm("policy model: an alias (smollm2-135m), a local folder or a hub id"),
    )
    init_adapter: str | None = field(
        default=None,
        metadata=_lm(
            "start from this trained LoRA adapter (e.g. an --algo sft run's adapter/) and keep training it; "
            "its rank and layers replace the --lora-* options"
        ),
    )
    mode: Literal["flat", "multiturn"] = field(
        default="flat",
        metadata=_grpo(
            "flat: single-shot prompts with every tool output pre-rendered; "
            "multiturn: the policy calls the env's tools through TRL's environment_factory"
        ),
    )
    algo: Literal["grpo", "sft", "dpo", "ppo", "sac"] = field(
        default="grpo",
        metadata=_help(
            "grpo (TRL, text envs); sft (TRL's SFTTrainer on demonstrations: eval results files or the env's "
            "references); dpo (TRL's DPOTrainer on pairs of the policy's own replies ranked by the env's reward); "
            "ppo or sac (Stable-Baselines3, numeric envs such as EmotionState-v0)"
        ),
    )
    rounds: int = field(
        default=1, metadata=_dpo("rounds of sampling pairs from the current policy, then training on them (online DPO)")
    )
    samples_per_prompt: int = field(
        default=4, metadata=_dpo("replies sampled per train prompt each round; the best and the worst make a pair")
    )
    pair_margin: float = field(
        default=0.1, metadata=_dpo("keep a pair only when the env scores its chosen reply at least this much higher")
    )
    pairs: list[str] = field(
        default_factory=list,
        metadata=_dpo("offline pairs: a JSONL file of {prompt, chosen, rejected} rows (repeatable); no sampling"),
    )
    dpo_beta: float = field(
        default=0.1, metadata=_dpo("DPO's beta: how far the policy may move from the round's reference policy")
    )
    prompt_form: Literal["flat", "chat"] = field(
        default="flat",
        metadata=_grpo(
            "flat mode's prompt: flat (system + user, every tool output pre-rendered) or chat (the conversation "
            "after the agent's own flat tool calls, rendered with the tool schemas: the answer turn of a "
            "multi-step episode)"
        ),
    )
    demos: list[str] = field(
        default_factory=list,
        metadata=_demos(
            "an affectgym eval results folder (or results.jsonl) of train-split episodes; repeat for several. "
            "SFT learns them; GRPO anchors to them (--anchor-coef)"
        ),
    )
    references: bool = field(
        default=False, metadata=_sft("learn the env's reference replies (env.reference_answer) on its train split")
    )
    best_of: int = field(
        default=0,
        metadata=_sft(
            "also learn the policy's own best reply to each train prompt: sample this many (--temperature, "
            "--max-completion-length, --n-train prompts), the env scores them, the best is kept when it reaches "
            "--min-reward (rejection sampling; 0 = none)"
        ),
    )
    min_reward: float | None = field(
        default=None,
        metadata=_demos("keep only demonstrated episodes (and --best-of replies) with at least this reward"),
    )
    correct_only: bool = field(
        default=False, metadata=_demos("keep only demonstrated episodes whose outcome is correct")
    )
    tool_turns_only: bool = field(
        default=False,
        metadata=_demos(
            "learn only the turns that call tools: each demonstrated episode ends after its last tool result, so "
            "its final answer is not trained (a protocol refresher, or a GRPO anchor that leaves the answer alone)"
        ),
    )
    anchor_coef: float = field(
        default=0.0,
        metadata=_grpo(
            "weight of a supervised anchor: the mean NLL of the --demos demonstrations' assistant turns, added to "
            "every GRPO loss, keeps the demonstrated protocol (tool calls, answer format, end of turn); 0 = off"
        ),
    )
    anchor_rows: int = field(default=1, metadata=_grpo("demonstrations in each step's anchor loss"))
    timesteps: int = field(default=100_000, metadata=_help("training timesteps, all envs together", algos=SB3))
    n_envs: int = field(default=8, metadata=_help("parallel training envs", algos=SB3))
    max_steps: int = field(default=50, metadata=_lm("optimizer steps"))
    num_generations: int = field(default=4, metadata=_grpo("completions per prompt (the GRPO group size)"))
    batch_size: int = field(
        default=8,
        metadata=_lm("GRPO: completions per device per step (a multiple of --num-generations); SFT: examples per step"),
    )
    gradient_accumulation_steps: int = field(default=1, metadata=_lm("steps accumulated per optimizer step"))
    learning_rate: float = field(default=1e-5, metadata=_lm("peak learning rate"))
    warmup_steps: int = field(
        default=0, metadata=_lm("optimizer steps of linear learning-rate warmup before the schedule")
    )
    lr_scheduler: Literal["linear", "constant", "cosine"] = field(
        default="linear",
        metadata=_lm("learning rate after the warmup: linear decay to 0, constant, or cosine decay to 0"),
    )
    scale_rewards: Literal["group", "batch", "none"] = field(
        default="group",
        metadata=_grpo("advantage scaling: by each group's reward std (group), the batch's (batch) or none"),
    )
    max_completion_length: int = field(default=128, metadata=_sampling("most tokens generated per completion"))
    eval_max_new_tokens: int | None = field(
        default=None,
        metadata=_lm(
            "longest message the held-out evaluations decode per turn (greedy; the same limit as "
            "affectgym eval -t N); default --max-completion-length (GRPO) or 256 (SFT)"
        ),
    )
    temperature: float = field(default=1.0, metadata=_sampling("sampling temperature of the rollouts"))
    beta: float = field(default=0.0, metadata=_grpo("KL coefficient (0 = no reference model)"))
    entropy_coef: float = field(
        default=0.0, metadata=_grpo("weight of TRL's mean per-token entropy bonus in the loss (0 = none)")
    )
    lora_r: int = field(default=16, metadata=_lm("LoRA rank; 0 trains the full model"))
    lora_alpha: int = field(default=32, metadata=_lm("LoRA alpha"))
    lora_dropout: float = field(default=0.05, metadata=_lm("LoRA dropout"))
    lora_target_modules: str = field(
        default="auto",
        metadata=_lm("comma-separated module names, or auto (q_proj,k_proj,v_proj,o_proj for llama/qwen/mistral)"),
    )
    lora_layers: int = field(
        default=0,
        metadata=_lm("adapt only the last N transformer layers (a shorter backward pass on CPU); 0 = every layer"),
    )
    output_dir: str | None = field(
        default=None,
        metadata=_help(
            "where config.yaml, logs, figures and the model (GRPO, SFT: the adapter) go",
            by_algo={"grpo": "runs/train", "sft": "runs/sft", "dpo": "runs/dpo", "ppo": "runs/sb3", "sac": "runs/sb3"},
        ),
    )
    eval_episodes: int | None = field(
        default=None,
        metadata=_help(
            "evaluation episodes at the end: GRPO/SFT base vs trained on held-out scenarios, played multi-step "
            "through the eval runner (0 skips it); PPO/SAC trained vs random policy on fixed seeds",
            by_algo={"grpo": 32, "sft": 32, "dpo": 32, "ppo": 20, "sac": 20},
        ),
    )
    eval_every_steps: int = field(
        default=0,
        metadata=_grpo("flat mode: greedy held-out evaluation every N steps into heldout.jsonl (the learning curve); 0 = off"),
    )
    heldout_split: Literal["validation", "eval"] = field(
        default="validation",
        metadata=_grpo(
            "the split of the learning curve (eval_every_steps): validation, so that settings chosen from the "
            "curve never saw eval; eval only to compare with runs made before the validation split"
        ),
    )
    use_vllm: bool = field(default=False, metadata=_grpo("generate with vLLM (GPU only)"))
    vllm_mode: Literal["colocate", "server"] = field(
        default="colocate", metadata=_grpo("vLLM in the training process (colocate) or a trl vllm-serve server")
    )
    vllm_server_base_url: str | None = field(default=None, metadata=_grpo(
        "the trl vllm-serve server of vllm_mode server, e.g. http://10.0.0.2:8000 (default: TRL's, port 8000 of this machine)"
    ))
    bf16: bool | None = field(default=None, metadata=_lm("bf16 weights and autocast; default: on with a GPU"))
    gradient_checkpointing: bool | None = field(
        default=None, metadata=_lm("gradient checkpointing; default: on with a GPU")
    )
    n_train: int | None = field(
        default=None, metadata=_sampling("training rows (scenarios repeated or sampled); default one pass")
    )
    balance: bool = field(default=True, metadata=_grpo("class-balanced interleaving of the rows"))
    group_batches: bool = field(
        default=False,
        metadata=_grpo(
            "rows group by group (e.g. both deliveries of a pivot line next to each other) and batches taken "
            "in that order, so one batch contrasts them"
        ),
    )
    share_prompts: bool = field(
        default=True,
        metadata=_grpo(
            "run each distinct prompt through the model once per step and its completions from the cached "
            "prompt (affectgym's SharedPrefixGRPOTrainer); off: TRL's GRPOTrainer, which runs the prompt once "
            "per completion"
        ),
    )
    oversample: dict[str, int] = field(
        default_factory=dict, metadata=_grpo("repeat flagged subsets, e.g. pivot=2")
    )
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata=_help("env keyword arguments, as JSON"))
    max_tool_calling_iterations: int = field(
        default=6, metadata=_grpo("multiturn: most tool-calling rounds per rollout")
    )
    logging_steps: int = field(default=1, metadata=_lm("log every N steps"))
    save_steps: int = field(
        default=10,
        metadata=_lm(
            "save a checkpoint (weights, optimizer, schedule, random state) every N optimizer steps into "
            "OUTPUT_DIR/trainer/, the last two kept, for --resume; 0 = none"
        ),
    )
    seed: int = field(default=0, metadata=_help("seed of the data order, sampling and initialisation"))
    report_to: str = field(default="none", metadata=_lm("trackers for transformers (none, wandb, tensorboard, ...)"))

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise ValueError(f"invalid training config: algo must be one of {', '.join(ALGOS)}, got {self.algo!r}")
        for item in config_fields():
            if getattr(self, item.name) is None and "by_algo" in item.metadata:
                setattr(self, item.name, item.metadata["by_algo"][self.algo])
        problems = self._type_problems()
        if problems:  # the range checks below assume the types
            raise ValueError("invalid training config: " + "; ".join(problems))
        problems = self._options_of_other_algos() + self._range_problems()
        for name in ("max_steps", "num_generations", "batch_size", "gradient_accumulation_steps", "max_completion_length"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.num_generations < 2:
            problems.append(f"num_generations must be at least 2 (GRPO compares completions), got {self.num_generations}")
        elif self.algo == "grpo" and self.batch_size % self.num_generations:
            problems.append(
                f"batch_size ({self.batch_size}) must be a multiple of num_generations ({self.num_generations})"
            )
        if self.vllm_server_base_url is not None and not (self.use_vllm and self.vllm_mode == "server"):
            problems.append("vllm_server_base_url needs use_vllm and vllm_mode server (it names the server TRL generates on)")
        elif self.vllm_server_base_url is not None and not re.fullmatch(r"https?://[^/\s]+/?", self.vllm_server_base_url):
            problems.append(f"vllm_server_base_url must be http://HOST:PORT or https://HOST:PORT, got {self.vllm_server_base_url!r}")
        if not 0 <= self.warmup_steps < self.max_steps:
            problems.append(f"warmup_steps must be an integer in [0, max_steps), got {self.warmup_steps!r}")
        if not 0 <= self.entropy_coef < math.inf:
            problems.append(f"entropy_coef must be a finite number >= 0 (0 = no bonus), got {self.entropy_coef!r}")
        if self.lora_r < 0:
            problems.append(f"lora_r must be >= 0 (0 = full fine-tuning), got {self.lora_r}")
        if self.lora_layers < 0:
            problems.append(f"lora_layers must be >= 0 (0 = every layer), got {self.lora_layers}")
        if self.eval_every_steps < 0:
            problems.append(f"eval_every_steps must be >= 0 (0 = off), got {self.eval_every_steps}")
        elif self.eval_every_steps > self.max_steps:
            problems.append(
                f"eval_every_steps ({self.eval_every_steps}) is more than max_steps ({self.max_steps}): the learning "
                "curve would have no point after the start; use at most max_steps, or 0 (off)"
            )
        if self.env_kwargs.get("split", "train") != "train":
            problems.append(
                f"env_kwargs may not set split {self.env_kwargs['split']!r}: training plays the train split, the held-out "
                "evaluation the eval split (and the learning curve --heldout-split); drop 'split' from --env-kwargs"
            )
        from affectgym.envs.registration import (
            split_shaping_arguments,  # the env layer, read only when validating
        )

        reshaping = [key for key in split_shaping_arguments(self.env_id, self.env_kwargs) if key != "split"]
        if reshaping:
            problems.append(
                f"env_kwargs may not set {', '.join(reshaping)}: {'they change' if len(reshaping) > 1 else 'it changes'} "
                f"which scenarios {self.env_id} holds out, so the run could train on scenarios of its registered validation "
                f"or eval split; drop {', '.join(repr(key) for key in reshaping)} from --env-kwargs (or the config file)"
            )
        if self.eval_episodes < 0:
            problems.append(f"eval_episodes must be >= 0, got {self.eval_episodes}")
        if self.prompt_form == "chat" and self.mode != "flat":
            problems.append("prompt_form='chat' is a flat-mode prompt; with --mode multiturn the policy makes its own tool calls")
        if self.eval_max_new_tokens is not None and self.eval_max_new_tokens < 1:
            problems.append(f"eval_max_new_tokens must be a positive integer, got {self.eval_max_new_tokens!r}")
        if not 0 <= self.anchor_coef < math.inf:
            problems.append(f"anchor_coef must be a finite number >= 0 (0 = no anchor), got {self.anchor_coef!r}")
        elif self.algo == "grpo" and bool(self.anchor_coef) != bool(self.demos):
            problems.append(
                "--algo grpo uses --demos as a supervised anchor: give both --demos RUN_DIR and --anchor-coef > 0, "
                f"or neither (got {len(self.demos)} --demos folder(s), anchor_coef={self.anchor_coef!r})"
            )
        if self.anchor_rows < 1:
            problems.append(f"anchor_rows must be a positive integer, got {self.anchor_rows!r}")
        if self.rounds < 1 or self.samples_per_prompt < 2:
            problems.append(
                f"rounds must be >= 1 and samples_per_prompt >= 2 (a pair needs two replies), got {self.rounds!r} "
                f"and {self.samples_per_prompt!r}"
            )
        if not 0 <= self.pair_margin < math.inf or not 0 < self.dpo_beta < math.inf:
            problems.append(
                f"pair_margin must be a finite number >= 0 and dpo_beta one > 0, got {self.pair_margin!r} and {self.dpo_beta!r}"
            )
        if self.pairs and self.rounds != 1:
            problems.append(f"offline --pairs train one round (nothing is sampled); drop --rounds {self.rounds}")
        if self.algo == "sft" and not (self.demos or self.references or self.best_of):
            problems.append("--algo sft needs demonstrations: --demos RUN_DIR (an affectgym eval folder; repeatable), "
                            "--references and/or --best-of N")
        if self.best_of < 0:
            problems.append(f"best_of must be an integer >= 0 (0 = no sampled demonstration), got {self.best_of!r}")
        if self.algo == "sft" and not self.best_of:
            fields_by_name = {item.name: item for item in dataclasses.fields(self)}
            sampling = [name for name in ("max_completion_length", "temperature", "n_train")
                        if getattr(self, name) != _default(fields_by_name[name])]
            if sampling:
                problems.append(f"--algo sft samples only with --best-of N; drop {', '.join(sampling)} or give --best-of")
        if self.algo in SB3:
            for name in ("timesteps", "n_envs", "eval_episodes"):
                if getattr(self, name) < 1:
                    problems.append(f"{name} must be a positive integer with --algo {self.algo}, got {getattr(self, name)!r}")
        if problems:
            raise ValueError("invalid training config: " + "; ".join(problems))

    def _type_problems(self) -> list[str]:
        """One problem per field whose value is not of its declared type."""
        return [problem for item in config_fields() if (problem := type_problem(item.name, getattr(self, item.name)))]

    def _range_problems(self) -> list[str]:
        """Values of the right type outside what the trainers accept."""
        problems = []
        if not 0 <= self.learning_rate < math.inf:
            problems.append(f"learning_rate must be a finite number >= 0 (0 = the policy stays as it is), got {self.learning_rate!r}")
        if not 0 < self.temperature < math.inf:
            problems.append(f"temperature must be a finite number > 0, got {self.temperature!r}")
        if not 0 <= self.beta < math.inf:
            problems.append(f"beta must be a finite number >= 0 (0 = no reference model), got {self.beta!r}")
        if not 0 <= self.lora_dropout < 1:
            problems.append(f"lora_dropout must be in [0, 1), got {self.lora_dropout!r}")
        if self.lora_alpha < 1:
            problems.append(f"lora_alpha must be a positive integer, got {self.lora_alpha!r}")
        if self.save_steps < 0:
            problems.append(f"save_steps must be an integer >= 0 (0 = no checkpoints), got {self.save_steps!r}")
        if self.logging_steps < 1:
            problems.append(f"logging_steps must be a positive integer, got {self.logging_steps!r}")
        if not 0 <= self.seed < 2**32:
            problems.append(f"seed must be an integer in [0, 2**32), got {self.seed!r}")
        if self.max_tool_calling_iterations < 1:
            problems.append(f"max_tool_calling_iterations must be a positive integer, got {self.max_tool_calling_iterations!r}")
        if self.n_train is not None and self.n_train < 1:
            problems.append(f"n_train must be a positive integer (or unset: one pass), got {self.n_train!r}")
        for flag, factor in self.oversample.items():
            if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
                problems.append(f"oversample[{flag!r}] must be an integer >= 1, got {factor!r}")
        if self.report_to != "none":
            known = reporting_integrations()
            unknown = [name for name in self.report_to.split(",") if name.strip() not in known]
            if unknown:
                problems.append(f"report_to must be none, all or a comma-separated list of {', '.join(sorted(known - {'none', 'all'}))}; got {self.report_to!r}")
        return problems

    def _options_of_other_algos(self) -> list[str]:
        """One problem naming the fields set away from their default that this ``algo`` does not use."""
        stray = [
            item for item in config_fields()
            if self.algo not in item.metadata.get("algos", ALGOS) and getattr(self, item.name) != _default(item)
        ]
        if not stray:
            return []
        named = ", ".join(f"--{item.name.replace('_', '-')} ({getattr(self, item.name)!r})" for item in stray)
        owners = sorted({algo for item in stray for algo in item.metadata["algos"]})
        return [
            f"{named} {'applies' if len(stray) == 1 else 'apply'} only to --algo {'/'.join(owners)}, "
            f"not to --algo {self.algo}; "
            f"--algo {self.algo} uses {', '.join(applicable_fields(self.algo))}"
        ]


def config_fields() -> list[dataclasses.Field]:
    """The fields of :class:`TrainConfig`, in order."""
    return list(dataclasses.fields(TrainConfig))


def applicable_fields(algo: str) -> list[str]:
    """Names of the fields that ``algo`` uses, in order.

    >>> applicable_fields("ppo")
    ['env_id', 'algo', 'timesteps', 'n_envs', 'output_dir', 'eval_episodes', 'env_kwargs', 'seed']
    """
    return [item.name for item in config_fields() if algo in item.metadata.get("algos", ALGOS)]


def _default(item: dataclasses.Field) -> Any:
    return item.default if item.default is not dataclasses.MISSING else item.default_factory()


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(TrainConfig)


def type_problem(name: str, value: Any) -> str | None:
    """What is wrong with ``value`` as the value of field ``name``, in words; ``None`` when it has the field's type.

    >>> type_problem("max_steps", "10"), type_problem("max_steps", 10)
    ("max_steps must be an integer, got '10'", None)
    """
    hint = _hints()[name]
    return None if _is_instance(value, hint) else f"{name} must be {_type_words(hint)}, got {value!r}"


def reporting_integrations() -> set[str]:
    """The ``report_to`` names transformers knows, with ``none`` and ``all``."""
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    return {*INTEGRATION_TO_CALLBACK, "none", "all"}


def _is_instance(value: Any, hint: Any) -> bool:
    """Whether ``value`` has the type of a field's hint (an int is a float; a bool is no number).

    >>> _is_instance(3, float), _is_instance(True, int), _is_instance(["a"], list[str]), _is_instance(None, int | None)
    (True, False, True, True)
    """
    kind, optional = _inner(hint)
    if value is None:
        return optional
    if typing.get_origin(kind) is Literal:
        return value in typing.get_args(kind)
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if typing.get_origin(kind) is list:
        (item,) = typing.get_args(kind)
        return isinstance(value, list) and all(_is_instance(v, item) for v in value)
    if typing.get_origin(kind) is dict or kind is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return isinstance(value, kind)


def _type_words(hint: Any) -> str:
    """A field's type in words, for error messages.

    >>> _type_words(int | None), _type_words(Literal["flat", "chat"])
    ('an integer (or null)', "one of 'flat', 'chat'")
    """
    kind, optional = _inner(hint)
    if typing.get_origin(kind) is Literal:
        words = "one of " + ", ".join(repr(v) for v in typing.get_args(kind))
    elif typing.get_origin(kind) is list:
        words = "a list of " + {str: "strings"}.get(typing.get_args(kind)[0], "values")
    elif typing.get_origin(kind) is dict or kind is dict:
        words = "a mapping with string keys"
    else:
        words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(kind, str(kind))
    return words + (" (or null)" if optional else "")


def _inner(hint: Any) -> tuple[Any, bool]:
    """``(type, optional)`` of a hint: ``int | None`` -> ``(int, True)``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return hint, False


def config_to_yaml(config: TrainConfig) -> str:
    """The config as YAML: the fields its ``algo`` uses, each preceded by its help as a comment."""
    import yaml

    lines = [f"# affectgym train configuration, --algo {config.algo} (affectgym train --config this.yaml)"]
    for item in config_fields():
        if item.name not in applicable_fields(config.algo):
            continue
        lines.append(f"# {item.metadata.get('help', '')}")
        dumped = yaml.safe_dump({item.name: getattr(config, item.name)}, default_flow_style=True, sort_keys=False)
        lines.append(dumped.strip().removeprefix("{").removesuffix("}"))
    return "\n".join(lines) + "\n"


__all__ = ["ALGOS", "TrainConfig", "applicable_fields", "config_fields", "config_to_yaml", "type_problem"]
