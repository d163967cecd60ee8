"""The leakage and determinism checks: nothing an agent sees tells the gold label, and the verifier
gives one reward for one reply."""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium as gym

from affectgym.envs.validation.episodes import agent_view
from affectgym.envs.validation.report import (
    FAIL,
    MAX_VARIANCE_TOLERANCE,
    PASS,
    REWARD_SLACK,
    SKIP,
    CheckResult,
)
from affectgym.envs.validation.subject import EnvUnderTest


def check_no_solution_leakage(subject: EnvUnderTest) -> CheckResult:
    """``semantic.no_solution_leakage``: the label flip, label words in ids and the text memoriser on the env's splits.

    With only the gold label changed (``flip_label(scenario)``), everything an agent sees is
    identical (observations, tool outputs, messages, tool schemas, the flat prompt:
    :func:`~affectgym.envs.validation.episodes.agent_view`); no scenario id holds a label word;
    and a text-only memoriser of the train split stays at chance on eval and validation
    (:func:`split_memoriser`, :mod:`affectgym.envs.leakage`; for envs made by ``gym.make`` with
    ``scenario_text``).
    """
    if not subject.text:
        return CheckResult(
            "semantic.no_solution_leakage", SKIP, {},
            [f"{type(subject.base).__name__} is not an AffectEnv: it hides no label and has no text view"],
        )
    base = subject.base
    problems: list[str] = []
    flipped = 0
    for scenario in subject.scenarios:
        other = base.flip_label(scenario)
        if other is None:
            break
        flipped += 1
        if agent_view(base, scenario) != agent_view(base, other):
            problems.append(f"label flip: scenario {scenario.id!r}: what the agent sees changes when only the gold label changes")
        for label in base.label_set:
            if re.search(re.escape(str(label)), str(scenario.id), re.IGNORECASE):
                problems.append(f"scenario id {scenario.id!r} contains the label word {label!r}")
    memoriser, memoriser_problems = split_memoriser(subject.env)
    problems += memoriser_problems
    measured = {"label_flip_scenarios": flipped, "memoriser": memoriser}
    if problems:
        return CheckResult(
            "semantic.no_solution_leakage", FAIL, measured, problems[:10],
            "keep the gold label out of observations, tool outputs, tool schemas, the flat prompt and scenario ids; "
            "split by group (split_group) so no eval item has a twin in train",
        )
    flip = f"label flip: {flipped} scenarios" if flipped else "label flip: none (flip_label gives no other label)"
    return CheckResult("semantic.no_solution_leakage", PASS, measured, [flip, f"memoriser: {memoriser}"])


def split_memoriser(env: gym.Env) -> tuple[str, list[str]]:
    """The text memoriser on ``env``'s train split against its eval and validation splits:
    ``(summary, problems)``; the summary says why when it was skipped.

    Run for envs made by ``gym.make`` whose scenarios carry labels and that define
    ``scenario_text``, on the sides of the env's own split when it names them with
    ``split_parts()``, else ``"train"``, ``"validation"`` and ``"eval"``.
    """
    from affectgym.envs.leakage import check_leakage

    base = env.unwrapped
    spec = env.spec or base.spec
    if not base.label_set or not base.scenarios or base.scenario_text(base.scenarios[0]) is None:
        return "skipped: the env hides no label or has no scenario_text(scenario)", []
    if spec is None:
        return (
            "skipped: not made by gym.make, so its splits cannot be remade; "
            "run affectgym.envs.leakage.check_leakage(train_env, eval_env)"
        ), []

    def remake(split: Any) -> gym.Env:
        return gym.make(spec.id, **{**spec.kwargs, "split": split})

    try:
        # an env whose split is an object names its sides (split_parts); else the names
        train, evaluated = base.split_parts() if hasattr(base, "split_parts") else ("train", "eval")
        made = {"train": remake(train), "eval": remake(evaluated)}
    except (ValueError, TypeError, KeyError) as exc:
        return f"skipped: its train and eval splits could not be made ({exc})", []
    no_validation = None
    try:  # some splits have no validation side (a leave-one-out without a second value)
        made["validation"] = remake(train.with_part("validation") if hasattr(train, "with_part") else "validation")
    except (ValueError, TypeError, KeyError) as exc:
        no_validation = f"none ({exc})"
    try:
        results = {side: check_leakage(made["train"], made[side]) for side in made if side != "train"}
    except ImportError:
        return "skipped: needs scikit-learn (pip install 'affectgym[eval]')", []
    finally:
        for split_env in made.values():
            split_env.close()
    lines = [f"{side}: {result}" for side, result in results.items()]
    if no_validation:
        lines.append(f"validation: {no_validation}")
    problems = [f"leakage ({side} vs train): {result}" for side, result in results.items() if not result.passed]
    return " | ".join(lines), problems


