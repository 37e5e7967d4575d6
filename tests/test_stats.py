"""Statistics of timing samples: the median's confidence interval and the latency summary, against scipy/numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from perfguard.analysis.stats import ci_half_width_ratio, median_ci, summarize


def ranks_of(n: int, confidence: float = 0.95) -> tuple[int, int]:
    """The 1-based ranks median_ci picks for n samples (the samples are their own ranks, shuffled)."""
    x = np.random.default_rng(n).permutation(np.arange(1, n + 1, dtype=float))
    lo, hi = median_ci(x, confidence)
    return int(lo), int(hi)


def coverage(n: int, lo_rank: int, hi_rank: int) -> float:
    """P(x_(lo) <= median <= x_(hi)) for any continuous distribution: the binomial(n, 1/2) mass on [lo, hi-1]."""
    return stats.binom.cdf(hi_rank - 1, n, 0.5) - stats.binom.cdf(lo_rank - 1, n, 0.5)


@pytest.mark.parametrize(("n", "expected"), [(10, (2, 9)), (20, (6, 15)), (50, (18, 33)), (100, (40, 61))])
def test_median_ci_picks_the_textbook_order_statistics(n, expected):
    # The classic tables of distribution-free median intervals (e.g. Conover, Practical
    # Nonparametric Statistics): n=100 -> the 40th and 61st values.
    assert ranks_of(n) == expected


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_median_ci_ranks_are_the_narrowest_symmetric_pair_that_covers_at_the_binomial_level(confidence):
    for n in range(10, 300):
        lo, hi = ranks_of(n, confidence)
        assert lo + hi == n + 1, n  # symmetric around the median
        assert coverage(n, lo, hi) >= confidence, n
        assert coverage(n, lo + 1, hi - 1) < confidence, n  # one rank narrower no longer covers


def test_median_ci_matches_scipys_quantile_test_on_skewed_data():
    rng = np.random.default_rng(0)
    for n in (10, 11, 37, 100, 257, 1000):
        x = rng.lognormal(mean=0.0, sigma=0.5, size=n)
        truth = stats.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(0.95)
        assert median_ci(x) == (float(truth.low), float(truth.high)), n


def test_median_ci_does_not_depend_on_sample_order():
    x = np.random.default_rng(1).exponential(size=101)
    assert median_ci(x) == median_ci(np.sort(x)) == median_ci(list(x[::-1]))


def test_median_ci_of_too_few_samples_is_their_range():
    # Below 6 samples no pair of order statistics reaches 95%: the range is the widest there is.
    assert median_ci([3.0]) == (3.0, 3.0)
    assert median_ci([5.0, 1.0, 4.0, 2.0, 3.0]) == (1.0, 5.0)


def test_median_ci_of_no_samples_is_an_error():
    with pytest.raises(ValueError):
        median_ci([])


def test_ci_half_width_ratio_is_half_the_interval_over_the_median():
    x = np.arange(1, 101, dtype=float)  # median 50.5, interval (40, 61)
    assert ci_half_width_ratio(x) == pytest.approx((61 - 40) / 2 / 50.5)
    assert ci_half_width_ratio([2.0] * 20) == 0.0
    assert ci_half_width_ratio([0.0] * 20) == math.inf


def test_summarize_fills_every_field_from_the_samples():
    samples = [float(v) for v in range(11, 0, -1)]  # 1..11, unsorted
    s = summarize(samples, "budget")
    assert (s.median_ms, s.mean_ms, s.min_ms, s.max_ms) == (6.0, 6.0, 1.0, 11.0)
    assert (s.p10_ms, s.p90_ms) == (2.0, 10.0)
    assert s.iqr_ms == 8.5 - 3.5
    assert (s.ci_low_ms, s.ci_high_ms) == (2.0, 10.0)  # ranks 2 and 10 of 11
    assert (s.n, s.stop_reason) == (11, "budget")


def test_summarize_agrees_with_numpy_on_skewed_samples():
    x = np.random.default_rng(2).lognormal(mean=-1.0, sigma=0.8, size=500)
    s = summarize(list(x), "converged")
    p10, p25, p75, p90 = np.percentile(x, [10, 25, 75, 90])
    assert s.median_ms == pytest.approx(np.median(x), rel=1e-12)
    assert s.mean_ms == pytest.approx(x.mean(), rel=1e-12)
    assert (s.min_ms, s.max_ms) == (x.min(), x.max())
    assert (s.p10_ms, s.p90_ms) == pytest.approx((p10, p90), rel=1e-12)
    assert s.iqr_ms == pytest.approx(p75 - p25, rel=1e-12)
    assert (s.ci_low_ms, s.ci_high_ms) == median_ci(x)
    assert s.ci_low_ms <= s.median_ms <= s.ci_high_ms
    assert s.n == 500
    assert s.ci_half_width_pct == pytest.approx(100 * ci_half_width_ratio(x))
