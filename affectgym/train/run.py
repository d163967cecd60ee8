"""A trained run's last steps: its summary, its held-out evaluation, and the eval that replays it.

Every language-model algorithm ends its run here (:func:`finish_run`): the summary
(:func:`run_summary`), the held-out evaluation of the base model and the trained adapter side
by side, played multi-step through the eval runner (:func:`evaluate_base_and_trained`), and
``summary.json``. The eval of a run has one encoding, :func:`heldout_eval_config`: the run plays
it, ``comparison.json`` records it as a command, and ``affectgym eval --from-train RUN`` replays it.
The run's folder itself (claimed, held, resumed) is :mod:`affectgym.train.run_dir`'s.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from affectgym.eval.config import EvalConfig
from affectgym.train.config import TrainConfig
from affectgym.train.plots import plot_eval_comparison
from affectgym.train.policy import has_gpu, resolve_model


def finished_training(output_dir: str | Path) -> bool:
    """Whether the run in ``output_dir`` finished training (its adapter and log history are written)."""
    folder = Path(output_dir)
    return (folder / "log_history.json").is_file() and (folder / "adapter").is_dir()


def run_summary(config: TrainConfig, output_dir: Path, history: list[dict[str, Any]], figures: list[Path], *,
                train_s: float | None = None) -> dict[str, Any]:
    """The summary of a trained run, before its held-out evaluation.

    ``train_s``: the wall time of this call's loading and training; by default the log's
    ``train_runtime`` (the training loop alone).
    """
    rewards = [row["reward"] for row in history if "reward" in row]
    steps, runtime_s = logged_steps_and_runtime(history)
    return {
        "env_id": config.env_id,
        "model": config.model,
        "mode": config.mode,
        "seed": config.seed,
        "steps": steps,
        "train_s": round(runtime_s if train_s is None else train_s, 2),
        "first_reward": rewards[0] if rewards else None,
        "last_reward": rewards[-1] if rewards else None,
        "output_dir": str(output_dir),
        "adapter_dir": str(output_dir / "adapter"),
        "log_history": str(output_dir / "log_history.json"),
        "figures": [str(p) for p in figures],
    }


def logged_steps_and_runtime(history: list[dict[str, Any]]) -> tuple[int, float]:
    """The last optimizer step of a trainer's ``log_history`` and its ``train_runtime`` in seconds (0 when absent).

    >>> logged_steps_and_runtime([{"loss": 1.0, "step": 1}, {"loss": 0.5, "step": 2}, {"train_runtime": 3.5, "step": 2}])
    (2, 3.5)
    """
    steps = max((int(row.get("step", 0)) for row in history), default=0)
    runtime_s = next((row["train_runtime"] for row in reversed(history) if "train_runtime" in row), 0.0)
    return steps, runtime_s


def finish_run(config: TrainConfig, output_dir: Path, summary: dict[str, Any], *, gpu: bool,
               resume: bool = False) -> dict[str, Any]:
    """Add the held-out evaluation (resumed where it stopped with ``resume``) and write ``summary.json``."""
    if config.eval_episodes > 0:
        summary["eval"] = evaluate_base_and_trained(config, output_dir / "adapter", output_dir / "eval", gpu=gpu,
                                                    resume=resume)
    (output_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def evaluate_base_and_trained(
    config: TrainConfig, adapter_dir: str | Path, out_dir: str | Path, *, gpu: bool | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Held-out evaluation of the base model and the trained adapter, side by side, as they are deployed.

    Both play ``config.eval_episodes`` scenarios of the env's ``eval`` split through the eval
    runner (:func:`affectgym.eval.runner.run_eval`) as multi-step agents: the model's
    messages are parsed for tool calls, the tools' outputs come back as tool messages and the
    env scores the final answer, whatever the training mode. Decoding is greedy, at most
    :func:`eval_max_new_tokens` tokens a message: the run of
    ``affectgym eval ENV --agent hf:MODEL --adapter ADAPTER -t N`` that ``comparison.json``
    records as ``command``. Writes ``out_dir/base/``, ``out_dir/trained/`` (the runner's
    ``results.jsonl``, ``metadata.json``, ``summary.json``), ``out_dir/comparison.json`` and
    ``out_dir/comparison.png``.
    What the trained side played is recorded in ``out_dir/trained_adapter.json`` (the folder
    and its :func:`adapter_digest`): a resumed run whose adapter changed since (a DPO run
    resumed with more rounds) plays its trained side again instead of reporting the earlier
    adapter's episodes as its own.

    Args:
        config: The run's options (model, env, eval_episodes, seed).
        adapter_dir: The trained adapter (or full model, with ``lora_r=0``).
        out_dir: Output folder.
        gpu: Whether to use a GPU; default: :func:`has_gpu`.
        resume: Keep the episodes an interrupted evaluation already played and play the rest.

    Returns:
        ``{"base": {...}, "trained": {...}, "delta_reward": ...}`` with each side's mean
        reward, its 95% interval, components, accuracy (when the env reports one), tool use
        and folder.
    """
    from affectgym.eval.runner import run_eval

    gpu = has_gpu() if gpu is None else gpu
    out_dir = Path(out_dir)
    max_new_tokens = eval_max_new_tokens(config)
    digest = adapter_digest(adapter_dir)
    played = out_dir / "trained_adapter.json"
    if (out_dir / "trained").exists() and not (resume and _played_digest(played) == digest):
        shutil.rmtree(out_dir / "trained")  # another adapter's episodes
    out_dir.mkdir(parents=True, exist_ok=True)
    played.write_text(json.dumps({"adapter": str(adapter_dir), "sha256": digest}, indent=2), encoding="utf-8")
    sides: dict[str, Any] = {}
    played_configs: dict[str, EvalConfig] = {}
    for side in ("base", "trained"):
        played_configs[side] = heldout_eval_config(config, adapter_dir, out_dir / side, side=side, gpu=gpu,
                                                   resume=resume and (out_dir / side / "results.jsonl").is_file())
        result = run_eval(played_configs[side])
        summary = result.summary
        sides[side] = {
            "reward_mean": summary["reward"]["mean"],
            "reward_ci95": summary["reward"]["ci95"],
            "episodes": summary["episodes"],
            "reward_components": summary["reward_components"],
            "accuracy": (summary.get("classification") or {}).get("accuracy"),
            "tool_use": summary["tool_use"],
            "folder": str(out_dir / side),
        }
    sides["trained"]["adapter_sha256"] = digest
    comparison = {
        "env_id": config.env_id, "mode": config.mode, "seed": config.seed, "split": "eval", **sides,
        "decoding": {"greedy": True, "max_new_tokens": max_new_tokens, "multi_step": True},
        "command": eval_command(played_configs["trained"]),
        "delta_reward": _difference(sides["trained"]["reward_mean"], sides["base"]["reward_mean"]),
    }
    (out_dir / "comparison.json").write_text(json.dumps(comparison, indent=2), encoding="utf-8")
    title = f"{config.env_id}, {config.model} ({config.algo}), {sides['base']['episodes']} multi-step episodes each"
    comparison["figure"] = str(plot_eval_comparison(sides["base"], sides["trained"], out_dir / "comparison.png", title=title))
    return comparison


