"""Is the Sarcasm-v0 cue learnable by the policy gradient, and how many samples does GRPO need?

A diagnostic for :mod:`affectgym.train.recipes`, outside TRL so that the gradient estimator
is the only thing that varies. In the recipe's short form the answer is decided by the
first completion token ("Yes"/"No"; anything else is unanswered), so one forward pass per
prompt gives the policy's whole answer distribution. Each arm trains the recipe's policy
(SmolLM2-135M-Instruct, the recipe's LoRA, AdamW at its learning rate and warmup then TRL's
default linear decay, which the recipe used when this was measured, and its whole-group
batches: a line's two deliveries per step) on one of two objectives, every
reward computed by the env's own rubric (``env.score``):

* ``exact``: the expected reward of the first-token distribution, differentiated exactly
  (no sampling);
* ``sampled-N``: GRPO's estimate from N sampled answers per prompt (group-mean baseline,
  group-std scaling, as TRL does by default).

Every ``--eval-every`` steps the greedy first token is scored on the line-grouped eval
split (accuracy, unanswered = wrong) with the mean P(yes) on each delivery. Rows go to
``benchmarks/results/estimator_runs.jsonl`` as they come; finished runs are skipped on a
rerun. Nothing here is a training path of the package: ``affectgym train`` is TRL's GRPO.

Usage: ``python benchmarks/bench_estimator.py [--arms exact sampled-8 sampled-64] [--seeds 0]``
(about 4 minutes per arm and seed on one CPU core at 60 steps).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from affectgym.train.recipes import SARCASM_ENV_ID, sarcasm_cpu_config

ROOT = Path(__file__).resolve().parents[1]
RUNS_FILE = ROOT / "benchmarks" / "results" / "estimator_runs.jsonl"
UNANSWERED = "unanswered"


class FirstTokenTask:
    """The recipe's env, read one first token at a time.

    Attributes:
        classes: Answer labels and ``"unanswered"``; ``token_class[i]`` is the index of
            token ``i``'s class (what the env's parser reads from that token alone).
    """

    def __init__(self, tokenizer: Any, env_kwargs: dict[str, Any]):
        import torch

        import affectgym

        self.tokenizer = tokenizer
        self.envs = {split: affectgym.make(SARCASM_ENV_ID, split=split, **env_kwargs).unwrapped for split in ("train", "eval")}
        env = self.envs["train"]
        labels = [self._label(env, tokenizer.decode([i])) for i in range(len(tokenizer))]
        self.classes = sorted({label for label in labels if label != UNANSWERED}) + [UNANSWERED]
        self.token_class = torch.tensor([self.classes.index(label) for label in labels])
        self.example = {c: tokenizer.decode([labels.index(c)]) for c in self.classes}
        self._rewards: dict[str, Any] = {}

    @staticmethod
    def _label(env: Any, text: str) -> str:
        answer = env.parse_reply(text).answer
        return answer["label"] if answer else UNANSWERED

    def class_rewards(self, split: str, scenario: Any) -> Any:
        """The env's reward for a reply of each class on ``scenario`` (a tensor, one per class)."""
        import torch

        if scenario.id not in self._rewards:
            env = self.envs[split]
            trace = env.flat_trace(scenario)
            self._rewards[scenario.id] = torch.tensor([env.score(scenario, self.example[c], trace).total for c in self.classes])
        return self._rewards[scenario.id]

    def first_token(self, model: Any, split: str, scenarios: list[Any]) -> tuple[Any, Any]:
        """Per scenario: the probability of each class as the first completion token, and
        the log-probability of every token."""
        import torch

        env = self.envs[split]
        texts = [self.tokenizer.apply_chat_template(env.flat_prompt(s), tokenize=False, add_generation_prompt=True) for s in scenarios]
        batch = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        log_probs = torch.log_softmax(model(**batch).logits[:, -1, :], dim=-1)
        class_probs = torch.zeros(len(scenarios), len(self.classes)).index_add(1, self.token_class, log_probs.exp())
        return class_probs, log_probs


def grpo_loss(task: FirstTokenTask, scenarios: list[Any], log_probs: Any, samples: int, generator: Any) -> Any:
    """GRPO's surrogate loss from ``samples`` sampled first tokens per prompt."""
    import torch

    losses = []
    for scenario, row in zip(scenarios, log_probs, strict=True):
        tokens = torch.multinomial(row.detach().exp(), samples, replacement=True, generator=generator)
        rewards = task.class_rewards("train", scenario)[task.token_class[tokens]]
        advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-4)
        losses.append(-(advantages * row[tokens]).mean())
    return torch.stack(losses).mean()


def exact_loss(task: FirstTokenTask, scenarios: list[Any], class_probs: Any) -> Any:
    """Minus the expected reward of the first-token distribution."""
    import torch

    rewards = torch.stack([task.class_rewards("train", s) for s in scenarios])
    return -(class_probs * rewards).sum(dim=1).mean()


