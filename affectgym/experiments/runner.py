"""Run a declared experiment: sweeps on validation, then each arm on eval once per frozen recipe and seed.

Under ``results`` (one folder per experiment):

* ``protocol.jsonl``: the ledger (:mod:`affectgym.experiments.protocol`): each arm's freeze, with
  the rule that chose it, the split it read and what each candidate measured; each eval play;
* ``validation/<arm>/<candidate>/`` and ``eval/<arm>/s<seed>/``: the eval runner's folders
  (:mod:`affectgym.eval.runner`): every episode's transcript, reward and outcome in
  ``results.jsonl``, written as it is played, resumed after a crash;
* ``summary.json``: each arm's metrics with intervals over seeds and the env's split groups, each
  comparison's paired difference and whether its goal is met (:mod:`affectgym.eval.stats`).

>>> from affectgym.agents.base import FunctionAgent
>>> from affectgym.experiments.declaration import Arm, Experiment
>>> experiment = Experiment("demo", "affectgym/Sarcasm-v0", seeds=(0,), episodes=2, arms=(
...     Arm("says-no", lambda run: FunctionAgent(lambda o, i: "<answer>no</answer>", name="says-no")),))
>>> import tempfile
>>> runner = ExperimentRunner(experiment, tempfile.mkdtemp(), progress=False)
>>> runner.play()
Traceback (most recent call last):
...
affectgym.experiments.protocol.ProtocolError: arm 'says-no' has no frozen recipe: run its validation sweep first (or freeze it as declared), then play it on eval
>>> list(runner.choose())
['says-no']
>>> runner.play()["arms"]["says-no"]["reward"]["items"]
2
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from affectgym.eval.config import EvalConfig
from affectgym.eval.results import read_results, write_json
from affectgym.eval.runner import run_eval
from affectgym.eval.stats import (
    Observation,
    hierarchical_bootstrap,
    on_every_seed,
    paired_difference,
)
from affectgym.experiments.declaration import Arm, ArmRun, Experiment
from affectgym.experiments.protocol import EVAL_SPLIT, Freeze, ProtocolError, ProtocolLedger

__all__ = ["DECLARED", "ExperimentRunner"]

#: The split and rule of an arm frozen as declared (it has no sweep).
DECLARED = "declared"
VALIDATION_SPLIT = "validation"
#: The eval runner's seed for every play: each training seed plays the same scenarios with the same episode seeds.
PLAY_SEED = 0


class ExperimentRunner:
    """Runs ``experiment`` into ``results`` (see the module docstring).

    Args:
        experiment: The declaration.
        results: The experiment's folder (created as needed).
        progress: Show the eval runner's progress bars.
    """

    def __init__(self, experiment: Experiment, results: str | Path, *, progress: bool = True) -> None:
        self.experiment = experiment
        self.results = Path(results)
        self.progress = progress
        self.ledger = ProtocolLedger(self.results / "protocol.jsonl")

    def choose(self) -> dict[str, Freeze]:
        """Freeze every arm: a swept arm by its rule over its candidates played on validation (each resumed
        where it stopped), the others as declared. Returns the freezes by arm."""
        for arm in self.experiment.arms:
            if arm.sweep is None:
                self.ledger.freeze(arm.name, dict(arm.recipe), rule=DECLARED, split=DECLARED)
                continue
            means = {}
            for name, settings in arm.sweep.candidates.items():
                recipe = {**arm.recipe, **settings}
                folder = self.results / VALIDATION_SPLIT / arm.name / name
                records = self._played(arm, recipe, arm.sweep.seed, VALIDATION_SPLIT, folder)
                means[name] = {metric: _mean([measure(r) for r in records]) for metric, measure in self.experiment.metrics.items()}
            chosen = arm.sweep.choose(means)
            if chosen not in arm.sweep.candidates:
                raise ProtocolError(f"arm {arm.name!r}: its rule chose {chosen!r}, not one of its candidates "
                                    f"{list(arm.sweep.candidates)}")
            self.ledger.freeze(arm.name, {**arm.recipe, **arm.sweep.candidates[chosen]}, rule=arm.sweep.rule,
                               split=VALIDATION_SPLIT, measured={"candidates": means, "chosen": chosen})
        return self.ledger.freezes()

    def play(self, *, replay: bool = False) -> dict[str, Any]:
        """Play every arm's frozen recipe on eval for each of its seeds, once (a play that stopped is resumed;
        a finished one is not played again unless ``replay``), then write and return the summary.

        Raises:
            ProtocolError: An arm was not frozen, or its declared recipe is no longer the frozen one.
        """
        freezes = self.ledger.freezes()
        for arm in self.experiment.arms:
            recipe = self._declared_recipe(arm, freezes.get(arm.name))
            for seed in self.experiment.seeds_of(arm):
                plays = sum(1 for p in self.ledger.plays() if p.arm == arm.name and p.seed == seed)
                if plays and not (self._eval_folder(arm.name, seed, plays - 1) / "summary.json").is_file():
                    self.ledger.check_frozen(arm.name, recipe)  # the last play stopped: resume it
                    play = plays - 1
                elif plays and not replay:
                    continue
                else:
                    self.ledger.claim_eval(arm.name, recipe, seed=seed, replay=replay)
                    play = plays
                self._played(arm, recipe, seed, EVAL_SPLIT, self._eval_folder(arm.name, seed, play))
        return self.summarise()

    def summarise(self) -> dict[str, Any]:
        """Each arm's metrics and each comparison, from the first eval play of every seed; written to ``summary.json``."""
        groups = self._groups()
        observed = {arm.name: self._observations(arm, groups) for arm in self.experiment.arms}
        freezes = self.ledger.freezes()
        summary: dict[str, Any] = {"experiment": self.experiment.name, "env_id": self.experiment.env_id,
                                   "groups": self.experiment.groups, "arms": {}, "comparisons": []}
        for arm in self.experiment.arms:
            frozen = freezes[arm.name]
            summary["arms"][arm.name] = {
                "recipe": frozen.recipe, "recipe_hash": frozen.recipe_hash, "rule": frozen.rule, "split": frozen.split,
                "replays": sum(p.replay for p in self.ledger.plays() if p.arm == arm.name),
                **{metric: _estimate_dict(hierarchical_bootstrap(rows)) for metric, rows in observed[arm.name].items()}}
        for comparison in self.experiment.comparisons:
            a, b = observed[comparison.against][comparison.metric], observed[comparison.arm][comparison.metric]
            a, b = _on_shared_seeds(a, b)
            difference = paired_difference(a, b)
            met = None if comparison.goal is None else bool(difference.low > 0 and difference.mean >= comparison.goal)
            summary["comparisons"].append({"arm": comparison.arm, "against": comparison.against, "metric": comparison.metric,
                                           "goal": comparison.goal, "met": met, "difference": _estimate_dict(difference)})
        write_json(self.results / "summary.json", summary)
        return summary

    def _declared_recipe(self, arm: Arm, frozen: Freeze | None) -> dict[str, Any]:
        """What the declaration says ``arm`` plays, given its freeze (the chosen candidate for a swept arm)."""
        if arm.sweep is None or frozen is None:
            return dict(arm.recipe)
        chosen = frozen.measured.get("chosen")
        if chosen not in arm.sweep.candidates:
            raise ProtocolError(f"arm {arm.name!r}: the frozen candidate {chosen!r} is no longer declared "
                                f"(candidates: {list(arm.sweep.candidates)}); declare a new arm for a new sweep")
        return {**arm.recipe, **arm.sweep.candidates[chosen]}

    def _played(self, arm: Arm, recipe: dict[str, Any], seed: int, split: str, folder: Path) -> list[dict[str, Any]]:
        """The episodes of ``arm`` (``recipe``, ``seed``) on ``split`` in ``folder``: played, or resumed, as needed."""
        if not (folder / "summary.json").is_file():
            agent = arm.policy(ArmRun(arm.name, recipe, seed, self.results / "work" / arm.name / f"s{seed}", split))
            config = EvalConfig(self.experiment.env_id, agent=arm.name, out=folder, n=self.experiment.episodes,
                                split=split, seed=PLAY_SEED, resume=(folder / "results.jsonl").is_file(),
                                env_kwargs=dict(self.experiment.env_kwargs), progress=self.progress)
            run_eval(config, agent=agent)
        return read_results(folder / "results.jsonl")[0]

    def _eval_folder(self, arm: str, seed: int, play: int = 0) -> Path:
        """The folder of an arm's ``play``-th eval play of ``seed`` (0: the first, the one the tables read)."""
        return self.results / EVAL_SPLIT / arm / (f"s{seed}" if play == 0 else f"s{seed}-replay{play}")

    def _groups(self) -> dict[str, str]:
        import affectgym

        env = affectgym.make(self.experiment.env_id, split=EVAL_SPLIT, **self.experiment.env_kwargs).unwrapped
        try:
            return {str(s.id): str(env.split_group(s)) for s in env.scenarios}
        finally:
            env.close()

    def _observations(self, arm: Arm, groups: Mapping[str, str]) -> dict[str, list[Observation]]:
        rows: dict[str, list[Observation]] = {metric: [] for metric in self.experiment.metrics}
        for seed in self.experiment.seeds_of(arm):
            path = self._eval_folder(arm.name, seed) / "results.jsonl"
            if not path.is_file():
                raise ProtocolError(f"arm {arm.name!r} has not been played on {EVAL_SPLIT} for seed {seed}: run play() first")
            for record in read_results(path)[0]:
                item = str(record["scenario_id"])
                for metric, measure in self.experiment.metrics.items():
                    rows[metric].append(Observation(seed, item, groups.get(item, item), float(measure(record))))
        return rows


def _on_shared_seeds(a: list[Observation], b: list[Observation]) -> tuple[list[Observation], list[Observation]]:
    """An arm played on one seed only is given the other's seeds (the same on every seed, see :func:`on_every_seed`)."""
    seeds_a, seeds_b = {o.seed for o in a}, {o.seed for o in b}
    if seeds_a != seeds_b and len(seeds_a) == 1:
        return on_every_seed(a, sorted(seeds_b)), b
    if seeds_a != seeds_b and len(seeds_b) == 1:
        return a, on_every_seed(b, sorted(seeds_a))
    return a, b


def _estimate_dict(estimate: Any) -> dict[str, Any]:
    return {"mean": estimate.mean, "low": estimate.low, "high": estimate.high, "seeds": estimate.n_seeds,
            "groups": estimate.n_groups, "items": estimate.n_items, "text": estimate.format()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")