def heldout_eval_config(config: TrainConfig, adapter_dir: str | Path, out: str | Path, *, side: str = "trained",
                        gpu: bool = False, resume: bool = False) -> EvalConfig:
    """The eval run of one side of a training run's held-out evaluation: the one encoding of "the eval of a run".

    :func:`evaluate_base_and_trained` plays it for both sides, ``comparison.json`` records the
    trained side as a command (:func:`eval_command`), and ``affectgym eval --from-train RUN``
    replays the trained side from it: the env and its options (:func:`heldout_env_kwargs`), its
    ``eval`` split, ``eval_episodes`` scenarios and the run's seed, the model greedy at
    :func:`eval_max_new_tokens` tokens a message, with the adapter (:func:`trained_agent`).

    Args:
        config: The run's options.
        adapter_dir: The trained adapter (or full model, with ``lora_r=0``).
        out: The eval run's folder.
        side: ``"base"`` (the model as it was) or ``"trained"``.
        gpu: Whether a GPU plays (bf16) or the CPU (fp32).
        resume: Keep the episodes already in ``out``.

    >>> heldout_eval_config(TrainConfig(env_id="x", model="./base", eval_episodes=4), "runs/x/adapter", "runs/x/eval/trained").agent_kwargs
    {'max_new_tokens': 128, 'temperature': 0.0, 'dtype': 'float32', 'adapter': 'runs/x/adapter'}
    """
    if side not in ("base", "trained"):
        raise ValueError(f"side must be 'base' or 'trained', got {side!r}")
    spec, adapter = trained_agent(config, adapter_dir) if side == "trained" else (f"hf:{resolve_model(config.model)}", None)
    agent_kwargs: dict[str, Any] = {"max_new_tokens": eval_max_new_tokens(config), "temperature": 0.0,
                                    "dtype": "bfloat16" if gpu else "float32"}
    if adapter is not None:
        agent_kwargs["adapter"] = adapter
    return EvalConfig(
        env_id=config.env_id, agent=spec, out=out, n=config.eval_episodes or None, split="eval", seed=config.seed,
        env_kwargs=heldout_env_kwargs(config), agent_kwargs=agent_kwargs, concurrency=8, progress=False,
        max_fail_fraction=1.0, resume=resume,
    )