def check_verifier_determinism(subject: EnvUnderTest) -> CheckResult:
    """``semantic.verifier_determinism``: the oracle's reply scored ``replays`` times (20) gives one reward
    (within ``variance_tolerance`` with an LLM judge, each replay asking a fresh, uncached judge).

    An env is LLM-judged when a criterion of its rubric has ``scorer="judge"``; its judge's model,
    version and parameters are recorded (:attr:`EnvUnderTest.judge_pin`). A numeric env replays
    its ``reference_policy``'s seeded episodes.
    """
    if subject.references is None:
        return CheckResult(
            "semantic.verifier_determinism", SKIP, {},
            ["unmet dependency: semantic.oracle_max (no oracle reply to replay)"],
        )
    if subject.policies:
        scenario = subject.scenarios[0]
        totals = [subject.policy_return(scenario, subject.base.reference_policy) for _ in range(subject.replays)]
        measured = {"replays": subject.replays, "llm_judged": False, "declared_variance_tolerance": 0.0}
        if len(set(totals)) != 1:
            return CheckResult("semantic.verifier_determinism", FAIL, measured,
                               [f"the oracle policy's seeded episodes earned {len(set(totals))} different mean rewards "
                                f"in {len(totals)} replays ({min(totals):.6g} to {max(totals):.6g})"],
                               "make step() a function of the episode so far: randomness only from self.np_random")
        return CheckResult("semantic.verifier_determinism", PASS, measured,
                           [f"{len(totals)} replays of the oracle policy on {scenario.id}: identical rewards"])
    scenario, text, trace, _ = subject.references[0]
    judged = bool(subject.judged_criteria)
    tolerance = subject.declaration.variance_tolerance if judged else 0.0
    measured: dict[str, Any] = {"replays": subject.replays, "llm_judged": judged, "declared_variance_tolerance": tolerance}
    if judged:
        judge = getattr(subject.base, "judge", None)
        if judge is None or not hasattr(judge, "lm"):
            return CheckResult(
                "semantic.verifier_determinism", FAIL, measured,
                [f"criteria {subject.judged_criteria} ask a judge, but the env has no judge attribute to pin and replay"],
                "keep the env's judge (an affectgym Judge) in its judge attribute",
            )
        measured["judge"] = subject.judge_pin
        results = []
        for _ in range(subject.replays):
            with fresh_judge(subject.base):
                results.append(subject.base.score(scenario, text, trace))
        unscored = sum(1 for result in results if result.unscored)
    else:
        results = [subject.base.score(scenario, text, trace) for _ in range(subject.replays)]
        unscored = 0
    totals = [float(result.total) for result in results]
    subject.observed_rewards.extend(totals)
    variance = statistics.pvariance(totals)
    measured.update(reward_variance=variance, reward_min=min(totals), reward_max=max(totals), judge_failures=unscored)
    same_parts = all(result.components == results[0].components for result in results)
    problems = []
    if unscored:
        problems.append(f"the judge failed on {unscored} of {len(results)} replays ({results[0].unscored or 'see the logs'})")
    if judged and variance > tolerance + REWARD_SLACK:
        problems.append(f"reward variance {variance:.4g} over {len(totals)} replays exceeds the declared {tolerance:g} "
                        f"(rewards {min(totals):.3f} to {max(totals):.3f})")
    if not judged and not (len(set(totals)) == 1 and same_parts):
        problems.append(f"score() of one reply gave {len(set(totals))} different rewards in {len(totals)} replays "
                        f"({min(totals):.6g} to {max(totals):.6g}) with no LLM judge")
    if problems:
        remedy = ("pin the judge: temperature 0, one model version; or declare a larger variance_tolerance (at most "
                  f"{MAX_VARIANCE_TOLERANCE:g})" if judged else "make score() a pure function of (scenario, reply, trace)")
        return CheckResult("semantic.verifier_determinism", FAIL, measured, problems, remedy)
    what = f"variance {variance:.3g} <= {tolerance:g}, judge {measured['judge']['model']}" if judged else "identical rewards"
    return CheckResult("semantic.verifier_determinism", PASS, measured, [f"{len(totals)} replays of {scenario.id}: {what}"])


@contextmanager
def fresh_judge(env: Any) -> Iterator[Any]:
    """Within the block, ``env.judge`` is a new judge of the same class, LM and settings, with no
    verdict cache and nothing memoised, so that a score asks the LM again."""
    judge = env.judge
    env.judge = type(judge)(judge.lm, dataclasses.replace(judge.config, cache=False), adapter=judge.adapter)
    try:
        yield env.judge
    finally:
        env.judge = judge
