"""Rubrics: named, weighted reward criteria with caps and gates.

A :class:`Rubric` is the single place where an environment's reward is defined. Every
path that rewards an agent (an interactive ``step``, a flattened TRL reward function, the
``environment_factory`` adapter) goes through :meth:`Rubric.score` or
:meth:`Rubric.score_batch`, so there is never a second copy of a reward.

A criterion is a small function of ``(scenario, reply, trace)`` returning a float, or
``None`` when it does not apply (TRL skips ``None``). ``reply`` is a :class:`Reply`: the
agent's final text and the answer the environment parsed from it, once, before any
criterion runs (``reply.text`` is ``None`` when the episode ended unanswered, and
``reply.answer`` is ``None`` when the text did not parse). Weights live in the rubric, not
in the function. A criterion of weight 0 is a logged metric only.

Caps ("the total is at most 0.60 when a core rule is broken") and gates ("the total is 0
unless the answer parses") act on the weighted sum. So that a per-component view (TRL logs
one reward function per component and sums them with ``reward_weights``) adds up to the
same total, the change a cap or gate makes is reported as its own component, of weight 1.
A criterion with ``capped=False`` is added after them: in a multi-step episode, what
earlier steps already earned is not taken back by a rule about the last answer.

A criterion that asks an outside scorer (an LLM judge, a classifier server) names it
(``scorer="judge"``). When that scorer fails on a reply, the criterion returns
:class:`Unscored` with the reason: the component is ``None`` (left out of the total, never
scored as 0) and the :class:`RubricResult` says which criterion went unscored and why, so
every layer above (an env step's ``info``, the eval results, the training logs) reads the
failure from the result itself.

>>> rubric = Rubric([
...     Criterion("correct", lambda s, r, t: float(r.answer == s), weight=0.7),
...     Criterion("short", lambda s, r, t: float(r.text is not None and len(r.text) < 5), weight=0.3),
... ], caps=[Cap("wordy", limit=0.5, when=lambda c: c["short"] == 0.0)])
>>> rubric.score("yes", Reply("yes", "yes"), []).total
1.0
>>> result = rubric.score("a long answer", Reply("a long answer", "a long answer"), [])
>>> round(result.total, 6), round(result.components["cap:wordy"], 6)
(0.5, -0.2)
>>> round(sum(rubric.weights[name] * value for name, value in result.components.items()), 6)
0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

CriterionFn = Callable[[Any, "Reply", Sequence[Mapping[str, Any]]], "float | None"]
BatchCriterionFn = Callable[
    [Sequence[Any], Sequence["Reply"], Sequence[Sequence[Mapping[str, Any]]]],
    Sequence["float | None"],
]
Condition = Callable[[Mapping[str, "float | None"]], bool]


@dataclass(frozen=True)
class Unscored:
    """What a criterion returns when its scorer failed on a reply (a judge outage, a classifier error).

    Attributes:
        reason: What failed, for logs and results (e.g. ``"emotion judge gpt-4o-mini: HTTP 500"``).

    >>> rubric = Rubric([Criterion("judge", lambda s, r, t: Unscored("judge down"), scorer="judge"),
    ...                  Criterion("short", lambda s, r, t: 1.0)])
    >>> result = rubric.score(None, Reply("ok"), [])
    >>> result.total, result.components["judge"], result.unscored, result.failed_scorers
    (1.0, None, {'judge': 'judge down'}, frozenset({'judge'}))
    """

    reason: str


@dataclass(frozen=True)
class Reply:
    """A final reply as every criterion receives it: parsed once, by the environment.

    Attributes:
        text: The agent's final message, ``None`` when the episode ended unanswered.
        answer: What the environment's ``parse_final`` read from ``text`` (a label, a
            dict, an array...), ``None`` when unanswered or when the text did not parse.

    >>> Reply("<answer>sad</answer>", "sad").answer
    'sad'
    >>> Reply(None).text is None
    True
    """

    text: str | None
    answer: Any = None


@dataclass(frozen=True)
class Criterion:
    """One named part of a reward.

    Args:
        name: Component name; TRL logs it as ``rewards/<name>/mean``.
        fn: ``fn(scenario, reply, trace) -> float | None`` where ``reply`` is a
            :class:`Reply`; or, when ``batched`` is true, ``fn(scenarios, replies, traces)
            -> list[float | None]`` for expensive scorers.
        weight: Weight in the total. ``0`` makes the criterion a logged metric.
        batched: Whether ``fn`` scores a whole batch in one call.
        capped: Whether the rubric's gates and caps act on this criterion. ``False`` for
            what a multi-step episode earned before its last answer (and episode bonuses),
            which is added after them.
        scorer: The outside scorer ``fn`` asks (e.g. ``"judge"``), ``None`` for a pure
            function; an :class:`Unscored` it returns is that scorer's failure.
        scaled_by: Name of another criterion of the rubric whose raw value multiplies this
            one's (e.g. emotion credit scaled by how well the reply listens): the component
            reported is the product, and the other criterion is scored once for both. Where
            the other is ``None`` this one is left as it is; where it went unscored, so does this one.

    >>> rubric = Rubric([Criterion("warm", lambda s, r, t: 1.0, 0.5, scaled_by="on_topic"),
    ...                  Criterion("on_topic", lambda s, r, t: 0.4, 0.5)])
    >>> rubric.score(None, Reply("hi"), []).components
    {'warm': 0.4, 'on_topic': 0.4}
    """

    name: str
    fn: Callable[..., Any]
    weight: float = 1.0
    batched: bool = False
    capped: bool = True
    scorer: str | None = None
    scaled_by: str | None = None

    def seeing(self, transform: Callable[[Any], Any]) -> Criterion:
        """A copy that scores ``transform(scenario)`` in place of each scenario (same name and weight).

        E.g. a control that rewards the emotion of another target than the one shown.

        >>> right = Criterion("right", lambda s, r, t: float(r.text == s))
        >>> right.seeing(str.upper).fn("yes", Reply("YES"), []), right.fn("yes", Reply("YES"), [])
        (1.0, 0.0)
        """
        fn = self.fn
        if self.batched:
            def seen(scenarios: Sequence[Any], replies: Sequence[Reply], traces: Sequence[Any]) -> Any:
                return fn([transform(s) for s in scenarios], replies, traces)
        else:
            def seen(scenario: Any, reply: Reply, trace: Any) -> Any:
                return fn(transform(scenario), reply, trace)
        return replace(self, fn=seen)


@dataclass(frozen=True)
class Cap:
    """Caps the total at ``limit`` while ``when(components)`` holds.

    Args:
        name: Reported as the component ``cap:<name>`` (the change it made, ``<= 0``).
        limit: Highest total allowed while the condition holds.
        when: Condition on the raw (unweighted) components.
    """

    name: str
    limit: float
    when: Condition


@dataclass(frozen=True)
class Gate:
    """Replaces the total by ``value`` unless ``passes(components)`` holds.

    Args:
        name: Reported as the component ``gate:<name>`` (the change it made).
        passes: Condition on the raw components that lets the total through.
        value: Total given when the gate is closed.
    """

    name: str
    passes: Condition
    value: float = 0.0


@dataclass(frozen=True)
class RubricResult:
    """A scored reply.

    Attributes:
        total: The reward: weighted sum of components, after gates and caps.
        components: Raw value of each criterion (``None`` where it did not apply or went
            unscored) and the adjustment of each cap or gate that the rubric declares.
        unscored: The criteria whose scorer failed on this reply, with the reason.
        failed_scorers: The scorers (:attr:`Criterion.scorer`) of those criteria.
    """

    total: float
    components: dict[str, float | None]
    unscored: dict[str, str] = field(default_factory=dict)
    failed_scorers: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Rubric:
    """Weighted criteria, caps and gates; the one reward definition of an environment.

    Args:
        criteria: The named components.
        caps: Upper bounds on the total under conditions.
        gates: Conditions the total must pass to count.
    """

    criteria: Sequence[Criterion]
    caps: Sequence[Cap] = field(default_factory=tuple)
    gates: Sequence[Gate] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        names = [c.name for c in self.criteria]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"rubric criteria must have unique names; repeated: {duplicates}")
        for c in self.criteria:
            if c.scaled_by is not None and (c.scaled_by == c.name or c.scaled_by not in names):
                raise ValueError(f"criterion {c.name!r} is scaled by {c.scaled_by!r}, which must be another "
                                 f"criterion of the rubric: one of {sorted(set(names) - {c.name})}")
            scaling = next((o for o in self.criteria if o.name == c.scaled_by), None)
            if scaling is not None and scaling.scaled_by is not None:
                raise ValueError(f"criterion {c.name!r} is scaled by {c.scaled_by!r}, which is itself scaled by "
                                 f"{scaling.scaled_by!r}: scale by the criterion that is scored as it is")

    @property
    def scorers(self) -> frozenset[str]:
        """The outside scorers the criteria ask (:attr:`Criterion.scorer`), e.g. ``{"judge"}``."""
        return frozenset(c.scorer for c in self.criteria if c.scorer is not None)

    @property
    def weights(self) -> dict[str, float]:
        """Weight of every component, caps and gates included (their weight is 1)."""
        weights = {c.name: c.weight for c in self.criteria}
        weights.update({f"gate:{g.name}": 1.0 for g in self.gates})
        weights.update({f"cap:{c.name}": 1.0 for c in self.caps})
        return weights

    def unit_bounds(self) -> tuple[float, float]:
        """The lowest and highest total when every criterion scores in [0, 1]: the sums of the
        negative and of the positive weights (caps and gates only lower a total).

        >>> Rubric([Criterion("a", lambda *_: 1.0, 0.7), Criterion("b", lambda *_: 0.0, -0.5)]).unit_bounds()
        (-0.5, 0.7)
        """
        weights = [c.weight for c in self.criteria]
        return (sum(w for w in weights if w < 0), sum(w for w in weights if w > 0))

    def with_weights(self, overrides: Mapping[str, float] | None) -> Rubric:
        """Return a copy with some criterion weights replaced.

        Raises:
            ValueError: An override names no criterion of this rubric.
        """
        if not overrides:
            return self
        known = {c.name for c in self.criteria}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown reward weights {unknown}; this rubric has {sorted(known)}")
        for name, weight in overrides.items():
            if not isinstance(weight, (int, float)) or not math.isfinite(weight):
                raise ValueError(f"weight for {name!r} must be a finite number, got {weight!r}")
        return replace(
            self,
            criteria=tuple(
                replace(c, weight=float(overrides.get(c.name, c.weight))) for c in self.criteria
            ),
        )

    def without(self, name: str) -> Rubric:
        """Return a copy without the criterion ``name`` (e.g. a judge that is not configured)."""
        return replace(self, criteria=tuple(c for c in self.criteria if c.name != name))

    def score(self, scenario: Any, reply: Reply, trace: Sequence[Mapping[str, Any]]) -> RubricResult:
        """Score one parsed reply. See :meth:`score_batch`."""
        return self.score_batch([scenario], [reply], [trace])[0]

    def score_batch(
        self,
        scenarios: Sequence[Any],
        replies: Sequence[Reply],
        traces: Sequence[Sequence[Mapping[str, Any]]],
    ) -> list[RubricResult]:
        """Score a batch of parsed replies; batched criteria see the whole batch in one call.

        Returns:
            One :class:`RubricResult` per reply, in order.
        """
        if not len(scenarios) == len(replies) == len(traces):
            raise ValueError(
                f"score_batch needs equal lengths, got {len(scenarios)} scenarios, "
                f"{len(replies)} replies and {len(traces)} traces"
            )
        columns: dict[str, list[Any]] = {}
        for criterion in self.criteria:
            if criterion.batched:
                values = list(criterion.fn(scenarios, replies, traces))
            else:
                values = [criterion.fn(s, r, t) for s, r, t in zip(scenarios, replies, traces, strict=True)]
            columns[criterion.name] = [_as_component(criterion.name, v) for v in values]
        for criterion in self.criteria:
            if criterion.scaled_by is not None:
                columns[criterion.name] = [_scaled(value, by) for value, by
                                           in zip(columns[criterion.name], columns[criterion.scaled_by], strict=True)]
        return [
            self._combine({name: column[i] for name, column in columns.items()})
            for i in range(len(replies))
        ]

    def _combine(self, values: dict[str, float | Unscored | None]) -> RubricResult:
        unscored = {name: value.reason for name, value in values.items() if isinstance(value, Unscored)}
        components: dict[str, float | None] = {
            name: None if isinstance(value, Unscored) else value for name, value in values.items()
        }
        total = sum(
            c.weight * components[c.name]
            for c in self.criteria
            if c.capped and components[c.name] is not None
        )
        for gate in self.gates:
            closed = not gate.passes(components)
            components[f"gate:{gate.name}"] = (gate.value - total) if closed else 0.0
            if closed:
                total = gate.value
        for cap in self.caps:
            capped = cap.when(components) and total > cap.limit
            components[f"cap:{cap.name}"] = (cap.limit - total) if capped else 0.0
            if capped:
                total = cap.limit
        for c in self.criteria:
            if not c.capped and components[c.name] is not None:
                total += c.weight * components[c.name]
        failed = frozenset(c.scorer for c in self.criteria if c.name in unscored and c.scorer is not None)
        return RubricResult(total=float(total), components=components, unscored=unscored, failed_scorers=failed)


def _scaled(value: float | Unscored | None, by: float | Unscored | None) -> float | Unscored | None:
    """``value`` times the scaling criterion's ``by``: unscored when either is, as it is when either is ``None``."""
    if isinstance(value, Unscored) or value is None:
        return value
    if isinstance(by, Unscored):
        return by
    return value if by is None else value * by


def _as_component(name: str, value: Any) -> float | Unscored | None:
    if value is None or isinstance(value, Unscored):
        return value
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"criterion {name!r} returned {value}; criteria must return finite floats")
    return value
