"""Intervals a reviewer accepts: a hierarchical bootstrap over seeds and item groups, and paired tests.

An eval scores every episode; episodes are not independent. Training seeds differ as whole
runs, and items come in groups the env keeps together (the two clips of one Sarcasm line
pair, the emotions asked of one EmotionStyle instruction, the turns of one dialogue), so
50 clips can be 27 independent lines. A Student t interval over 3 seed means ignores the
items; one over the episodes ignores the seeds and the groups. Here every episode is an
:class:`Observation` ``(seed, item, group, value)`` and :func:`hierarchical_bootstrap`
resamples both levels:

* a replicate draws the seeds with replacement, then the groups with replacement, each
  group as a block with all its items. One group draw is shared by every seed in the
  replicate (the items are the same test set on every seed, so they are crossed with the
  seeds, not nested in them); its mean is the mean of every episode the draws hold;
* the interval is the percentile interval of the replicates (10,000 by default, from
  numpy's ``Generator`` with a fixed seed: the same data print the same interval).

With one seed only groups are resampled; the interval then says nothing about another
training run, and :meth:`Estimate.format` says "1 seed". With few seeds whose runs differ a
lot, the bootstrap sees only the spread of the seeds there are, and the interval is too
narrow: three seeds are three draws. Values that are all the same print as "all 1.000",
never as a zero-width interval.

:func:`paired_difference` compares two arms played on the same items (arm B - arm A); when
both arms ran the same seeds, episodes pair by (seed, item) and the seeds are resampled
together; otherwise episodes pair by item, each arm keeping its own seeds, resampled apart
(the difference of the two arms' means over the shared items, each averaged over its own
seeds). An arm that is the same on every seed (greedy decoding of an untrained model) can
be played once and given every seed of the other arm to pair by (seed, item).
:func:`mcnemar_exact_p` is the exact McNemar test of two arms' accuracy on the same pairs.

>>> data = [Observation(seed, f"q{i}", f"g{i // 2}", float((seed + i) % 3 == 0)) for seed in range(3) for i in range(40)]
>>> estimate = hierarchical_bootstrap(data)
>>> estimate.format()
'0.333 (95% CI 0.275 to 0.400; 3 seeds × 20 groups)'
>>> hierarchical_bootstrap([Observation(0, "q1", "g1", 1.0), Observation(0, "q2", "g2", 1.0)]).format()
'1.000 (all 1.000; 1 seed × 2 groups)'
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

#: Bootstrap replicates by default.
DEFAULT_REPLICATES = 10_000
#: The seed of the bootstrap's ``numpy.random.Generator`` by default: one data set, one interval.
DEFAULT_BOOTSTRAP_SEED = 20_250_101
#: The coverage of the intervals by default.
DEFAULT_CONFIDENCE = 0.95


class Observation(NamedTuple):
    """One episode's value: its training seed, its item, the group the item belongs to, the value."""

    seed: Hashable
    item: Hashable
    group: Hashable
    value: float