def eval_command(eval_config: EvalConfig) -> str:
    """The ``affectgym eval`` command line that plays ``eval_config`` (a local model agent), as ``comparison.json`` records it.

    >>> eval_command(heldout_eval_config(TrainConfig(env_id="x", model="./base", eval_episodes=4), "a", "out"))
    'affectgym eval x --agent hf:./base --adapter a --split eval -n 4 -t 128 --seed 0 -c 8'
    """
    adapter = eval_config.agent_kwargs.get("adapter")
    return (
        f"affectgym eval {eval_config.env_id} --agent {eval_config.agent} "
        + (f"--adapter {adapter} " if adapter is not None else "")
        + f"--split {eval_config.split} -n {eval_config.n} -t {eval_config.agent_kwargs['max_new_tokens']} "
        + f"--seed {eval_config.seed} -c {eval_config.concurrency}"
        + (f" --env-kwargs '{json.dumps(eval_config.env_kwargs)}'" if eval_config.env_kwargs else "")
    )


def adapter_digest(adapter_dir: str | Path) -> str:
    """The SHA-256 of a trained adapter (or model) folder: every file's name and bytes, in name order.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (Path(folder) / "adapter_config.json").write_text("{}")
    ...     adapter_digest(folder)[:12]
    '403471bc4f16'
    """
    folder = Path(adapter_dir)
    digest = hashlib.sha256()
    for path in sorted(item for item in folder.rglob("*") if item.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _played_digest(record: Path) -> str | None:
    """The adapter digest a held-out evaluation's trained side recorded; ``None`` when unknown."""
    try:
        return json.loads(record.read_text(encoding="utf-8")).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None


def trained_agent(config: TrainConfig, adapter_dir: str | Path) -> tuple[str, str | None]:
    """``(agent spec, adapter folder or None)`` of a run's trained model as its held-out evaluation plays it.

    A LoRA run (or one that kept training an ``init_adapter``) plays the base model with the
    adapter; a full fine-tune (``lora_r=0``) plays the model saved in ``adapter_dir``.

    >>> trained_agent(TrainConfig(env_id="x", model="./base"), "runs/x/adapter")
    ('hf:./base', 'runs/x/adapter')
    >>> trained_agent(TrainConfig(env_id="x", model="./base", lora_r=0), "runs/x/adapter")
    ('hf:runs/x/adapter', None)
    """
    if config.lora_r == 0 and config.init_adapter is None:
        return f"hf:{adapter_dir}", None
    return f"hf:{resolve_model(config.model)}", str(adapter_dir)


def heldout_env_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The env options a run's held-out evaluation plays with: the run's own, its split left to the evaluation.

    >>> heldout_env_kwargs(TrainConfig(env_id="x", env_kwargs={"split": "train", "max_turns": 4}))
    {'max_turns': 4}
    """
    return {key: value for key, value in config.env_kwargs.items() if key != "split"}


def eval_max_new_tokens(config: TrainConfig) -> int:
    """The token limit of a message in the run's held-out evaluations (``eval_max_new_tokens``, or its default).

    >>> eval_max_new_tokens(TrainConfig(env_id="x", max_completion_length=4))
    4
    """
    if config.eval_max_new_tokens is not None:
        return config.eval_max_new_tokens
    return config.max_completion_length if config.algo == "grpo" else 256


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


__all__ = [
    "adapter_digest",
    "eval_command",
    "eval_max_new_tokens",
    "evaluate_base_and_trained",
    "finish_run",
    "finished_training",
    "heldout_env_kwargs",
    "heldout_eval_config",
    "logged_steps_and_runtime",
    "run_summary",
    "trained_agent",
]
