"""Distribution-free statistics of timing samples."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from perfguard.model import TimeSummary, Timing, drift_pct


def median_ci(samples: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Confidence interval of the median from order statistics (binomial, no normality assumed).

    Timing samples are skewed and heavy-tailed, so a t-interval would be wrong; the ranks
    j and n-j+1 around the median cover it with the binomial probability.
    """
    x = np.sort(np.asarray(samples, dtype=float))
    n = len(x)
    if n == 0:
        raise ValueError("no samples")
    j = _ci_rank(n, confidence)
    return float(x[j - 1]), float(x[n - j])


@functools.lru_cache(maxsize=1024)  # scipy's ppf costs 0.3 ms a call; a comparison of 5,000 cases asks for few n
def _ci_rank(n: int, confidence: float) -> int:
    return max(1, int(stats.binom.ppf((1 - confidence) / 2, n, 0.5)))


def ci_half_width_ratio(samples: Sequence[float] | np.ndarray, confidence: float = 0.95) -> float:
    """Half-width of the median's confidence interval, relative to the median."""
    lo, hi = median_ci(samples, confidence)
    med = float(np.median(samples))
    return (hi - lo) / 2 / med if med > 0 else math.inf


def summarize(samples_ms: Sequence[float], stop_reason: str) -> TimeSummary:
    x = np.asarray(samples_ms, dtype=float)
    lo, hi = median_ci(x)
    p10, p25, p75, p90 = np.percentile(x, [10, 25, 75, 90])
    return TimeSummary(
        median_ms=float(np.median(x)),
        mean_ms=float(x.mean()),
        min_ms=float(x.min()),
        max_ms=float(x.max()),
        p10_ms=float(p10),
        p90_ms=float(p90),
        iqr_ms=float(p75 - p25),
        ci_low_ms=lo,
        ci_high_ms=hi,
        n=len(x),
        stop_reason=stop_reason,
        drift_pct=drift_pct(samples_ms),  # of every sample: the record keeps a few of them (MAX_STORED_SAMPLES)
    )


def timing(samples_ms: Sequence[float], stop_reason: str = "converged") -> Timing:
    """One kind of time from its samples: their summary, and the samples themselves."""
    return Timing(summarize(samples_ms, stop_reason), tuple(samples_ms))
