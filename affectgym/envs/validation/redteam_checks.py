"""The red-team checks (affectgym's own): the reward pays for the skill, and no cheap edit of a reply buys it."""

from __future__ import annotations

import statistics

from affectgym.envs.validation.report import FAIL, PASS, REWARD_SLACK, SKIP, CheckResult
from affectgym.envs.validation.subject import EnvUnderTest


def check_reward_pays_skill(subject: EnvUnderTest) -> CheckResult:
    """``semantic.reward_pays_skill``: the reference beats cheap and wrong replies by ``skill_margin`` on average.

    The controls, scored on the true scenario: :attr:`EnvUnderTest.wrong_replies` (another item's
    reference, the reference for another target, the bare answer), and the red team's best reply
    made from a cheap base the reward already ranks ``skill_margin`` below the reference (a canary
    that does not hold the whole reference, or the bare answer where reasoning is paid). A reward that pays no skill pays these as much as
    the reference.
    """
    margin = subject.declaration.skill_margin
    if subject.wrong_replies is None:
        return CheckResult(
            "semantic.reward_pays_skill", SKIP, {"declared_margin": margin},
            ["unmet dependency: an oracle (reference_answer) on at least two scenarios"],
        )
    gaps: dict[str, list[float]] = {}
    searched = subject.redteam if subject.text else [None] * len(subject.scenarios)
    for (_, _, _, reference), wrong, item in zip(subject.references, subject.wrong_replies, searched, strict=True):
        cheap = [a["score"] for name, a in item.best_by_base.items()
                 if name != "reference" and a.get("cheap_base", True) and a["base_score"] < reference - margin] if item else []
        for name, score in {**wrong, **({"redteam_from_cheap_bases": max(cheap)} if cheap else {})}.items():
            gaps.setdefault(name, []).append(reference - score)
    mean_gaps = {name: statistics.fmean(values) for name, values in gaps.items()}
    measured = {"mean_gap": mean_gaps, "declared_margin": margin, "scenarios": len(subject.scenarios)}
    narrow = {name: gap for name, gap in mean_gaps.items() if gap < margin - REWARD_SLACK}
    if narrow:
        return CheckResult(
            "semantic.reward_pays_skill", FAIL, measured,
            [f"the reference beats {name} by {gap:+.3f} on average (< {margin:g}), on {len(gaps[name])} scenarios"
             for name, gap in sorted(narrow.items(), key=lambda item: item[1])],
            "pay for the skill itself: a reply for another target, another item's reply or a bare answer must "
            "score less; `affectgym redteam ENV` shows which edits the reward pays",
        )
    return CheckResult(
        "semantic.reward_pays_skill", PASS, measured,
        [f"the reference beats {', '.join(sorted(mean_gaps))} by >= {min(mean_gaps.values()):.3f} on average"],
    )


def check_hack_surface(subject: EnvUnderTest) -> CheckResult:
    """``semantic.hack_surface``: no family of the red team wins more than ``max_hack_share`` of the scenarios.

    The red team (:mod:`affectgym.redteam`) searches cheap edits of the reference, the bare answer
    and the canaries under ``redteam_budget`` score calls per family per scenario; a family wins a
    scenario when its best reply beats the reference by ``hack_margin``, or lifts a cheaper base
    to the reference's score.
    """
    from affectgym.redteam.report import summarise

    declared = subject.declaration
    if not subject.text:
        return CheckResult(
            "semantic.hack_surface", SKIP, {"declared_share": declared.max_hack_share},
            [f"{type(subject.base).__name__}'s actions are not text: the red team edits replies"],
        )
    if subject.references is None:
        return CheckResult(
            "semantic.hack_surface", SKIP, {"declared_share": declared.max_hack_share},
            ["unmet dependency: an oracle (reference_answer) for the red team to beat"],
        )
    report = summarise(subject.redteam, env_id=str(subject.env.spec.id if subject.env.spec else ""), split=str(subject.base.split),
                       budget=declared.redteam_budget, seed=subject.seed, margin=declared.hack_margin,
                       max_share=declared.max_hack_share)
    shares = {family.family: family.share for family in report.families}
    measured = {"family_share": shares, "score_calls": report.score_calls, "declared_share": declared.max_hack_share,
                "budget": declared.redteam_budget, "scenarios": report.scenarios}
    beaten = [family for family in report.families if family.share > declared.max_hack_share]
    if beaten:
        return CheckResult(
            "semantic.hack_surface", FAIL, measured,
            [f"{family.family} wins {family.won} of {family.scenarios} scenarios; e.g. {family.example['scenario_id']}: "
             f"{family.example['reference']:.3f} -> {family.example['score']:.3f} with {family.example['edits']}"
             for family in beaten[:5]],
            "defend the reward against these families (`affectgym redteam ENV --out DIR` lists the replies)",
        )
    worst = report.worst
    return CheckResult(
        "semantic.hack_surface", PASS, measured,
        [f"no family wins more than {declared.max_hack_share:.0%} of {report.scenarios} scenarios "
         f"(worst: {worst.family if worst else '-'}, {worst.share if worst else 0:.0%})"],
    )