def evaluate(task: FirstTokenTask, model: Any) -> dict[str, float]:
    """Greedy accuracy (the most likely first token; unanswered = wrong) and mean P(first class) per label on the eval split."""
    import torch

    scenarios = list(task.envs["eval"].scenarios)
    right, p_first = 0, {}
    with torch.no_grad():
        for start in range(0, len(scenarios), 10):
            chunk = scenarios[start:start + 10]
            class_probs, log_probs = task.first_token(model, "eval", chunk)
            greedy_classes = task.token_class[log_probs.argmax(dim=1)].tolist()
            for scenario, row, greedy in zip(chunk, class_probs, greedy_classes, strict=True):
                rewards = task.class_rewards("eval", scenario)
                right += task.classes[greedy] != UNANSWERED and bool(rewards[greedy] == rewards.max())
                p_first.setdefault(scenario.label, []).append(float(row[0]))
    result = {"accuracy": right / len(scenarios)}
    result.update({f"p_{task.classes[0]}_given_{label}": round(statistics.fmean(v), 4) for label, v in sorted(p_first.items())})
    return result


def run(task: FirstTokenTask, arm: str, seed: int, steps: int, eval_every: int) -> list[dict[str, Any]]:
    """Train one arm on one seed with the recipe's policy and optimiser; its eval rows."""
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM, get_linear_schedule_with_warmup, set_seed

    from affectgym.models import resolve_model
    from affectgym.train.flatten import to_dataset
    from affectgym.train.policy import peft_config

    config = sarcasm_cpu_config("runs/bench-estimator", max_steps=steps, seed=seed)
    set_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(resolve_model(config.model))
    model = get_peft_model(base, peft_config(config, base.config.model_type, base.config.num_hidden_layers))
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.learning_rate, weight_decay=0.0)
    schedule = get_linear_schedule_with_warmup(optimiser, config.warmup_steps, steps)
    prompts_per_step = config.batch_size // config.num_generations
    order = to_dataset(SARCASM_ENV_ID, n=steps * prompts_per_step, seed=seed, env_kwargs=config.env_kwargs,
                       group_rows=True, rows_per_batch=prompts_per_step)["scenario_id"]
    by_id = {s.id: s for s in task.envs["train"].scenarios}
    generator = torch.Generator().manual_seed(seed)
    tags = {"arm": arm, "seed": seed, "steps": steps, "learning_rate": config.learning_rate}
    rows = [{"kind": "eval", **tags, "step": 0, **evaluate(task, model)}]
    for step in range(1, steps + 1):
        scenarios = [by_id[i] for i in order[(step - 1) * prompts_per_step:step * prompts_per_step]]
        class_probs, log_probs = task.first_token(model, "train", scenarios)
        if arm == "exact":
            loss = exact_loss(task, scenarios, class_probs)
        else:
            loss = grpo_loss(task, scenarios, log_probs, int(arm.split("-")[1]), generator)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        if step % eval_every == 0 or step == steps:
            rows.append({"kind": "eval", **tags, "step": step, **evaluate(task, model)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def read_rows() -> list[dict[str, Any]]:
    """Every row written so far."""
    if not RUNS_FILE.is_file():
        return []
    return [json.loads(line) for line in RUNS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def first_token_task() -> FirstTokenTask:
    """The task of the recipe's model and env options (one for every run: building it parses every token)."""
    from transformers import AutoTokenizer

    from affectgym.models import resolve_model

    config = sarcasm_cpu_config("runs/bench-estimator")
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(config.model))
    tokenizer.padding_side = "left"
    return FirstTokenTask(tokenizer, config.env_kwargs)


def valid_arm(text: str) -> str:
    """``exact`` or ``sampled-N`` (N >= 2)."""
    if text == "exact" or (text.startswith("sampled-") and text[8:].isdigit() and int(text[8:]) >= 2):
        return text
    raise argparse.ArgumentTypeError(f"an arm is 'exact' or 'sampled-N' with N >= 2 samples per prompt, got {text!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", type=valid_arm, nargs="+", default=["exact", "sampled-8", "sampled-64"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--eval-every", type=int, default=10)
    args = parser.parse_args(argv)
    rows = read_rows()
    done = {(r["arm"], r["seed"], r["steps"]) for r in rows if r["step"] == r["steps"]}
    todo = [(arm, seed) for seed in args.seeds for arm in args.arms if (arm, seed, args.steps) not in done]
    task = first_token_task() if todo else None
    for arm, seed in todo:
        print(f"{arm} seed {seed}: {args.steps} steps ...", flush=True)
        new_rows = run(task, arm, seed, args.steps, args.eval_every)
        RUNS_FILE.parent.mkdir(parents=True, exist_ok=True)
        with RUNS_FILE.open("a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in new_rows)
        rows += new_rows
    print(f"\n| arm | seed | held-out accuracy by step ({args.steps} steps) |\n|---|---|---|")
    for arm in args.arms:
        for seed in args.seeds:
            curve = [r for r in rows if (r["arm"], r["seed"], r["steps"]) == (arm, seed, args.steps)]
            print(f"| {arm} | {seed} | " + ", ".join(f"{r['step']}: {r['accuracy']:.2f}" for r in curve) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