@dataclass(frozen=True)
class Estimate:
    """A mean (or a paired difference of means) with its bootstrap interval and what it is over.

    ``low`` and ``high`` are ``nan`` when nothing can be resampled (one seed and one group
    whose values differ); ``constant`` says every value (every paired difference) is the same,
    where ``low == high == mean``; ``groups_alike`` says the values differ but every group
    (and seed) has the same mean, so no resample moves it (a line said both ways, answered
    one way: one clip right and one wrong on every line), also with ``low == high == mean``.
    ``n_reference_seeds`` is set for a difference paired by item: the seeds of arm A,
    ``n_seeds`` being arm B's.
    """

    mean: float
    low: float
    high: float
    n_seeds: int
    n_groups: int
    n_items: int
    method: str
    confidence: float = DEFAULT_CONFIDENCE
    constant: bool = False
    difference: bool = False
    n_reference_seeds: int | None = None
    groups_alike: bool = False

    def format(self, digits: int = 3, groups: str = "groups", *, scope: bool = True) -> str:
        """The estimate in one line, e.g. ``0.640 (95% CI 0.560 to 0.720; 3 seeds × 27 groups)``.

        Args:
            digits: Decimals of the numbers.
            groups: What the groups are, plural (``"line groups"``, ``"dialogues"``).
            scope: Whether to say the coverage and what the interval is over; without, a
                table cell: ``0.640 (0.560 to 0.720)``.

        >>> Estimate(0.08, 0.01, 0.15, 3, 9, 54, "bootstrap", difference=True).format(groups="dialogues")
        '+0.080 (95% CI +0.010 to +0.150; 3 seeds × 9 dialogues)'
        >>> Estimate(0.5, 0.5, 0.5, 1, 1, 2, "bootstrap", constant=True, difference=True).format()
        '+0.500 (every pair +0.500; 1 seed × 1 group)'
        >>> Estimate(0.64, 0.56, 0.72, 3, 27, 54, "bootstrap").format(scope=False)
        '0.640 (0.560 to 0.720)'
        >>> Estimate(0.5, 0.5, 0.5, 1, 23, 46, "bootstrap", groups_alike=True).format(groups="lines")
        '0.500 (every line 0.500; 1 seed × 23 lines)'
        """
        sign = "+" if self.difference else ""

        def number(value: float) -> str:
            return f"{value:{sign}.{digits}f}"

        group = groups[:-1] if groups.endswith("s") else groups
        seeds = _count(self.n_seeds, "seed")
        if self.n_reference_seeds is not None:
            seeds = f"{self.n_seeds} vs {_count(self.n_reference_seeds, 'seed')}"
        where = f"{seeds} × {_count(self.n_groups, group, groups)}"
        if self.constant:
            spread = f"{'every pair' if self.difference else 'all'} {number(self.mean)}"
        elif self.groups_alike:
            spread = f"every {group} {number(self.mean)}"
        elif math.isnan(self.low):
            spread = "no interval"
        elif scope:
            spread = f"{self.confidence:.0%} CI {number(self.low)} to {number(self.high)}"
        else:
            spread = f"{number(self.low)} to {number(self.high)}"
        return f"{number(self.mean)} ({spread}; {where})" if scope else f"{number(self.mean)} ({spread})"

    def to_dict(self) -> dict[str, Any]:
        """The estimate as JSON: ``mean``, ``ci95_low`` and ``ci95_high`` (``None``: no interval), the counts, the method.

        >>> Estimate.from_dict(Estimate(0.64, 0.56, 0.72, 3, 27, 54, "bootstrap").to_dict()).format()
        '0.640 (95% CI 0.560 to 0.720; 3 seeds × 27 groups)'
        """
        no_interval = math.isnan(self.low)
        return {"mean": self.mean, "ci95_low": None if no_interval else self.low,
                "ci95_high": None if no_interval else self.high, "seeds": self.n_seeds, "groups": self.n_groups,
                "items": self.n_items, "reference_seeds": self.n_reference_seeds, "constant": self.constant,
                "difference": self.difference, "groups_alike": self.groups_alike, "confidence": self.confidence,
                "method": self.method}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Estimate:
        """The estimate :meth:`to_dict` wrote."""
        low, high = data.get("ci95_low"), data.get("ci95_high")
        return cls(mean=data["mean"], low=math.nan if low is None else low, high=math.nan if high is None else high,
                   n_seeds=data["seeds"], n_groups=data["groups"], n_items=data["items"], method=data["method"],
                   confidence=data.get("confidence", DEFAULT_CONFIDENCE), constant=data.get("constant", False),
                   difference=data.get("difference", False), n_reference_seeds=data.get("reference_seeds"),
                   groups_alike=data.get("groups_alike", False))


