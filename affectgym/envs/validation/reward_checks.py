"""The reward-scale checks: the oracle is the best reply the env knows, doing nothing scores well below
it, and no shipped canary reaches it.

The oracle is a text env's ``reference_answer(scenario)``, or a numeric env's
``reference_policy(observation)`` (:attr:`~affectgym.envs.validation.subject.EnvUnderTest.references`).
"""

from __future__ import annotations

import statistics

from affectgym.envs.validation.report import FAIL, PASS, REWARD_SLACK, SKIP, CheckResult
from affectgym.envs.validation.subject import EnvUnderTest

#: Significance at which a canary with a ``canary_min_share`` is shown to win too often.
CANARY_SHARE_ALPHA = 0.05


def check_oracle_max(subject: EnvUnderTest) -> CheckResult:
    """``semantic.oracle_max``: on every scenario the oracle is the best of the env's own replies, within ``oracle_tolerance``.

    OpenEnv asks the oracle to reach the top of ``reward_range``; that top is what the reward's
    formula could pay, not what any reply reaches (a scorer with a model in it never pays 1, and an
    arc of targets costs smoothness at every change), so it failed envs whose reward works. The
    top is measured instead: the best score of every reply the checks have of the env (doing
    nothing, the canaries, another item's reference, the reference for another target, the bare
    answer). The red team's replies are judged by ``hack_surface``. An env with no oracle fails,
    as in OpenEnv.
    """
    tolerance = subject.declaration.oracle_tolerance
    if subject.references is None:
        return CheckResult(
            "semantic.oracle_max", FAIL, {"declared_tolerance": tolerance},
            [f"no oracle: {type(subject.base).__name__} has no reference_answer(scenario)"
             + ("" if subject.text else " and no reference_policy(observation)")],
            "implement reference_answer(scenario) -> (final_text, trace) on an AffectEnv (docs/plugins.md), or "
            "reference_policy(observation) -> action, idle_policy and canary_policies on a numeric env",
        )
    wrong = subject.wrong_replies or [{} for _ in subject.scenarios]
    beaten = []
    margins = []
    for (scenario, _, _, total), floor, canaries, others in zip(subject.references, subject.floors, subject.canary_scores, wrong, strict=True):
        name, best = max({"doing nothing": floor, **canaries, **others}.items(), key=lambda item: item[1])
        margins.append(total - best)
        if best > total + tolerance + REWARD_SLACK:
            beaten.append((scenario.id, name, best, total))
    totals = [row[3] for row in subject.references]
    measured = {
        "oracle_reward_min": min(totals),
        "oracle_reward_mean": statistics.fmean(totals),
        "oracle_minus_best_other_min": min(margins),
        "declared_tolerance": tolerance,
        "scenarios": len(totals),
    }
    if beaten:
        worst = ", ".join(f"{sid} {name} {best:.3f} > {total:.3f}" for sid, name, best, total in beaten[:5])
        return CheckResult(
            "semantic.oracle_max", FAIL, measured,
            [f"another reply beats the oracle by more than {tolerance:g} on {len(beaten)} of {len(totals)} scenarios ({worst})"],
            "make reference_answer the best reply the env knows, or the reward pay it most",
        )
    return CheckResult(
        "semantic.oracle_max", PASS, measured,
        [f"oracle >= every other reply - {tolerance:g} on {len(totals)} scenarios (min margin {min(margins):+.3f}; "
         f"oracle {min(totals):.3f} to {max(totals):.3f})"],
    )


def check_floor_gap(subject: EnvUnderTest) -> CheckResult:
    """``semantic.floor_gap``: doing nothing scores at least ``floor_margin`` below the oracle on every scenario.

    Doing nothing: the better of no answer and an empty one (a numeric env's ``idle_policy``).
    """
    margin = subject.declaration.floor_margin
    if subject.references is None:
        return CheckResult(
            "semantic.floor_gap", SKIP, {"declared_margin": margin},
            ["unmet dependency: semantic.oracle_max (no oracle to measure the gap from)"],
        )
    gaps = [(row[0].id, row[3] - floor, floor) for row, floor in zip(subject.references, subject.floors, strict=True)]
    narrow = [gap for gap in gaps if gap[1] < margin - REWARD_SLACK]
    measured = {
        "floor_reward_max": max(gap[2] for gap in gaps),
        "gap_min": min(gap[1] for gap in gaps),
        "declared_margin": margin,
        "scenarios": len(gaps),
    }
    if narrow:
        worst = ", ".join(f"{sid} gap {gap:.3f}" for sid, gap, _ in sorted(narrow, key=lambda g: g[1])[:5])
        return CheckResult(
            "semantic.floor_gap", FAIL, measured,
            [f"doing nothing is within {margin:g} of the oracle on {len(narrow)} of {len(gaps)} scenarios ({worst})"],
            "pay nothing (or less) for an unanswered or empty reply",
        )
    return CheckResult(
        "semantic.floor_gap", PASS, measured,
        [f"doing nothing scores <= {measured['floor_reward_max']:.3f}, >= {margin:g} below the oracle (min gap {measured['gap_min']:.3f})"],
    )


