"""The training demo: train flat, then watch the model play Sarcasm-v0 with its own tool calls, on a CPU.

:func:`run_demo` runs the transfer recipes of :mod:`affectgym.train.recipes` briefly on the
embedded SmolLM2-135M-Instruct (alias ``smollm2-135m``), offline:

1. the label-blind protocol demonstrator plays Sarcasm-v0's train split
   (:mod:`affectgym.agents.protocol`);
2. a supervised warm start on those episodes teaches the tool protocol (the two flat tool
   calls in one message, a yes/no answer, the end of the turn), never the answer;
3. flat GRPO on the ``"chat"`` prompts (the agent's own answer turn) from that adapter, with
   the demonstrations as a supervised anchor in every step's loss (GRPO on the answer token
   would move the opening turn too; the anchor holds the tool calls, and teaches no label);
4. the trained model plays one held-out episode, calling the tools itself, then
   ``DEMO_EVAL_EPISODES`` clips of the held-out split (the line-grouped eval split: no eval
   line is heard in train) multi-step through the eval runner; its accuracy, with a 95%
   Wilson interval over the clips, is printed beside the committed long run
   (``benchmarks/results/transfer.json``: the base model, the warm start alone and the
   trained arms, with intervals over seeds and lines), labelled as such.

A short run does not show what the long one does: the table says which is which.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from affectgym.train.grpo import train
from affectgym.train.recipes import (
    AGENT_MAX_NEW_TOKENS,
    SARCASM_AGENT_FORM,
    SARCASM_ENV_ID,
    sarcasm_anchored_chat_grpo_config,
    sarcasm_protocol_sft_config,
)
from affectgym.train.sft import train_sft

DEMO_ENV_ID = SARCASM_ENV_ID
#: Warm-start steps (one demonstration each: the loss falls step for step as with the long
#: run's 4, at a quarter of the cost) and GRPO steps of the demo (the long run: 20 of 4, and 60).
DEMO_SFT_STEPS = 20
DEMO_SFT_BATCH = 1
DEMO_GRPO_STEPS = 6
#: Held-out clips the demo plays multi-step (the eval split has 46).
DEMO_EVAL_EPISODES = 20
#: The long run's committed result, relative to the repository root.
LONG_RUN_RESULT = Path("benchmarks") / "results" / "transfer.json"


def accuracy_interval(correct: int, total: int) -> tuple[float, float]:
    """The 95% Wilson interval of an accuracy of ``correct`` out of ``total``.

    >>> low, high = accuracy_interval(40, 50)
    >>> round(low, 3), round(high, 3)
    (0.67, 0.888)
    """
    from scipy.stats import binomtest

    interval = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="wilson")
    return float(interval.low), float(interval.high)


def result_table(trained: dict[str, Any], long_run: dict[str, Any] | None, steps: tuple[int, int]) -> str:
    """The trained model's multi-step held-out result, and the long run's arms when known."""
    classification, tool_use = trained["classification"], trained["tool_use"]
    n = classification["n"]
    low, high = accuracy_interval(round(classification["accuracy"] * n), n)
    pivot = classification["subsets"]["pivot"]["true"]["accuracy"]
    lines = [
        f"held-out {DEMO_ENV_ID}, played multi-step (the model calls the tools; greedy, {AGENT_MAX_NEW_TOKENS} tokens "
        f"a message): {n} clips of lines never seen in training; unanswered counts as wrong",
        f"{'':44s} {'accuracy (95% CI)':>20s} {'answered':>9s} {'pivot acc.':>10s} {'tool use':>9s} {'calls':>6s}",
        f"{f'trained here ({steps[0]} SFT, {steps[1]} anchored GRPO steps)':44s} {classification['accuracy']:>6.3f} "
        f"({low:.2f}-{high:.2f}){'':3s} {tool_use['answered_rate']:>9.2f} {pivot:>10.2f} {tool_use['tool_use_rate']:>9.2f} "
        f"{tool_use['mean_tool_calls']:>6.2f}",
    ]
    if long_run and long_run.get("arms"):
        from affectgym.eval.stats import Estimate

        seeds = max(len(entry["seeds"]) for entry in long_run["arms"].values())
        lines.append(f"committed long run ({LONG_RUN_RESULT}: {long_run['sft_steps']} SFT + up to {long_run['grpo_steps']} "
                     f"GRPO steps, up to {seeds} seeds; {long_run['intervals']}):")
        for arm, entry in long_run["arms"].items():
            accuracy = Estimate.from_dict(entry["accuracy"]).format(scope=False)
            lines.append(
                f"  {arm:42s} {accuracy:>20s} {entry['answered_rate']['mean']:>9.2f} "
                f"{entry['pivot_accuracy']['mean']:>10.2f} {entry['tool_use_rate']['mean']:>9.2f} "
                f"{entry['mean_tool_calls']['mean']:>6.2f}"
            )
    return "\n".join(lines)


def plain_verdict(trained: dict[str, Any]) -> str:
    """One sentence on what the short run shows: the protocol, and whether the answer beats chance.

    >>> plain_verdict({"classification": {"accuracy": 0.45, "n": 20}, "tool_use": {"tool_use_rate": 1.0, "answered_rate": 1.0}})
    'Plainly: the short run learned the protocol (tool use 1.00, answered 1.00), not yet the answer (accuracy 0.45, 95% CI 0.26-0.66, not above chance 0.5); the committed long run above is the full recipe.'
    """
    classification, tool_use = trained["classification"], trained["tool_use"]
    n, accuracy = classification["n"], classification["accuracy"]
    low, high = accuracy_interval(round(accuracy * n), n)
    protocol = f"tool use {tool_use['tool_use_rate']:.2f}, answered {tool_use['answered_rate']:.2f}"
    if low > 0.5:
        return f"Plainly: the short run learned the protocol ({protocol}) and the answer beats chance (accuracy {accuracy:.2f}, 95% CI {low:.2f}-{high:.2f})."
    return (f"Plainly: the short run learned the protocol ({protocol}), not yet the answer (accuracy {accuracy:.2f}, "
            f"95% CI {low:.2f}-{high:.2f}, not above chance 0.5); the committed long run above is the full recipe.")


def play_one_episode(adapter: Path, scenario_id: str | None = None, *, model: str = "smollm2-135m") -> str:
    """One held-out episode of the trained model, calling the tools itself; its transcript."""
    import affectgym
    from affectgym.agents.transformers_agent import TransformersAgent

    env = affectgym.make(DEMO_ENV_ID, split="eval", render_mode="ansi", **SARCASM_AGENT_FORM)
    agent = TransformersAgent(model, adapter=str(adapter), max_new_tokens=AGENT_MAX_NEW_TOKENS, temperature=0.0)
    last: dict[str, Any] = {}

    def step(action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = env.step(action)
        last["info"] = result[4]
        return result

    try:
        observation, info = env.reset(seed=0, options={"scenario_id": scenario_id} if scenario_id else None)
        agent.play(step, observation, info)
    finally:
        agent.close()
    outcome = last["info"].get("outcome") or {}
    verdict = (f"prediction {outcome.get('prediction')}, label {outcome.get('label')}, "
               f"{'right' if outcome.get('correct') else 'wrong'}, episode reward {last['info'].get('episode_reward', 0.0):.2f}")
    return f"{env.render()}\n\n[{verdict}]"


def run_demo(output_dir: str | Path = "runs/demo", *, model: str = "smollm2-135m", sft_steps: int = DEMO_SFT_STEPS,
             grpo_steps: int = DEMO_GRPO_STEPS, seed: int = 0,
             eval_episodes: int | None = DEMO_EVAL_EPISODES) -> dict[str, Any]:
    """Demonstrate, warm-start, train flat, play held-out episodes multi-step; print the table; write ``demo.json``.

    Args:
        output_dir: Output folder (an earlier demo there is replaced).
        model: Policy model (the tests pass a tiny one).
        sft_steps: Warm-start steps.
        grpo_steps: GRPO steps.
        seed: Seed of the demonstrations, data order, sampling and LoRA initialisation.
        eval_episodes: Held-out episodes played at the end (``None``: the whole eval split).

    Returns:
        ``{"sft": ..., "grpo": ..., "heldout": <eval summary>, "episode": <transcript>}``.
    """
    import affectgym
    from affectgym.eval.config import EvalConfig
    from affectgym.eval.runner import run_eval

    if DEMO_ENV_ID not in affectgym.list_envs():
        raise RuntimeError(f"the demo needs {DEMO_ENV_ID}, which is not registered (affectgym list)")
    out = Path(output_dir)
    print(f"1/4 the protocol demonstrator plays the train split of {DEMO_ENV_ID} (tool calls, then a random yes/no)",
          flush=True)
    demos = out / "demos"
    run_eval(EvalConfig(env_id=DEMO_ENV_ID, agent="protocol", out=demos, split="train", seed=seed,
                        env_kwargs=dict(SARCASM_AGENT_FORM), concurrency=4, progress=False, resume=demos.exists()))
    print(f"2/4 supervised warm start of {model} on those episodes (the protocol, not the answer)", flush=True)
    sft = train_sft(sarcasm_protocol_sft_config(out / "sft", [str(demos)], seed=seed, max_steps=sft_steps, model=model,
                                                batch_size=DEMO_SFT_BATCH), progress=True, overwrite=True)
    print("3/4 flat GRPO on the chat prompts (the agent's answer turn, the tool results in it), the demonstrations "
          "anchoring the tool calls", flush=True)
    grpo = train(sarcasm_anchored_chat_grpo_config(out / "flat-grpo", sft["adapter_dir"], [str(demos)], seed=seed,
                                                   max_steps=grpo_steps, eval_every_steps=0, model=model),
                 progress=True, overwrite=True)
    adapter = Path(grpo["adapter_dir"])
    print("4/4 the trained model plays held-out lines as an agent, calling the tools itself; one episode:\n", flush=True)
    episode = play_one_episode(adapter, model=model)
    print(episode, flush=True)
    heldout_dir = out / "eval-trained"
    if heldout_dir.exists():
        shutil.rmtree(heldout_dir)  # an earlier demo's episodes
    heldout = run_eval(EvalConfig(
        env_id=DEMO_ENV_ID, agent=f"hf:{model}", out=heldout_dir, split="eval", seed=seed, n=eval_episodes,
        env_kwargs=dict(SARCASM_AGENT_FORM), concurrency=16, progress=False, max_fail_fraction=1.0,
        agent_kwargs={"adapter": str(adapter), "max_new_tokens": AGENT_MAX_NEW_TOKENS, "temperature": 0.0,
                      "max_batch_size": 16},
    )).summary
    long_run_file = Path.cwd() / LONG_RUN_RESULT
    long_run = json.loads(long_run_file.read_text(encoding="utf-8")) if long_run_file.is_file() else None
    print(f"\ntrained {sft['steps']} SFT steps in {sft['train_s']:.0f} s and {grpo['steps']} anchored GRPO steps in "
          f"{grpo['train_s']:.0f} s")
    print(result_table(heldout, long_run, (sft["steps"], grpo["steps"])))
    print(plain_verdict(heldout))
    print("\n".join([
        f"episodes:      {heldout_dir / 'results.jsonl'} (every held-out episode, tool calls included)",
        f"adapter:       {adapter} (affectgym eval {DEMO_ENV_ID} --agent hf:{model} --adapter {adapter} "
        f"-t {AGENT_MAX_NEW_TOKENS} --env-kwargs '{json.dumps(SARCASM_AGENT_FORM)}')",
    ]))
    summary = {"sft": sft, "grpo": grpo, "heldout": heldout, "episode": episode}
    (out / "demo.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return summary


__all__ = ["DEMO_ENV_ID", "DEMO_EVAL_EPISODES", "DEMO_GRPO_STEPS", "DEMO_SFT_BATCH", "DEMO_SFT_STEPS", "accuracy_interval", "plain_verdict",
           "play_one_episode", "result_table", "run_demo"]


if __name__ == "__main__":  # python -m affectgym.train.demo [OUTPUT_DIR]
    import sys

    run_demo(sys.argv[1] if len(sys.argv) > 1 else "runs/demo")
