"""The emotion-state data: the transition prior and the target arcs, read from JSON.

The shipped files are in ``affectgym/data/emotion_state/``; every loader also takes a path
or an already-parsed mapping, so an experiment can swap in its own prior or arcs.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from os import PathLike
from typing import Any

import numpy as np

from affectgym.data.splits import assign_splits, check_split_name
from affectgym.envs.emotion_state.dynamics import (
    ANGER_JOY_THRESHOLD,
    ANGER_SADNESS_LIMIT,
    EMOTIONS,
    NUM_EMOTIONS,
    exclusion_rules,
)

DATA_PACKAGE = "affectgym"
DATA_DIR = ("data", "emotion_state")
PRIOR_FILE = "transition_prior.json"
ARCS_FILE = "arcs.json"
SPLITS = ("all", "train", "validation", "eval")
EVAL_ARC_MODULUS = 5  # an arc is held out when crc32(name) % 5 == 0 (about one in five)


def arc_split(name: str) -> str:
    """Whether an arc is held out for eval (``"eval"``) or not (``"train"``): a fixed hash of its name.

    The numeric and the text env split their arcs by this one rule, so a policy trained on
    one env's train arcs is never evaluated on them in the other. The validation arcs are
    chosen among the ``"train"`` ones (:func:`arcs_in_split`).

    >>> arc_split("good_news"), arc_split("bad_news")
    ('eval', 'train')
    """
    return "eval" if zlib.crc32(name.encode()) % EVAL_ARC_MODULUS == 0 else "train"


def arcs_in_split(names: list[str] | tuple[str, ...], split: str) -> list[str]:
    """The arc names of ``split`` (``"all"``, ``"train"``, ``"validation"`` or ``"eval"``), in their order.

    Eval is :func:`arc_split`'s; validation is the lowest-hash tenth of the others (at least
    one arc once there are three; :func:`~affectgym.data.splits.assign_splits`), train the rest.

    Raises:
        ValueError: ``split`` is not one of the four.

    >>> arcs_in_split(["good_news", "bad_news"], "eval")
    ['good_news']
    >>> arcs_in_split(["good_news", "bad_news", "calm_day", "long_wait"], "validation")
    ['bad_news']
    """
    check_split_name(split, SPLITS)
    if split == "all":
        return list(names)
    sides = assign_splits([(name, "arc") for name in names], eval_groups=lambda name: arc_split(name) == "eval")
    return [name for name in names if sides[name] == split]


def _read_json(
    source: str | PathLike[str] | Mapping[str, Any] | None, default_name: str
) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    if source is None:
        ref = resources.files(DATA_PACKAGE).joinpath(*DATA_DIR, default_name)
        return json.loads(ref.read_text(encoding="utf-8"))
    with open(source, encoding="utf-8") as fh:
        return json.load(fh)


def load_transition_prior(
    source: str | PathLike[str] | Mapping[str, Any] | None = None,
) -> np.ndarray:
    """Load a rise-rate multiplier matrix from a JSON file (the shipped prior by default).

    The file has ``levels`` (name -> multiplier), ``default`` (a level name or number) and
    ``transitions`` (``{from: {to: level name or number}}``); unlisted pairs get the default.

    Args:
        source: A path, an already-parsed mapping, or None for the shipped
            ``affectgym/data/emotion_state/transition_prior.json``.

    Returns:
        ``(7, 7)`` multipliers, rows = from, columns = to, in :data:`EMOTIONS` order.

    >>> from affectgym.envs.emotion_state.dynamics import ANGER, DISGUST, JOY, NEUTRAL
    >>> prior = load_transition_prior()
    >>> prior[DISGUST, JOY], prior[ANGER, DISGUST], prior[NEUTRAL, JOY]
    (np.float64(0.0), np.float64(1.5), np.float64(1.0))
    """
    data = _read_json(source, PRIOR_FILE)
    levels = {str(k): float(v) for k, v in data.get("levels", {}).items()}

    def value(raw: Any, where: str) -> float:
        if isinstance(raw, str):
            if raw not in levels:
                raise ValueError(
                    f"transition prior {where}: unknown level {raw!r}; accepted: {sorted(levels)} or a number >= 0"
                )
            return levels[raw]
        if isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw >= 0:
            return float(raw)
        raise ValueError(f"transition prior {where}: {raw!r} is not a level name or a number >= 0")

    matrix = np.full((NUM_EMOTIONS, NUM_EMOTIONS), value(data.get("default", 1.0), "default"))
    for src, row in data.get("transitions", {}).items():
        if src not in EMOTIONS:
            raise ValueError(
                f"transition prior: unknown emotion {src!r}; accepted: {list(EMOTIONS)}"
            )
        for dst, raw in row.items():
            if dst not in EMOTIONS:
                raise ValueError(
                    f"transition prior {src}->{dst}: unknown emotion {dst!r}; accepted: {list(EMOTIONS)}"
                )
            matrix[EMOTIONS.index(src), EMOTIONS.index(dst)] = value(raw, f"{src}->{dst}")
    return matrix


@dataclass(frozen=True)
class EmotionArc:
    """A scripted sequence of targets, each held for a number of steps.

    Attributes:
        name: The arc's id (``options={"arc": name}``).
        description: One line on the situation.
        segments: ``(target name, target (7,), steps held)`` in order.
    """

    name: str
    description: str
    segments: tuple[tuple[str, np.ndarray, int], ...]

    def schedule(self, num_steps: int) -> np.ndarray:
        """Return the ``(num_steps + 1, 7)`` target shown at each step index.

        Row ``k`` is the target in the observation before step ``k``; after the last segment
        the last target holds.

        Args:
            num_steps: The episode's step limit.

        Returns:
            The target schedule.
        """
        rows = [np.tile(target, (steps, 1)) for _, target, steps in self.segments]
        schedule = np.concatenate(rows, axis=0)[: num_steps + 1]
        if len(schedule) < num_steps + 1:
            tail = np.tile(schedule[-1], (num_steps + 1 - len(schedule), 1))
            schedule = np.concatenate([schedule, tail], axis=0)
        return schedule

    def segment_names(self, num_steps: int) -> list[str]:
        """Return the target name shown at each of the ``num_steps + 1`` step indices."""
        names = [name for name, _, steps in self.segments for _ in range(steps)]
        names = names[: num_steps + 1]
        return names + [names[-1]] * (num_steps + 1 - len(names))


def load_arcs(
    source: str | PathLike[str] | Mapping[str, Any] | None = None,
) -> dict[str, EmotionArc]:
    """Load target arcs from a JSON file (the shipped set by default).

    Every target must be feasible: within [0, 1], a positive total, and unchanged by the
    mutual-exclusion rules (so a perfect agent can hold it).

    Args:
        source: A path, a parsed mapping, or None for ``affectgym/data/emotion_state/arcs.json``.

    Returns:
        Arcs by name, in file order.

    >>> arcs = load_arcs()
    >>> len(arcs) >= 8, [name for name, _, _ in arcs["good_news"].segments]
    (True, ['calm', 'surprise', 'joy'])
    """
    data = _read_json(source, ARCS_FILE)
    floor = float(data.get("floor", 0.0))
    targets: dict[str, np.ndarray] = {}
    for name, spec in data.get("targets", {}).items():
        vector = np.full(NUM_EMOTIONS, floor)
        for emotion, level in spec.items():
            if emotion not in EMOTIONS:
                raise ValueError(
                    f"arcs target {name!r}: unknown emotion {emotion!r}; accepted: {list(EMOTIONS)}"
                )
            vector[EMOTIONS.index(emotion)] = float(level)
        if vector.min() < 0 or vector.max() > 1 or vector.sum() <= 0:
            raise ValueError(
                f"arcs target {name!r}: intensities must be in [0, 1] with a positive total, got {vector}"
            )
        if not np.allclose(exclusion_rules(vector[None])[0], vector):
            raise ValueError(
                f"arcs target {name!r} breaks the mutual-exclusion rules (anger + sadness <= "
                f"{ANGER_SADNESS_LIMIT}, joy <= (1 - anger) / {1 - ANGER_JOY_THRESHOLD:.1f}): {vector}"
            )
        targets[name] = vector
    arcs: dict[str, EmotionArc] = {}
    for name, spec in data.get("arcs", {}).items():
        segments = []
        for item in spec.get("segments", []):
            target_name, steps = item
            if target_name not in targets:
                raise ValueError(
                    f"arc {name!r}: unknown target {target_name!r}; defined: {sorted(targets)}"
                )
            if int(steps) < 1:
                raise ValueError(
                    f"arc {name!r}: segment {target_name!r} must last >= 1 step, got {steps!r}"
                )
            segments.append((target_name, targets[target_name], int(steps)))
        if not segments:
            raise ValueError(f"arc {name!r} has no segments")
        arcs[name] = EmotionArc(name, str(spec.get("description", "")), tuple(segments))
    if not arcs:
        raise ValueError("the arcs file defines no arcs")
    return arcs
