"""The red team's search: under a budget of score calls, cheap replies that beat the honest one.

For each scenario the search starts from *bases*: the env's honest reference reply, its bare
answer (``bare_answer(scenario)``: the format filled in with no skill shown, when the env
has one) and its shipped canaries. Each *family* is one kind of material
(:mod:`affectgym.redteam.material`); its budget of candidates is spent in two rounds:

1. two sweeps (the reference with many of the kind's pieces appended at once, so that a piece
   the reward pays anywhere shows; the strongest cheap base with the kind's first, shortest
   pieces inside its last sentence, so that a template that keeps the format shows), then
   random sampling: an edit of the grammar (:mod:`affectgym.redteam.grammar`), sometimes two,
   with pieces of the kind, on a random base (the reference half the time, the stronger cheap
   bases more often than the weaker);
2. a hill-climb: mutations of the best candidates so far (another edit stacked, the pieces of
   one edit redrawn, its operation changed, its repeats raised).

Then the ``combined`` family composes the best edits of the strongest families. Every round
is one ``score_batch`` call, so a classifier or a judge sees the whole round at once.

A candidate *wins* its scenario when it beats the reference by more than ``margin``, or when,
made from a cheap base that scores more than ``margin`` below the reference, it reaches the
reference's score to within ``margin``: a cheap edit bought what the skill is paid for. A
base that holds the whole reference (a canary that adds a hack to the honest reply) is not
cheap: editing the hack away to reach the reference buys nothing the reference lacks, so
from such a base only beating the reference wins.

>>> import affectgym
>>> env = affectgym.make("affectgym/Sarcasm-v0", split="eval").unwrapped
>>> item = search_scenario(env, env.scenarios[0], budget=4, seed=0)
>>> sorted(item.best)[:3], item.score_calls > 0
(['combined', 'echo', 'emoji'], True)
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from affectgym.data.splits import spread
from affectgym.redteam.grammar import OPERATIONS, PLACES, Edit, apply_edits
from affectgym.redteam.material import KINDS, scenario_material, sentences_of

#: Score by which a cheap reply must beat the honest one to count (in reward units).
DEFAULT_MARGIN = 0.02
#: Score calls per family per scenario.
DEFAULT_BUDGET = 8
#: The family that composes the best edits of the strongest families, and the one of a run's replies.
COMBINED, POLICY = "combined", "policy_replies"
#: Most edits stacked on one candidate.
MAX_EDITS = 4
#: Most pieces the sweep of the reference puts in at once, and the sweep of the strongest cheap base (:func:`_sweeps`).
SWEEP_PIECES, INSIDE_SWEEP_PIECES = 128, 8

Trace = list[dict[str, Any]]


@dataclass(frozen=True)
class Base:
    """A reply the search edits: the reference, the bare answer, or a canary (by name)."""

    name: str
    text: str | None
    trace: Trace
    score: float
    cheap: bool = True


@dataclass(frozen=True)
class Attempt:
    """One candidate and what the env paid it.

    Attributes:
        family: The family it belongs to (a material kind, ``combined`` or ``policy_replies``).
        base: The name of the base it was made from.
        base_score: The base's own score.
        edits: The edits applied to the base.
        text: The reply scored.
        score: Its reward (``score(...).total``).
        cheap_base: Whether its base is cheap (holds less than the whole reference).
    """

    family: str
    base: str
    base_score: float
    edits: tuple[Edit, ...]
    text: str
    score: float
    cheap_base: bool = True

    def describe(self) -> str:
        """How the reply was made, e.g. ``reference + interleave interjections: 'Wow!'``."""
        return " + ".join([self.base, *(edit.describe() for edit in self.edits)])

    def to_json(self) -> dict[str, Any]:
        """A JSON record (edits as their descriptions)."""
        return {"family": self.family, "base": self.base, "base_score": self.base_score,
                "edits": self.describe(), "text": self.text, "score": self.score, "cheap_base": self.cheap_base}


@dataclass
class ItemResult:
    """The search on one scenario: the reference's score, each family's best attempt and the best made from each base."""

    scenario_id: str
    reference: float
    best: dict[str, dict[str, Any]] = field(default_factory=dict)
    best_by_base: dict[str, dict[str, Any]] = field(default_factory=dict)
    score_calls: int = 0

    def gain(self, family: str) -> float:
        """The best attempt's score minus the reference's."""
        return float(self.best[family]["score"]) - self.reference

    def won(self, family: str, margin: float = DEFAULT_MARGIN) -> bool:
        """Whether ``family``'s best attempt wins this scenario (see the module docstring)."""
        return family in self.best and _wins(self.best[family], self.reference, margin)

    def to_json(self) -> dict[str, Any]:
        """A JSON record of the scenario's search (one line of ``items.jsonl``)."""
        return dataclasses.asdict(self)


