"""``python -m affectgym.experiments {choose,play,report} MODULE:NAME RESULTS``: run or report a declared experiment.

``MODULE:NAME`` names an :class:`~affectgym.experiments.declaration.Experiment` (``mybench:EXPERIMENT``;
``MODULE`` is imported, or loaded from ``MODULE.py`` when it is a file path). ``choose`` runs the
validation sweeps and freezes every arm, ``play`` plays the frozen recipes on eval (``--replay`` to
play finished ones again, which the tables then say), and ``report`` recomputes the summary from
the kept episodes and prints its table.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path

from affectgym.experiments.declaration import Experiment
from affectgym.experiments.protocol import ProtocolError
from affectgym.experiments.report import markdown_table
from affectgym.experiments.runner import ExperimentRunner


def load_experiment(spec: str) -> Experiment:
    """The :class:`Experiment` that ``MODULE:NAME`` names.

    Raises:
        ValueError: ``spec`` is not of that form, or names no module, no attribute or no Experiment.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"name the experiment as MODULE:NAME (e.g. mybench:EXPERIMENT), got {spec!r}")
    try:
        if module_name.endswith(".py") or Path(module_name).is_file():
            path = Path(module_name)
            loader = importlib.util.spec_from_file_location(path.stem, path)
            if loader is None or loader.loader is None:
                raise ImportError(f"cannot load {path}")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except (ImportError, FileNotFoundError) as error:
        raise ValueError(f"cannot import {module_name!r} for {spec!r}: {error}") from None
    experiment = getattr(module, attribute, None)
    if not isinstance(experiment, Experiment):
        raise ValueError(f"{spec!r} must name an affectgym.experiments.Experiment, got {type(experiment).__name__}")
    return experiment


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 on success, 2 (with the reason on stderr) for a bad declaration or a protocol refusal."""
    parser = argparse.ArgumentParser(prog="python -m affectgym.experiments", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("choose", "play", "report"))
    parser.add_argument("experiment", help="MODULE:NAME of the Experiment declaration")
    parser.add_argument("results", type=Path, help="the experiment's results folder")
    parser.add_argument("--replay", action="store_true", help="play: play finished eval plays again (recorded as replays)")
    args = parser.parse_args(argv)
    try:
        runner = ExperimentRunner(load_experiment(args.experiment), args.results)
        if args.command == "choose":
            for arm, frozen in runner.choose().items():
                print(f"{arm}: {frozen.recipe_hash} by {frozen.rule!r} on {frozen.split}")
            return 0
        summary = runner.play(replay=args.replay) if args.command == "play" else runner.summarise()
    except (ValueError, ProtocolError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(markdown_table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