def hierarchical_bootstrap(
    observations: Iterable[Observation | Sequence],
    *,
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> Estimate:
    """The mean of the observations and its bootstrap interval over seeds and groups (the module docstring).

    Args:
        observations: ``(seed, item, group, value)`` per episode; one per (seed, item).
        replicates: Bootstrap replicates.
        confidence: The interval's coverage, in (0, 1).
        seed: The seed of the resampling.

    Returns:
        An :class:`Estimate`; ``mean`` is the mean over every episode.

    Raises:
        ValueError: No observations, a value that is not a finite number, an item seen twice
            on one seed or in two groups, or ``replicates`` / ``confidence`` out of range.
    """
    _check_settings(replicates, confidence)
    arm = _Arm.of(observations, "observations")
    rng = np.random.default_rng(seed)
    group_weights = _draw_weights(rng, replicates, len(arm.groups))
    means = arm.replicate_means(_draw_weights(rng, replicates, len(arm.seeds)), group_weights)
    values = np.array(list(arm.values.values()))
    return _estimate(float(values.mean()), means, bool(np.ptp(values) == 0), confidence,
                     n_seeds=len(arm.seeds), n_groups=len(arm.groups), n_items=len(arm.items),
                     method=_bootstrap_method(replicates))


def paired_difference(
    arm_a: Iterable[Observation | Sequence],
    arm_b: Iterable[Observation | Sequence],
    *,
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> Estimate:
    """Arm B's mean minus arm A's on the same items, with its bootstrap interval.

    Both arms ran the same seeds: the episodes pair by (seed, item), and a replicate draws
    seeds and groups once for both arms. Otherwise they pair by item: the difference is of
    the two arms' means over the items, each arm's seeds drawn apart and the groups once.

    Args:
        arm_a: The reference arm's observations (the control).
        arm_b: The compared arm's observations.
        replicates: Bootstrap replicates.
        confidence: The interval's coverage, in (0, 1).
        seed: The seed of the resampling.

    Raises:
        ValueError: An arm without observations or with a bad one (as
            :func:`hierarchical_bootstrap`), arms whose items (or, on the same seeds,
            whose (seed, item) pairs) differ, or an item in different groups in the two arms.
    """
    _check_settings(replicates, confidence)
    a, b = _Arm.of(arm_a, "arm_a"), _Arm.of(arm_b, "arm_b")
    paired_by_seed = set(a.seeds) == set(b.seeds)
    keys_a, keys_b = (set(a.values), set(b.values)) if paired_by_seed else (set(a.items), set(b.items))
    if keys_a != keys_b:
        what = "(seed, item) pairs" if paired_by_seed else "items"
        raise ValueError(f"arm_a and arm_b must be played on the same {what}: {len(keys_a - keys_b)} only in arm_a "
                         f"(e.g. {_examples(keys_a - keys_b)}), {len(keys_b - keys_a)} only in arm_b "
                         f"(e.g. {_examples(keys_b - keys_a)})")
    moved = sorted((item for item in a.items if a.items[item] != b.items[item]), key=repr)
    if moved:
        raise ValueError(f"arm_a and arm_b put items in different groups: {_examples(moved)}")
    b = b.aligned_to(a) if paired_by_seed else b.aligned_groups(a)
    rng = np.random.default_rng(seed)
    group_weights = _draw_weights(rng, replicates, len(a.groups))
    seed_weights_a = _draw_weights(rng, replicates, len(a.seeds))
    seed_weights_b = seed_weights_a if paired_by_seed else _draw_weights(rng, replicates, len(b.seeds))
    differences = b.replicate_means(seed_weights_b, group_weights) - a.replicate_means(seed_weights_a, group_weights)
    if paired_by_seed:
        pairs = np.array([b.values[key] - a.values[key] for key in a.values])
        mean, constant = float(pairs.mean()), bool(np.ptp(pairs) == 0)
    else:
        item_a, item_b = a.item_means(), b.item_means()
        per_item = np.array([item_b[item] - item_a[item] for item in a.items])
        mean = float(per_item.mean())
        constant = bool(np.ptp(per_item) == 0) and a.same_on_every_seed() and b.same_on_every_seed()
    return _estimate(mean, differences, constant, confidence, n_seeds=len(b.seeds), n_groups=len(a.groups),
                     n_items=len(a.items), method=_bootstrap_method(replicates, paired=True),
                     difference=True, n_reference_seeds=None if paired_by_seed else len(a.seeds))


def on_every_seed(observations: Iterable[Observation | Sequence], seeds: Iterable[Hashable]) -> list[Observation]:
    """An arm played once that is the same on every seed (greedy decoding, no training), given each of ``seeds``.

    Pairing it with an arm of those seeds then pairs by (seed, item); its values do not vary
    over the seeds, so resampling them adds nothing to its side of the difference.

    >>> on_every_seed([Observation(0, "q1", "g1", 1.0)], [0, 1])
    [Observation(seed=0, item='q1', group='g1', value=1.0), Observation(seed=1, item='q1', group='g1', value=1.0)]
    """
    played = [Observation(*row) for row in observations]
    once = {(row.item, row.group, row.value) for row in played}
    if len(once) != len({row.item for row in played}):
        raise ValueError("on_every_seed needs an arm with one value per item (played once, or the same on every seed)")
    return [Observation(seed, item, group, value) for seed in seeds for item, group, value in
            dict.fromkeys((row.item, row.group, row.value) for row in played)]


def mcnemar_exact_p(only_a_correct: int, only_b_correct: int) -> float:
    """The exact McNemar p of two arms' accuracy on the same pairs: the two-sided binomial test of the discordant pairs.

    Args:
        only_a_correct: Pairs arm A got right and arm B wrong.
        only_b_correct: Pairs arm B got right and arm A wrong.

    Returns:
        The two-sided p of ``only_b_correct`` among the discordant pairs at 1/2 (scipy's
        ``binomtest``); 1 without a discordant pair.

    Raises:
        ValueError: A count that is not a non-negative integer.

    >>> round(mcnemar_exact_p(1, 9), 4)
    0.0215
    >>> mcnemar_exact_p(0, 0)
    1.0
    """
    from scipy.stats import binomtest

    for name, count in (("only_a_correct", only_a_correct), ("only_b_correct", only_b_correct)):
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"{name} must be a count of pairs (an integer >= 0), got {count!r}")
    discordant = int(only_a_correct) + int(only_b_correct)
    if discordant == 0:
        return 1.0
    return float(binomtest(int(only_b_correct), discordant, 0.5, alternative="two-sided").pvalue)


def format_p_value(p: float) -> str:
    """A p value as tables print it: three decimals, ``< 0.001`` below that.

    >>> format_p_value(0.0449), format_p_value(0.00031)
    ('0.045', '< 0.001')
    """
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def mcnemar_counts(arm_a: Iterable[Observation | Sequence], arm_b: Iterable[Observation | Sequence]) -> tuple[int, int]:
    """The discordant pairs of two arms' 0/1 correctness, paired by (seed, item): (only A right, only B right).

    The exact test over every (seed, item) pair treats the pairs as independent; the
    bootstrap interval of :func:`paired_difference` is the one that accounts for seeds and groups.

    Raises:
        ValueError: A bad observation, a value other than 0 or 1, or arms whose (seed, item) pairs differ.

    >>> a = [Observation(0, "q1", "g1", 1), Observation(0, "q2", "g2", 0), Observation(0, "q3", "g3", 0)]
    >>> b = [Observation(0, "q1", "g1", 0), Observation(0, "q2", "g2", 1), Observation(0, "q3", "g3", 1)]
    >>> mcnemar_counts(a, b)
    (1, 2)
    """
    a, b = _Arm.of(arm_a, "arm_a"), _Arm.of(arm_b, "arm_b")
    if set(a.values) != set(b.values):
        raise ValueError(f"McNemar pairs episodes by (seed, item): arm_a has {len(a.values)} pairs, arm_b "
                         f"{len(b.values)}, {len(set(a.values) ^ set(b.values))} in only one of them")
    for name, arm in (("arm_a", a), ("arm_b", b)):
        odd = [key for key, value in arm.values.items() if value not in (0.0, 1.0)]
        if odd:
            raise ValueError(f"McNemar needs 0/1 correctness; {name} has {len(odd)} other values, e.g. "
                             f"{odd[0]}: {arm.values[odd[0]]!r}")
    only_a = sum(1 for key in a.values if a.values[key] == 1.0 and b.values[key] == 0.0)
    only_b = sum(1 for key in a.values if a.values[key] == 0.0 and b.values[key] == 1.0)
    return only_a, only_b


def method_text(groups: str = "groups", *, replicates: int = DEFAULT_REPLICATES, paired: bool = True,
                mcnemar: bool = False, confidence: float = DEFAULT_CONFIDENCE) -> str:
    """The one line a table prints to say how its intervals were computed.

    >>> method_text("line groups", mcnemar=True)
    '95% intervals: hierarchical bootstrap over seeds and line groups, 10,000 replicates; paired differences on shared items; McNemar exact p'
    """
    parts = [f"{confidence:.0%} intervals: hierarchical bootstrap over seeds and {groups}, {replicates:,} replicates"]
    if paired:
        parts.append("paired differences on shared items")
    if mcnemar:
        parts.append("McNemar exact p")
    return "; ".join(parts)


@dataclass(frozen=True)
class _Arm:
    """One arm's observations as a (seed, group) table of sums and counts, the bootstrap's input."""

    values: dict[tuple[Hashable, Hashable], float]
    items: dict[Hashable, Hashable]
    seeds: tuple[Hashable, ...]
    groups: tuple[Hashable, ...]

    @classmethod
    def of(cls, observations: Iterable[Observation | Sequence], name: str) -> _Arm:
        values: dict[tuple[Hashable, Hashable], float] = {}
        items: dict[Hashable, Hashable] = {}
        for index, row in enumerate(observations):
            if len(row) != 4:
                raise ValueError(f"{name}[{index}] must be (seed, item, group, value), got {row!r}")
            seed, item, group, value = row
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not math.isfinite(value):
                raise ValueError(f"{name}[{index}] (seed {seed!r}, item {item!r}): the value must be a finite "
                                 f"number, got {value!r}")
            if (seed, item) in values:
                raise ValueError(f"{name}[{index}]: item {item!r} appears twice on seed {seed!r}; one value per "
                                 "(seed, item) is accepted (average repeated rollouts first)")
            if items.setdefault(item, group) != group:
                raise ValueError(f"{name}[{index}]: item {item!r} is in group {group!r} here and {items[item]!r} "
                                 "before; an item belongs to one group")
            values[(seed, item)] = float(value)
        if not values:
            raise ValueError(f"{name} is empty: at least one (seed, item, group, value) observation is needed")
        seeds = tuple(dict.fromkeys(seed for seed, _ in values))
        groups = tuple(dict.fromkeys(items.values()))
        return cls(values, items, seeds, groups)

    def aligned_to(self, other: _Arm) -> _Arm:
        """This arm with ``other``'s order of seeds and groups (the same draws then mean the same seeds and groups)."""
        return _Arm(self.values, self.items, other.seeds, other.groups)

    def aligned_groups(self, other: _Arm) -> _Arm:
        return _Arm(self.values, self.items, self.seeds, other.groups)

    def replicate_means(self, seed_weights: np.ndarray, group_weights: np.ndarray) -> np.ndarray:
        """The mean of each replicate: how often it drew each seed and group, weighing the (seed, group) sums."""
        seed_index = {seed: i for i, seed in enumerate(self.seeds)}
        group_index = {group: j for j, group in enumerate(self.groups)}
        sums = np.zeros((len(self.seeds), len(self.groups)))
        counts = np.zeros_like(sums)
        for (seed, item), value in self.values.items():
            i, j = seed_index[seed], group_index[self.items[item]]
            sums[i, j] += value
            counts[i, j] += 1
        totals = np.einsum("rs,sr->r", seed_weights, sums @ group_weights.T)
        episodes = np.einsum("rs,sr->r", seed_weights, counts @ group_weights.T)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(episodes > 0, totals / episodes, np.nan)

    def item_means(self) -> dict[Hashable, float]:
        by_item: dict[Hashable, list[float]] = {}
        for (_, item), value in self.values.items():
            by_item.setdefault(item, []).append(value)
        return {item: sum(values) / len(values) for item, values in by_item.items()}

    def same_on_every_seed(self) -> bool:
        by_item: dict[Hashable, set[float]] = {}
        for (_, item), value in self.values.items():
            by_item.setdefault(item, set()).add(value)
        return all(len(values) == 1 for values in by_item.values())


def _draw_weights(rng: np.random.Generator, replicates: int, n: int) -> np.ndarray:
    """How many times each of ``n`` units is drawn in each replicate of ``n`` draws with replacement."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=replicates).astype(float)


def _estimate(mean: float, replicates: np.ndarray, constant: bool, confidence: float, **fields) -> Estimate:
    if constant:
        return Estimate(mean=mean, low=mean, high=mean, confidence=confidence, constant=True, **fields)
    usable = replicates[np.isfinite(replicates)]
    if usable.size == 0 or (np.ptp(usable) == 0 and fields["n_seeds"] * fields["n_groups"] == 1):
        return Estimate(mean=mean, low=math.nan, high=math.nan, confidence=confidence, **fields)
    if np.ptp(usable) == 0:  # units to resample, all alike
        return Estimate(mean=mean, low=mean, high=mean, confidence=confidence, groups_alike=True, **fields)
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(usable, [tail, 1.0 - tail])
    return Estimate(mean=mean, low=float(low), high=float(high), confidence=confidence, **fields)


def _bootstrap_method(replicates: int, paired: bool = False) -> str:
    return f"hierarchical bootstrap over seeds and groups, {replicates:,} replicates" + (", paired" if paired else "")


def _check_settings(replicates: int, confidence: float) -> None:
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        raise ValueError(f"replicates must be a positive integer, got {replicates!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def _examples(keys: Iterable[Hashable], limit: int = 3) -> str:
    shown = sorted(keys, key=repr)[:limit]
    return ", ".join(map(repr, shown)) if shown else "none"


__all__ = [
    "DEFAULT_BOOTSTRAP_SEED",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_REPLICATES",
    "Estimate",
    "Observation",
    "format_p_value",
    "hierarchical_bootstrap",
    "mcnemar_counts",
    "mcnemar_exact_p",
    "method_text",
    "on_every_seed",
    "paired_difference",
]
