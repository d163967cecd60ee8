"""No cheap reply beats an honest one on EmotionStyle-v0: the canaries against the references, over the eval split.

Before the coherence and repetition rules and the normalised text (commit c5e8978), the
canary that heaps emotive words after the topic scored at or above the honest reference on
302 of the 308 eval scenarios, the one that appends them to it on 277, naming the emotion in
look-alike letters on 90-100, fullwidth stage directions on 184, and GRPO's own parroted
replies averaged 0.123. These tests hold each canary below the reference on at least 95 %
of the scenarios and the references within 0.05 of their mean score then (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path

import pytest

from affectgym.envs.emotion_style import EmotionStyleEnv, StyleScenario
from affectgym.rewards.rules import repeated_ngram_share, rule_penalties

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
REFERENCE_MEAN_BEFORE = 0.2093  # the references' mean eval score (nade) before these rules, at commit c5e8978
REFERENCE_MEAN_DROP_ALLOWED = 0.05
SHARE_BELOW_REQUIRED = 0.95  # of eval scenarios where every canary must score below the reference
NEW_RULES = ("word_salad", "repetition", "copies_instruction")

pytest.importorskip("nade")


@pytest.fixture(scope="module")
def eval_env() -> EmotionStyleEnv:
    return EmotionStyleEnv(classifier="nade", split="eval")


def totals(env: EmotionStyleEnv, scenarios: Sequence[StyleScenario], replies: Sequence[str | None]) -> list[float]:
    return [result.total for result in env.score_batch(scenarios, replies, [[] for _ in replies])]


def share_below_reference_by_canary(env: EmotionStyleEnv, scenarios: Sequence[StyleScenario]) -> dict[str, float]:
    honest = totals(env, scenarios, [env.reference_answer(s)[0] for s in scenarios])
    canaries = [env.canaries(s) for s in scenarios]
    shares = {}
    for name in canaries[0]:
        scores = totals(env, scenarios, [c[name][0] for c in canaries])
        shares[name] = sum(score < ref for score, ref in zip(scores, honest, strict=True)) / len(scenarios)
    return shares


def test_every_canary_scores_below_the_reference_on_a_sample_of_the_eval_split(eval_env: EmotionStyleEnv) -> None:
    sample = eval_env.scenarios[::11]  # 28 scenarios, every emotion
    shares = share_below_reference_by_canary(eval_env, sample)
    assert len(shares) >= 17
    assert {name: share for name, share in shares.items() if share < SHARE_BELOW_REQUIRED} == {}


@pytest.mark.slow
def test_every_canary_scores_below_the_reference_on_95_percent_of_the_eval_split(eval_env: EmotionStyleEnv) -> None:
    assert len(eval_env.scenarios) == 308
    shares = share_below_reference_by_canary(eval_env, eval_env.scenarios)
    assert {name: share for name, share in shares.items() if share < SHARE_BELOW_REQUIRED} == {}


def test_the_references_mean_eval_score_stays_within_0_05_of_before_the_rules(eval_env: EmotionStyleEnv) -> None:
    scenarios = eval_env.scenarios
    mean = statistics.mean(totals(eval_env, scenarios, [eval_env.reference_answer(s)[0] for s in scenarios]))
    assert mean >= REFERENCE_MEAN_BEFORE - REFERENCE_MEAN_DROP_ALLOWED


def samples(name: str, arm: str | None = None, seed: int | None = None) -> list[dict]:
    rows = [json.loads(line) for line in (RESULTS / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if (arm is None or r.get("arm") == arm) and (seed is None or r.get("seed") == seed)]


def test_the_replies_grpo_parroted_score_below_the_honest_reference() -> None:
    env = EmotionStyleEnv(classifier="nade", split="all")
    parroted = [r for r in samples("emotion_style_samples.jsonl", "trained", 0) if repeated_ngram_share(r["reply"]) >= 0.5]
    assert len(parroted) >= 100
    scenarios = [env.get_scenario(r["scenario_id"]) for r in parroted]
    scores = totals(env, scenarios, [r["reply"] for r in parroted])
    honest = totals(env, scenarios, [env.reference_answer(s)[0] for s in scenarios])
    assert all(score < ref for score, ref in zip(scores, honest, strict=True))
    assert statistics.mean(scores) < 0.0 < statistics.mean(r["reward"] for r in parroted)  # it paid before


def test_the_noun_heaps_grpo_wrote_from_the_warm_start_are_word_salad_and_score_below_the_honest_reference() -> None:
    env = EmotionStyleEnv(classifier="nade", split="all")
    heaps = samples("style_warmstart_samples.jsonl", "sft-grpo", 0)
    scenarios = [env.get_scenario(r["scenario_id"]) for r in heaps]
    assert len(heaps) == 112
    assert all(rule_penalties(r["reply"], s.emotion, s.instruction, s.topic)["word_salad"].hit
               for r, s in zip(heaps, scenarios, strict=True))
    scores = totals(env, scenarios, [r["reply"] for r in heaps])
    honest = totals(env, scenarios, [env.reference_answer(s)[0] for s in scenarios])
    assert all(score < ref for score, ref in zip(scores, honest, strict=True))


def test_word_salad_fires_on_no_demonstration_nor_base_reply_and_on_few_of_the_warm_starts() -> None:
    from affectgym.data.style_demonstrations import load_style_demonstrations

    env = EmotionStyleEnv(classifier="nade", split="all")

    def rate(pairs: Sequence[tuple[str, StyleScenario]]) -> float:
        return sum(rule_penalties(reply, s.emotion, s.instruction, s.topic)["word_salad"].hit for reply, s in pairs) / len(pairs)

    demonstrations = load_style_demonstrations()
    assert rate([(d.reply, env.get_scenario(d.scenario_id)) for d in demonstrations]) == 0.0
    assert rate([(r["reply"], env.get_scenario(r["scenario_id"])) for r in samples("style_hacking_samples.jsonl", "base")]) == 0.0
    warm_start = samples("style_warmstart_samples.jsonl", "sft")
    assert rate([(r["reply"], env.get_scenario(r["scenario_id"])) for r in warm_start]) <= 0.01  # 3 of 336: "bear bear food, bear bear water, ..."


def firing_rate(pairs: Sequence[tuple[str, StyleScenario]]) -> dict[str, float]:
    """Share of the replies each new rule fires on, and on which any of them fires."""
    hits = [rule_penalties(reply, s.emotion, s.instruction, s.topic) for reply, s in pairs]
    rates = {rule: sum(h[rule].hit for h in hits) / len(hits) for rule in NEW_RULES}
    rates["any"] = sum(any(h[rule].hit for rule in NEW_RULES) for h in hits) / len(hits)
    return rates


def test_the_new_rules_fire_on_no_reference_reply_of_any_label_or_split() -> None:
    from affectgym.envs.emotion_style import OPEN_LABELS, reference_reply

    env = EmotionStyleEnv(classifier="nade", split="all")
    basic = env.scenarios
    scenarios = [*basic, *(StyleScenario(f"{s.instruction_id}:{label}", s.instruction_id, s.instruction, label, s.topic)
                           for s in basic[::7] for label in OPEN_LABELS)]
    assert len(scenarios) == 221 * 19
    assert firing_rate([(reference_reply(s), s) for s in scenarios])["any"] == 0.0


def test_the_new_rules_fire_on_few_of_the_base_models_replies_and_on_most_of_grpos_loops() -> None:
    env = EmotionStyleEnv(classifier="nade", split="all")
    base = [
        *samples("emotion_style_samples.jsonl", "base"),
        *samples("emotion_style_headroom_samples.jsonl"),
        *samples("emotion_style_preface_probe_samples.jsonl", "base-preface"),
    ]
    base_rate = firing_rate([(r["reply"], env.get_scenario(r["scenario_id"])) for r in base])
    trained = samples("emotion_style_samples.jsonl", "trained", 0)
    trained_rate = firing_rate([(r["reply"], env.get_scenario(r["scenario_id"])) for r in trained])
    assert base_rate["any"] <= 0.10  # 0.070 measured; docs/benchmarks.md reads each flagged reply
    assert trained_rate["repetition"] >= 3 * base_rate["repetition"]