def _wins(attempt: Mapping[str, Any], reference: float, margin: float) -> bool:
    score, base_score = float(attempt["score"]), float(attempt["base_score"])
    lifted = attempt.get("cheap_base", True) and base_score < reference - margin and score >= reference - margin
    return score > reference + margin or lifted


def _rank(attempt: Attempt, reference: float, margin: float) -> tuple[bool, float]:
    return (_wins(dataclasses.asdict(attempt), reference, margin), attempt.score)


def bases_of(env: Any, scenario: Any) -> list[tuple[str, str | None, Trace]]:
    """``(name, text, trace)`` of every base: the reference, the bare answer (when the env has one), the canaries."""
    text, trace = env.reference_answer(scenario)
    found = [("reference", text, list(trace))]
    bare = getattr(env, "bare_answer", None)
    answer = bare(scenario) if callable(bare) else None
    if answer is not None:
        found.append(("bare", answer[0], list(answer[1])))
    found += [(f"canary:{name}", t, list(tr)) for name, (t, tr) in env.canaries(scenario).items() if t]
    return found


def search_scenario(
    env: Any,
    scenario: Any,
    *,
    budget: int = DEFAULT_BUDGET,
    seed: int = 0,
    margin: float = DEFAULT_MARGIN,
    families: Sequence[str] | None = None,
    extra_material: Mapping[str, Sequence[str]] | None = None,
    policy_replies: Sequence[tuple[str | None, Trace]] = (),
) -> ItemResult:
    """Search cheap replies for one scenario of ``env``.

    Args:
        env: An affectgym text env (its ``reference_answer``, ``canaries``, ``score_batch``).
        scenario: The scenario searched.
        budget: Score calls per family (at least 2: one random, one hill-climbed).
        seed: The search's seed; with the scenario's id it fixes every draw.
        margin: How far a cheap reply must beat the reference.
        families: The material kinds searched (default: every kind the scenario has material for).
        extra_material: More pieces by kind (:func:`~affectgym.redteam.material.material_from_file`).
        policy_replies: ``(text, trace)`` of replies a policy gave on this scenario (``--from-run``).

    Returns:
        The reference's score and each family's best attempt.
    """
    if not isinstance(budget, int) or budget < 2:
        raise ValueError(f"budget must be an integer >= 2 (score calls per family per scenario), got {budget!r}")
    rng = random.Random(f"{seed}:{scenario.id}")
    raw_bases = bases_of(env, scenario)
    base_scores = _scores(env, scenario, [(t, tr) for _, t, tr in raw_bases])
    honest = raw_bases[0][1] or ""
    bases = [Base(name, text, trace, score, cheap=index > 0 and (not honest or honest not in (text or "")))
             for index, ((name, text, trace), score) in enumerate(zip(raw_bases, base_scores, strict=True))]
    reference = bases[0].score
    stock = sentences_of(text for _, text, _ in raw_bases[1:])
    material = scenario_material(env, scenario, stock=stock, extra=extra_material)
    kinds = [kind for kind in (families or material) if kind in material]
    item = ItemResult(scenario.id, reference, score_calls=len(bases))
    best: dict[str, list[Attempt]] = {kind: [] for kind in kinds}

    def play(candidates: list[tuple[str, Base, tuple[Edit, ...]]]) -> None:
        texts = [apply_edits(edits, base.text) for _, base, edits in candidates]
        scores = _scores(env, scenario, [(text, base.trace) for text, (_, base, _) in zip(texts, candidates, strict=True)])
        item.score_calls += len(candidates)
        for (family, base, edits), text, score in zip(candidates, texts, scores, strict=True):
            attempts = best.setdefault(family, [])
            attempts.append(Attempt(family, base.name, base.score, edits, text, score, base.cheap))
            if family != POLICY and score > item.best_by_base.get(base.name, {}).get("score", -math.inf):
                item.best_by_base[base.name] = attempts[-1].to_json()
            attempts.sort(key=lambda a: _rank(a, reference, margin), reverse=True)
            del attempts[2:]

    first = math.ceil(budget / 2)
    first_round = []
    for kind in kinds:
        sweeps = _sweeps(kind, material[kind], bases)[:first]
        first_round += sweeps + _random_candidates(kind, material[kind], bases, first - len(sweeps), rng)
    play(first_round)
    play([
        (kind, base, _mutate(attempt.edits, kind, material[kind], rng))
        for kind in kinds
        for attempt, base in _parents(best[kind], bases, budget - first)
    ])
    strongest = sorted(kinds, key=lambda k: _rank(best[k][0], reference, margin), reverse=True)[:3]
    play(_compositions(strongest, best, bases, budget, rng))
    if policy_replies:
        play([(POLICY, Base("policy", text, list(trace), reference), ()) for text, trace in policy_replies])
    item.best = {family: attempts[0].to_json() for family, attempts in best.items() if attempts}
    return item


