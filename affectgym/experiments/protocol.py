"""The protocol that makes a result credible, kept by code: settings frozen on validation, eval played once.

Every experiment's results folder holds a ledger, ``protocol.jsonl``: one line per event, appended
under a file lock, never rewritten.

* ``freeze``: an arm's recipe is fixed. The line holds the recipe, its hash
  (:func:`recipe_hash`), the rule that chose it and the split the rule read (never eval), and what
  the rule was shown (each candidate's measurements).
* ``eval``: one arm's frozen recipe was played on eval for one seed. A second play of the same
  (arm, recipe, seed) is refused unless asked for (``replay=True``); the line then says so, and the
  tables quote it.

:class:`ProtocolLedger` refuses each way of breaking the protocol with a :class:`ProtocolError` that
names what was wrong and what is accepted: playing eval for an arm that was never frozen, or whose
recipe changed since, playing it twice, freezing on eval, and re-freezing an arm to another recipe
once its recipe was played on eval (a choice made after seeing eval).

>>> import tempfile, pathlib
>>> ledger = ProtocolLedger(pathlib.Path(tempfile.mkdtemp()) / "protocol.jsonl")
>>> frozen = ledger.freeze("kl", {"beta": 0.1}, rule="highest validation accuracy", split="validation")
>>> ledger.claim_eval("kl", {"beta": 0.1}, seed=0) == frozen
True
>>> ledger.claim_eval("kl", {"beta": 0.1}, seed=0)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
affectgym.experiments.protocol.ProtocolError: arm 'kl' (recipe ...) was already played on eval for seed 0; eval is played once per frozen recipe and seed (pass replay=True to play it again, and the tables will say so)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

__all__ = ["EVAL_SPLIT", "EvalPlay", "Freeze", "ProtocolError", "ProtocolLedger", "recipe_hash"]

#: The split a result is reported on, and that no choice may read.
EVAL_SPLIT = "eval"
#: Characters of a recipe's SHA-256 kept as its hash.
HASH_CHARS = 12


class ProtocolError(RuntimeError):
    """A step that would break the experiment protocol (see the module docstring)."""


def recipe_hash(recipe: Mapping[str, Any]) -> str:
    """The hash of a recipe's settings: SHA-256 of their canonical JSON (sorted keys), first 12 hex digits.

    >>> recipe_hash({"lr": 1e-4, "beta": 0.1}) == recipe_hash({"beta": 0.1, "lr": 0.0001})
    True

    Raises:
        ProtocolError: The recipe is not a mapping of JSON values (a function, a path object).
    """
    if not isinstance(recipe, Mapping):
        raise ProtocolError(f"a recipe must be a mapping of settings to JSON values, got {type(recipe).__name__}")
    try:
        text = json.dumps(dict(recipe), sort_keys=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise ProtocolError(f"a recipe's settings must be JSON values (numbers, strings, lists, mappings): {error}") from None
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_CHARS]


@dataclass(frozen=True)
class Freeze:
    """An arm's recipe fixed by a rule on a split."""

    arm: str
    recipe: dict[str, Any]
    recipe_hash: str
    rule: str
    split: str
    measured: dict[str, Any]


@dataclass(frozen=True)
class EvalPlay:
    """One play of an arm's frozen recipe on eval, for one seed; ``replay`` when it was not the first."""

    arm: str
    recipe_hash: str
    seed: int
    replay: bool


class ProtocolLedger:
    """The freezes and eval plays of one experiment, in an append-only JSONL file.

    Args:
        path: The ledger file (created on the first event; its folder too).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = FileLock(f"{self.path}.lock")

    def freezes(self) -> dict[str, Freeze]:
        """Each arm's latest freeze."""
        return {row["arm"]: Freeze(**{k: row[k] for k in Freeze.__dataclass_fields__})
                for row in self._events() if row["event"] == "freeze"}

    def plays(self) -> list[EvalPlay]:
        """Every eval play, in order."""
        return [EvalPlay(**{k: row[k] for k in EvalPlay.__dataclass_fields__}) for row in self._events() if row["event"] == "eval"]

    def freeze(self, arm: str, recipe: Mapping[str, Any], *, rule: str, split: str,
               measured: Mapping[str, Any] | None = None) -> str:
        """Fix ``arm``'s recipe, chosen by ``rule`` on ``split``; returns its hash.

        Freezing again to the same recipe is a no-op. An arm without a sweep is frozen as
        declared (``split="declared"``).

        Raises:
            ProtocolError: ``split`` is eval, ``rule`` is empty, or the arm's recipe was played on
                eval and ``recipe`` differs from it.
        """
        if split == EVAL_SPLIT:
            raise ProtocolError(f"arm {arm!r}: a recipe may not be chosen on the {EVAL_SPLIT} split; choose it on "
                                f"'validation' (or freeze it as declared, split='declared')")
        if not rule.strip():
            raise ProtocolError(f"arm {arm!r}: say which rule chose the recipe (rule='...'), written before the sweep ran")
        digest = recipe_hash(recipe)
        with self._lock:
            before = self.freezes().get(arm)
            if before is not None and before.recipe_hash == digest:
                return digest
            played = sorted({p.seed for p in self.plays() if p.arm == arm})
            if before is not None and played:
                raise ProtocolError(f"arm {arm!r}: its recipe {before.recipe_hash} was played on {EVAL_SPLIT} (seeds "
                                    f"{played}); freezing another ({digest}) now would be a choice made after seeing "
                                    f"{EVAL_SPLIT}. Declare a new arm for the new recipe")
            self._append({"event": "freeze", "arm": arm, "recipe": dict(recipe), "recipe_hash": digest, "rule": rule,
                          "split": split, "measured": dict(measured or {})})
        return digest

    def claim_eval(self, arm: str, recipe: Mapping[str, Any], *, seed: int, replay: bool = False) -> str:
        """Record that ``arm`` plays ``recipe`` on eval for ``seed``; returns the recipe's hash.

        Raises:
            ProtocolError: The arm was never frozen, ``recipe`` is not its frozen recipe, or this
                (arm, recipe, seed) was played on eval before and ``replay`` is false.
        """
        with self._lock:
            digest = self.check_frozen(arm, recipe)
            seen = any(p.arm == arm and p.recipe_hash == digest and p.seed == seed for p in self.plays())
            if seen and not replay:
                raise ProtocolError(f"arm {arm!r} (recipe {digest}) was already played on {EVAL_SPLIT} for seed {seed}; "
                                    f"eval is played once per frozen recipe and seed (pass replay=True to play it "
                                    f"again, and the tables will say so)")
            self._append({"event": "eval", "arm": arm, "recipe_hash": digest, "seed": int(seed), "replay": seen})
        return digest

    def check_frozen(self, arm: str, recipe: Mapping[str, Any]) -> str:
        """The hash of ``recipe``, which must be ``arm``'s frozen recipe.

        Raises:
            ProtocolError: The arm was never frozen, or ``recipe`` is not its frozen recipe.
        """
        digest = recipe_hash(recipe)
        frozen = self.freezes().get(arm)
        if frozen is None:
            raise ProtocolError(f"arm {arm!r} has no frozen recipe: run its validation sweep first (or freeze "
                                f"it as declared), then play it on {EVAL_SPLIT}")
        if frozen.recipe_hash != digest:
            raise ProtocolError(f"arm {arm!r}: recipe {digest} is not the one frozen ({frozen.recipe_hash}, by "
                                f"{frozen.rule!r} on {frozen.split}); play the frozen recipe, or declare a new arm")
        return digest

    def _events(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def _append(self, row: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({**row, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
