"""EmotionStyle-v0's embedded demonstrations as an eval folder that ``affectgym train --algo sft --demos`` learns.

:func:`write_style_demonstrations` plays each embedded demonstration
(:func:`~affectgym.data.style_demonstrations.load_style_demonstrations`) as one episode of the
env's **train** split, through the eval runner's :func:`~affectgym.eval.runner.play_episode`,
and writes what ``affectgym eval`` writes: ``results.jsonl`` (each episode with the env's
prompt, the reply, its reward and outcome), ``metadata.json`` (``split: train``, the env's
options) and ``summary.json``. The supervised trainer then reads the folder like any agent's
episodes, with its checks (train split, every scenario a train scenario)::

    python -m affectgym.train.style_demonstrations runs/style-demos
    affectgym train affectgym/EmotionStyle-v0 --algo sft --demos runs/style-demos --output-dir runs/style-sft

The env is scored with the offline classifier at the EmotionStyle recipes' calibrated
neutral weight (:data:`STYLE_DEMONSTRATION_ENV_KWARGS`) unless ``env_kwargs`` says otherwise;
the reward does not decide what is learned (no demonstration is dropped unless ``--min-reward``
asks for it).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from affectgym.data.style_demonstrations import STYLE_DEMONSTRATIONS, load_style_demonstrations
from affectgym.train.recipes import (
    CALIBRATED_NEUTRAL_WEIGHT,
    EMOTION_STYLE_ENV_ID,
    neutral_weight_options,
)

STYLE_DEMONSTRATIONS_AGENT = "style-demonstrations"
"""The agent name the folder records (``metadata.json``'s ``agent_spec``)."""

STYLE_DEMONSTRATION_ENV_KWARGS: Mapping[str, Any] = {
    "classifier": "nade", **neutral_weight_options(CALIBRATED_NEUTRAL_WEIGHT)}
"""The env options the demonstrations are played with by default: the recipes' offline classifier."""

__all__ = ["STYLE_DEMONSTRATIONS_AGENT", "STYLE_DEMONSTRATION_ENV_KWARGS", "write_style_demonstrations"]


def write_style_demonstrations(
    out: str | Path, *, env_kwargs: Mapping[str, Any] | None = None, path: str | Path = STYLE_DEMONSTRATIONS,
) -> dict[str, Any]:
    """Play the demonstrations on EmotionStyle-v0's train split and write them as an eval folder.

    Args:
        out: The folder to write (created; it must not hold results yet).
        env_kwargs: Options of ``affectgym.make`` (not ``split``: always train); default
            :data:`STYLE_DEMONSTRATION_ENV_KWARGS`.
        path: The demonstrations file (default the embedded set).

    Returns:
        The folder's ``summary.json`` (mean reward, rule-violation rates, target accuracy...).

    Raises:
        FileExistsError: ``out`` already holds a ``results.jsonl``.
        ValueError: ``env_kwargs`` sets ``split``, or a demonstration's scenario is not one of
            the train split's (the env's instructions or labels differ from the embedded ones).
    """
    import affectgym
    from affectgym.agents.base import FunctionAgent
    from affectgym.eval.config import EvalConfig
    from affectgym.eval.results import (
        METADATA_FILE,
        RESULTS_FILE,
        SUMMARY_FILE,
        lock_run_folder,
        rewrite_results,
        write_json,
    )
    from affectgym.eval.run_metadata import run_metadata, utc_now
    from affectgym.eval.runner import play_episode
    from affectgym.eval.summary import summarize

    kwargs = dict(STYLE_DEMONSTRATION_ENV_KWARGS if env_kwargs is None else env_kwargs)
    config = EvalConfig(env_id=EMOTION_STYLE_ENV_ID, agent=STYLE_DEMONSTRATIONS_AGENT, out=out, split="train",
                        env_kwargs=kwargs, progress=False,
                        command=shlex.join(["python", "-m", __name__, str(out)]))
    folder = Path(config.out)
    if (folder / RESULTS_FILE).exists():
        raise FileExistsError(f"{folder / RESULTS_FILE} exists; write the demonstrations to a new folder")
    demonstrations = load_style_demonstrations(path)
    env = affectgym.make(EMOTION_STYLE_ENV_ID, split="train", **kwargs)
    base = env.unwrapped
    train_ids = {scenario.id for scenario in base.scenarios}
    outside = [d.scenario_id for d in demonstrations if d.scenario_id not in train_ids]
    if outside:
        raise ValueError(
            f"{len(outside)} demonstration(s) of {path} are for scenarios outside the train split of "
            f"{EMOTION_STYLE_ENV_ID} made with {kwargs} ({', '.join(outside[:5])}); the demonstrations answer "
            "the embedded instructions with the seven basic labels: leave instructions, data_file and labels unset"
        )
    replies = {d.scenario_id: d.reply for d in demonstrations}
    agent = FunctionAgent(lambda observation, info: replies[info["scenario_id"]], name=STYLE_DEMONSTRATIONS_AGENT)
    outcome_summaries = tuple(getattr(base, "outcome_summaries", ()))
    with lock_run_folder(folder):
        metadata = run_metadata(config, agent, None, outcome_summaries, len(demonstrations), 0,
                                scorers=base.scorers, reward_weights=dict(base.rubric.weights), env_kwargs=kwargs)
        records = [play_episode(env, agent, d.scenario_id, 0, config.seed) for d in demonstrations]
        env.close()
        rewrite_results(folder / RESULTS_FILE, records)
        status = "complete" if not any(record["error"] for record in records) else "aborted"
        summary = {**summarize(records, 1, outcome_summaries), "status": status, "planned_episodes": len(records)}
        write_json(folder / SUMMARY_FILE, summary)
        metadata.update(finished_at=utc_now(), status=status)
        metadata["sessions"][-1].update(finished_at=metadata["finished_at"], episodes=len(records), status=status)
        write_json(folder / METADATA_FILE, metadata)
    return summary


if __name__ == "__main__":  # python -m affectgym.train.style_demonstrations OUT
    if len(sys.argv) != 2:
        sys.exit("usage: python -m affectgym.train.style_demonstrations OUT_FOLDER")
    written = write_style_demonstrations(sys.argv[1])
    print(f"{written['episodes']} demonstrations written to {sys.argv[1]} (mean reward {written['reward']['mean']:.3f}); "
          f"train on them with: affectgym train {EMOTION_STYLE_ENV_ID} --algo sft --demos {sys.argv[1]} --output-dir OUT")
