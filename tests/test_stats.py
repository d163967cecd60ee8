"""The hierarchical bootstrap's intervals cover, pair and print as a reviewer would want them to."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from affectgym.eval.stats import (
    Estimate,
    Observation,
    hierarchical_bootstrap,
    mcnemar_counts,
    mcnemar_exact_p,
    method_text,
    paired_difference,
)


def simulated_eval(rng, seeds=3, groups=27, items_per_group=2, seed_sd=0.03, group_sd=0.15, noise_sd=0.2, mean=0.5):
    """An eval whose true mean is ``mean``: a random effect per seed and per group, noise per episode."""
    seed_effect = rng.normal(0.0, seed_sd, seeds)
    group_effect = rng.normal(0.0, group_sd, groups)
    return [Observation(s, f"g{g}/i{i}", f"g{g}", float(mean + seed_effect[s] + group_effect[g] + rng.normal(0.0, noise_sd)))
            for s in range(seeds) for g in range(groups) for i in range(items_per_group)]


def test_the_95_percent_interval_covers_the_true_mean_at_about_its_nominal_rate():
    rng = np.random.default_rng(7)
    covered = []
    for dataset in range(200):
        estimate = hierarchical_bootstrap(simulated_eval(rng), replicates=1000, seed=dataset)
        covered.append(estimate.low <= 0.5 <= estimate.high)
    assert 0.90 <= np.mean(covered) <= 0.99


def test_the_interval_is_wider_than_the_seed_means_alone_suggest_when_items_vary():
    data = simulated_eval(np.random.default_rng(3), seed_sd=0.0)
    estimate = hierarchical_bootstrap(data)
    seed_means = [np.mean([o.value for o in data if o.seed == s]) for s in range(3)]
    assert estimate.high - estimate.low > max(seed_means) - min(seed_means)


def test_the_same_data_give_the_same_interval():
    data = simulated_eval(np.random.default_rng(1))
    assert hierarchical_bootstrap(data) == hierarchical_bootstrap(data)


def test_ten_thousand_replicates_take_well_under_a_second():
    import time

    data = simulated_eval(np.random.default_rng(2), groups=112, items_per_group=1)
    started = time.perf_counter()
    hierarchical_bootstrap(data, replicates=10_000)
    assert time.perf_counter() - started < 1.0


def test_the_paired_difference_of_identical_arms_is_centred_at_zero():
    data = simulated_eval(np.random.default_rng(4))
    estimate = paired_difference(data, data)
    assert estimate.mean == 0.0 and estimate.constant and estimate.format() == "+0.000 (every pair +0.000; 3 seeds × 27 groups)"


def test_the_paired_difference_of_arms_with_the_same_noise_is_centred_on_the_shift():
    rng = np.random.default_rng(5)
    control = simulated_eval(rng)
    shifted = [o._replace(value=o.value + 0.1 + rng.normal(0.0, 0.05)) for o in control]
    estimate = paired_difference(control, shifted)
    assert estimate.low < 0.1 < estimate.high and estimate.high - estimate.low < 0.05
    assert estimate.n_reference_seeds is None and estimate.format().startswith("+0.")


def test_pairing_cancels_the_item_variance_the_arms_share():
    rng = np.random.default_rng(6)
    control = simulated_eval(rng, group_sd=0.3)
    shifted = [o._replace(value=o.value + 0.05 + rng.normal(0.0, 0.02)) for o in control]
    paired = paired_difference(control, shifted)
    alone = hierarchical_bootstrap(shifted)
    assert paired.high - paired.low < (alone.high - alone.low) / 3


def test_arms_of_different_seeds_pair_by_item_and_keep_each_arms_seeds():
    rng = np.random.default_rng(8)
    trained = simulated_eval(rng)
    base = [o._replace(seed="base") for o in simulated_eval(rng, seeds=1)]
    estimate = paired_difference(base, trained)
    assert estimate.n_seeds == 3 and estimate.n_reference_seeds == 1
    assert "3 vs 1 seed × 27 groups" in estimate.format()
    per_item = {}
    for o in trained:
        per_item.setdefault(o.item, []).append(o.value)
    base_values = {o.item: o.value for o in base}
    assert estimate.mean == pytest.approx(np.mean([np.mean(v) - base_values[item] for item, v in per_item.items()]))


def test_mcnemar_is_scipys_exact_binomial_on_the_discordant_pairs():
    for only_a, only_b in ((3, 11), (10, 10), (0, 6), (25, 14)):
        expected = binomtest(only_b, only_a + only_b, 0.5).pvalue
        assert mcnemar_exact_p(only_a, only_b) == pytest.approx(expected)
    assert mcnemar_exact_p(1, 9) == pytest.approx(2 * (math.comb(10, 0) + math.comb(10, 1)) / 2**10)


def test_mcnemar_on_the_textbook_example_is_the_doubled_binomial_tail():
    # Wikipedia's McNemar example: 121 and 59 discordant pairs (chi-squared 21.35, p < 0.001)
    tail = math.fsum(math.comb(180, k) for k in range(60)) / 2**180
    assert mcnemar_exact_p(121, 59) == pytest.approx(2 * tail)
    assert mcnemar_exact_p(121, 59) < 1e-5


def test_mcnemar_counts_pair_each_episode_by_seed_and_item():
    a = [Observation(s, f"q{i}", f"q{i}", float(i < 5)) for s in range(2) for i in range(10)]
    b = [Observation(s, f"q{i}", f"q{i}", float(i < 8 and i != 0)) for s in range(2) for i in range(10)]
    assert mcnemar_counts(a, b) == (2, 6)


def test_one_seed_formats_as_one_seed_with_an_interval_over_groups():
    estimate = hierarchical_bootstrap(simulated_eval(np.random.default_rng(9), seeds=1))
    text = estimate.format(groups="line groups")
    assert "; 1 seed × 27 line groups)" in text and "95% CI" in text and "±" not in text
    assert estimate.low < estimate.mean < estimate.high


def test_identical_values_format_without_a_fake_interval():
    data = [Observation(s, f"q{i}", f"g{i // 2}", 1.0) for s in range(3) for i in range(54)]
    estimate = hierarchical_bootstrap(data)
    assert estimate.constant and estimate.format() == "1.000 (all 1.000; 3 seeds × 27 groups)"


def test_one_seed_and_one_group_of_differing_values_has_no_interval():
    estimate = hierarchical_bootstrap([Observation(0, "q1", "g", 0.0), Observation(0, "q2", "g", 1.0)])
    assert math.isnan(estimate.low) and estimate.format() == "0.500 (no interval; 1 seed × 1 group)"
    assert estimate.to_dict()["ci95_low"] is None


def test_the_method_line_names_the_levels_the_replicates_and_the_tests():
    assert method_text("dialogues", replicates=2000, mcnemar=True) == (
        "95% intervals: hierarchical bootstrap over seeds and dialogues, 2,000 replicates; "
        "paired differences on shared items; McNemar exact p")


def test_no_observations_is_an_error_that_says_so():
    with pytest.raises(ValueError, match="observations is empty"):
        hierarchical_bootstrap([])


@pytest.mark.parametrize("value", [math.nan, math.inf, "0.5", None, True])
def test_a_value_that_is_not_a_finite_number_is_an_error_naming_the_episode(value):
    with pytest.raises(ValueError, match=r"observations\[1\] \(seed 0, item 'q2'\).*finite number"):
        hierarchical_bootstrap([Observation(0, "q1", "g", 0.5), Observation(0, "q2", "g", value)])


def test_an_item_twice_on_one_seed_or_in_two_groups_is_an_error():
    with pytest.raises(ValueError, match="appears twice on seed 0"):
        hierarchical_bootstrap([Observation(0, "q1", "g", 0.5), Observation(0, "q1", "g", 0.5)])
    with pytest.raises(ValueError, match="item 'q1' is in group 'h'"):
        hierarchical_bootstrap([Observation(0, "q1", "g", 0.5), Observation(1, "q1", "h", 0.5)])


def test_arms_on_different_items_are_an_error_naming_the_mismatch():
    a = [Observation(0, "q1", "g1", 0.5), Observation(0, "q2", "g2", 0.5)]
    b = [Observation(0, "q1", "g1", 0.5), Observation(0, "q3", "g3", 0.5)]
    with pytest.raises(ValueError, match=r"same \(seed, item\) pairs: 1 only in arm_a \(e.g. \(0, 'q2'\)\)"):
        paired_difference(a, b)
    with pytest.raises(ValueError, match="same items"):
        paired_difference(a, [o._replace(seed=1) for o in b])
    with pytest.raises(ValueError, match="arm_b is empty"):
        paired_difference(a, [])


def test_mcnemar_rejects_counts_and_values_it_cannot_test():
    with pytest.raises(ValueError, match="only_b_correct must be a count"):
        mcnemar_exact_p(3, -1)
    with pytest.raises(ValueError, match="0/1 correctness; arm_b"):
        mcnemar_counts([Observation(0, "q", "g", 1.0)], [Observation(0, "q", "g", 0.5)])


def test_the_t_interval_without_scipy_is_an_import_error_naming_the_extra(monkeypatch):
    import sys

    from affectgym.eval.metrics import mean_ci95

    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    with pytest.raises(ImportError, match=r"pip install affectgym\[eval\]"):
        mean_ci95([0.0, 1.0, 1.0])


def test_a_one_episode_reward_prints_as_n_1_in_the_summary_and_the_report():
    from affectgym.eval.summary import format_mean_ci95

    assert format_mean_ci95({"mean": 0.25, "ci95": 0.0, "n": 1}) == "0.250 (n=1)"
    assert format_mean_ci95({"mean": 0.25, "ci95": 0.125, "n": 4}) == "0.250 ± 0.125"


def test_groups_of_one_right_and_one_wrong_clip_print_every_group_alike_not_no_interval():
    # one answer for both deliveries of every line: each line scores 0.5, so no resample moves the mean
    data = [Observation(0, f"q{i}", f"line{i // 2}", float(i % 2)) for i in range(46)]
    estimate = hierarchical_bootstrap(data)
    assert estimate.groups_alike and not estimate.constant and estimate.low == estimate.high == 0.5
    assert estimate.format(groups="line groups") == "0.500 (every line group 0.500; 1 seed × 23 line groups)"
    assert Estimate.from_dict(estimate.to_dict()) == estimate