def _scores(env: Any, scenario: Any, replies: Sequence[tuple[str | None, Trace]]) -> list[float]:
    results = env.score_batch([scenario] * len(replies), [t for t, _ in replies], [tr for _, tr in replies])
    return [float(result.total) for result in results]


def _draw_base(bases: Sequence[Base], rng: random.Random) -> Base:
    """The reference half the time, else a cheap base: the k-th strongest with weight 1/k."""
    if len(bases) == 1 or rng.random() < 0.5:
        return bases[0]
    cheap = sorted(bases[1:], key=lambda base: base.score, reverse=True)
    return rng.choices(cheap, weights=[1 / rank for rank in range(1, len(cheap) + 1)])[0]


def _operations(kind: str, pieces: Sequence[str]) -> tuple[str, ...]:
    if kind == "repetition":
        return ("repeat",)
    if kind == "markup" and all("{}" in piece for piece in pieces):
        return ("wrap",)
    return OPERATIONS


def _random_edit(kind: str, pieces: Sequence[str], rng: random.Random) -> Edit:
    operation = rng.choice(_operations(kind, pieces))
    if operation == "wrap" and kind == "markup":
        templates = [p for p in pieces if "{}" in p] or list(pieces)
        chosen: tuple[str, ...] = (rng.choice(templates),)
    else:
        count = rng.choice((1, 1, 2, 3))
        chosen = (rng.choice(pieces),) * count if rng.random() < 0.4 else tuple(rng.choice(pieces) for _ in range(count))
    return Edit(operation, kind, chosen, where=rng.choice(PLACES.get(operation, ("",))), index=rng.randrange(8), times=rng.randint(2, 4))