def _wins_more_often_than(wins: int, scenarios: int, allowed: float) -> bool:
    """Whether ``wins`` of ``scenarios`` show a win rate above ``allowed`` (exact binomial test, one-sided)."""
    from scipy.stats import binomtest

    return binomtest(wins, scenarios, allowed, alternative="greater").pvalue < CANARY_SHARE_ALPHA


def check_canary_floor(subject: EnvUnderTest) -> CheckResult:
    """``semantic.canary_floor``: every shipped canary scores at most the floor, or below the oracle.

    The canaries are the reward hacks the env ships, ``canaries(scenario)`` (a numeric env's
    ``canary_policies()``); an env that ships none is skipped.

    A canary the env names in ``canary_min_share`` must do so on that share of the scenarios:
    it fails when the scenarios it wins on show, by a one-sided exact binomial test at
    :data:`CANARY_SHARE_ALPHA`, that it wins more often than the rest of the share allows
    (on a sample of 3, one win is no evidence; on 20, four are). Every other canary must lose
    on each scenario.
    """
    if not subject.text and not subject.policies:
        return CheckResult(
            "semantic.canary_floor", SKIP, {"canaries_checked": 0},
            [f"no canaries: {type(subject.base).__name__} is not an AffectEnv (canaries(scenario) is its hook)"],
        )
    references = subject.references
    shares = dict(getattr(subject.base, "canary_min_share", {}))
    for name, share in shares.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise ValueError(f"{type(subject.base).__name__}.canary_min_share[{name!r}] is {share!r}; "
                             "give the share of scenarios a canary must lose on, in (0, 1]")
    beating: dict[str, list[str]] = {}
    played: dict[str, int] = {}
    checked = 0
    for index, scenario in enumerate(subject.scenarios):
        floor = subject.floors[index]
        reference = references[index][3] if references is not None else None
        for name, score in subject.canary_scores[index].items():
            checked += 1
            played[name] = played.get(name, 0) + 1
            if score > floor + REWARD_SLACK and (reference is None or not score < reference):
                against = f"reference {reference:.3f}" if reference is not None else "no reference"
                beating.setdefault(name, []).append(f"{scenario.id}/{name}: {score:.3f} > floor {floor:.3f} and >= {against}")
    shown_above = {name: _wins_more_often_than(len(lines), played[name], 1 - shares[name])
                   for name, lines in beating.items() if name in shares}
    problems = [line for name, lines in beating.items() if shown_above.get(name, True) for line in lines]
    tolerated = {name: f"{played[name] - len(beating[name])}/{played[name]}"
                 for name, shown in shown_above.items() if not shown}
    measured = {"canaries_checked": checked, "canaries_failing": len(problems), "canaries_within_share": tolerated}
    cls = type(subject.base).__name__
    if not checked:
        return CheckResult(
            "semantic.canary_floor", SKIP, measured,
            [f"canaries: 0 checked, so no reward hack was tried: {cls}.canaries(scenario) returns none"],
            "return {name: (final_text, trace)} of reward hacks that must score at most the floor or below "
            "reference_answer (docs/plugins.md)",
        )
    if problems and references is None:
        return CheckResult(
            "semantic.canary_floor", FAIL, measured,
            [f"canaries: {len(problems)} score above the floor, and {cls} does not implement reference_answer(scenario), "
             "the good final answer and trace they must score below; return (final_text, trace) (see docs/plugins.md)"],
            "return (final_text, trace) from reference_answer(scenario) (docs/plugins.md)",
        )
    if problems:
        return CheckResult(
            "semantic.canary_floor", FAIL, measured,
            [f"canaries: {len(problems)} score above the floor and at or above the reference: " + "; ".join(problems[:10])],
            "score each reward hack of canaries(scenario) below the reference answer",
        )
    return CheckResult(
        "semantic.canary_floor", PASS, measured,
        [f"canaries: {checked} at most the floor or below the reference"
         + "".join(f"; {name} below it on {won} scenarios ({shares[name]:.0%} asked, no evidence of fewer)"
                   for name, won in tolerated.items())],
    )