def _sweeps(kind: str, pieces: Sequence[str], bases: Sequence[Base]) -> list[tuple[str, Base, tuple[Edit, ...]]]:
    """The reference with up to :data:`SWEEP_PIECES` of the kind's pieces (spread over them) appended, one call that
    shows whether any piece of the kind is paid (a keyword, a length bonus); and the strongest cheap base with the
    kind's first :data:`INSIDE_SWEEP_PIECES` pieces inside its last sentence (a content-free template made to look
    as if it listened). Kinds that only wrap or repeat get one sweep of the reference."""
    operation = "wrap" if _operations(kind, pieces) == ("wrap",) else "repeat" if kind == "repetition" else "append"
    if operation != "append":
        return [(kind, bases[0], (Edit(operation, kind, tuple(pieces[:1])),))]
    found = [(kind, bases[0], (Edit("append", kind, tuple(spread(pieces, SWEEP_PIECES))),))]
    if len(bases) > 1:
        strongest = max(bases[1:], key=lambda base: base.score)
        found.append((kind, strongest, (Edit("append", kind, tuple(pieces[:INSIDE_SWEEP_PIECES]), where="sentence", index=-1),)))
    return found


def _random_candidates(
    kind: str, pieces: Sequence[str], bases: Sequence[Base], count: int, rng: random.Random
) -> list[tuple[str, Base, tuple[Edit, ...]]]:
    return [(kind, _draw_base(bases, rng), _random_edits(kind, pieces, rng)) for _ in range(count)]


def _random_edits(kind: str, pieces: Sequence[str], rng: random.Random) -> tuple[Edit, ...]:
    return tuple(_random_edit(kind, pieces, rng) for _ in range(2 if rng.random() < 0.3 else 1))


def _parents(attempts: Sequence[Attempt], bases: Sequence[Base], count: int) -> list[tuple[Attempt, Base]]:
    """The attempts to mutate, best first, cycled to ``count``, each with its base."""
    by_name = {base.name: base for base in bases}
    return [(attempts[i % len(attempts)], by_name[attempts[i % len(attempts)].base]) for i in range(count)] if attempts else []


def _mutate(edits: tuple[Edit, ...], kind: str, pieces: Sequence[str], rng: random.Random) -> tuple[Edit, ...]:
    """``edits`` with one change: an edit stacked, one edit's pieces redrawn, its operation changed, or more repeats."""
    roll, changed = rng.random(), list(edits)
    position = rng.randrange(len(changed))
    if roll < 0.4 and len(changed) < MAX_EDITS:
        changed.append(_random_edit(kind, pieces, rng))
    elif roll < 0.7:
        fresh = _random_edit(kind, pieces, rng)
        changed[position] = dataclasses.replace(changed[position], pieces=fresh.pieces) if changed[position].operation == fresh.operation else fresh
    elif roll < 0.85:
        changed[position] = dataclasses.replace(changed[position], operation=rng.choice(_operations(kind, pieces)))
    else:
        edit = changed[position]
        changed[position] = dataclasses.replace(edit, times=edit.times + 1, pieces=edit.pieces + edit.pieces[:1])
    return tuple(changed)


def _compositions(
    strongest: Sequence[str], best: Mapping[str, Sequence[Attempt]], bases: Sequence[Base], budget: int, rng: random.Random
) -> list[tuple[str, Base, tuple[Edit, ...]]]:
    """``budget`` candidates that stack the best edits of two or three of the ``strongest`` families."""
    by_name = {base.name: base for base in bases}
    heads = [best[kind][0] for kind in strongest if best[kind]]
    if len(heads) < 2:
        return []
    candidates = []
    for i in range(budget):
        chosen = rng.sample(heads, k=min(len(heads), 2 + i % 2))
        base = by_name[chosen[0].base] if i % 2 == 0 else _draw_base(bases, rng)
        candidates.append((COMBINED, base, tuple(edit for attempt in chosen for edit in attempt.edits)[:MAX_EDITS]))
    return candidates


def families_of(env: Any, scenario: Any, extra_material: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The family names the search reports for ``env``: the material kinds, then ``combined``."""
    material = scenario_material(env, scenario, extra=extra_material)
    return [*(k for k in KINDS if k in material), *(k for k in material if k not in KINDS), COMBINED]


__all__ = [
    "COMBINED",
    "DEFAULT_BUDGET",
    "DEFAULT_MARGIN",
    "POLICY",
    "Attempt",
    "Base",
    "ItemResult",
    "bases_of",
    "families_of",
    "search_scenario",
]
