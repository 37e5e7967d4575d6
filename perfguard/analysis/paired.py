"""`perfguard ab`'s statistics: base and head measured in the same rounds on one card, judged by the
differences of their round medians, round by round.

Round k ran both sides back to back on the same card, base first in even rounds and head first in odd
ones (ABBA...). The log ratio of the two sides' medians in that round,

    d_k = 100·ln(head_k / base_k)      (%, so that a change is a ratio and ±1% reads as ±1)

holds what the revisions changed plus the two runs' own noise. What the two runs of a round share
(the card and its bin, its temperature, a clock drifting over minutes, the host's load) cancels in
d_k, and a drift that is linear over the job cancels between a base-first and a head-first round. So
the spread of the d_k is ab's own round-to-round noise, measured on this card in this job: no prior
for how cards differ enters (both sides are on one card by construction), and no figure from another
machine. With n rounds, d̄ their mean and s their standard deviation:

    se = s / √n
    T  = max(t(1-ALPHA, n-1)·se, threshold − t(MARGIN, n-1)·se)   the tolerance: past it, the verdict moves
    D  = T + t(POWER, n-1)·se                                      the smallest slowdown caught 19 times in 20

- regressed: d̄ > T. Both parts are needed. t(1-ALPHA)·se says the slowdown is not noise (about one
  unchanged case in 1,000 passes it). threshold − t(MARGIN)·se says the rounds cannot show the
  change to be smaller than the threshold (the change that matters), so a case that really moved by
  the threshold is caught 99 times in 100, while a precisely measured 0.3% move under a 1% threshold
  is `same`: the user said 0.3% does not matter.
- improved: d̄ < -T, symmetrically.
- same: within ±T and D ≤ threshold: a change of the threshold's size would have been caught, and none
  was. inconclusive: within ±T but D > threshold: the rounds so far could not have seen such a change;
  or T past decide.MAX_TOLERANCE_PCT (two rounds of a wide spread), where nothing is decided and T and
  D are kept at that bound. perfguard ab adds rounds to inconclusive cases while its budget lasts.

Why Student's t, one-sided, at n-1 degrees of freedom (as noise.py's): s comes from only a few rounds
(3 to a dozen), and is itself uncertain; the normal quantile would take it as exact and, at 4 rounds,
put the 1-in-1,000 point at 3.1 standard errors where it lies at 10.2. One-sided, because each
direction is its own question (is head slower? is it faster?). A round's median summarises hundreds
of samples, so the d_k are close to normal, which is what t assumes.

A prior enters only as a floor while rounds are few: under TRUSTED_ROUNDS rounds, s is at least
FLOOR_PCT (per side, for the case's kind; √2 times that for a difference), so that three rounds that
happen to agree closely do not claim a precision nobody measured; the verdict's line says so. From
TRUSTED_ROUNDS on, s is the rounds' own, never below the timer's resolution.

Stopping on the spread (adding rounds while D > threshold) makes the s of the rounds that stop a little
smaller than the truth; MARGIN's 99% (against POWER's 95%) covers that. Simulated through ab's loop
(3 rounds, then one at a time up to 16; normal round noise, 1,000 cases each, seeded): a 1% slowdown
at 0.2% spread a side is caught in 986, at 0.1% in 999, +0.95% at 0.2% in 971; 1,000 unchanged cases
at 0.2% give no alarm and are all `same`, after 5.8 rounds on average (4.3 at 0.1%).

Pure functions: no files, no devices.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Literal

from perfguard.analysis import decide

ALPHA = 0.001  # one-sided: an unchanged case passes T this rarely
MARGIN = 0.99  # a change of the threshold's size passes T this often
POWER = decide.AB.same_power  # D: the slowdown caught this often, as ab's `same` asks
TRUSTED_ROUNDS = 4  # from this many rounds on, the spread is the rounds' own
# Per side, one standard deviation of a round's median (%), the floor while rounds are few: same card,
# same job, rounds a minute apart. H200, four fresh processes: memory-bound medians 0.08% (0.1-0.7%
# at worst), compute-bound under the power cap 1-3%; a shared CPU's host clock moves far more.
FLOOR_PCT = {"memory": 0.1, "launch": 0.5, "compute": 1.0, None: 0.5}
FLOOR_PCT_HOST_CLOCK = 2.0
# What a timer can tell apart, ms: CUDA events resolve about 0.5 µs; the host clock about 1 µs.
RESOLUTION_MS = {"cuda": 0.0005, "cpu": 0.001}
# A case whose spread would need more rounds than it can get, even at this much less spread, is left
# inconclusive instead of spending the budget on it (a host-bound caller's time on a busy host).
HOPELESS_SLACK = 1.5

Status = Literal["regressed", "improved", "same", "inconclusive"]


@dataclasses.dataclass(frozen=True)
class Paired:
    """One metric of one case over its paired rounds, all relative figures in percent."""

    rounds: int
    base_ms: float  # geometric mean of the base's round medians (of the paired rounds)
    head_ms: float
    change_pct: float  # head_ms / base_ms - 1
    spread_pct: float  # each side's round-to-round standard deviation (the d_k's / √2)
    floored: bool  # the spread is the floor, not yet the rounds' own
    tolerance_pct: float  # T
    detectable_pct: float  # D
    threshold_pct: float
    status: Status
    past_bound: bool = False  # T was past decide's bound: T and D are that bound, and nothing is decided

    @property
    def decided(self) -> bool:
        return self.status != "inconclusive"


def judge(base_ms: Sequence[float], head_ms: Sequence[float], threshold_pct: float, *,
          bound: str | None = None, host_clock: bool = False) -> Paired | None:
    """The paired verdict of one metric from its round medians, base_ms[k] and head_ms[k] measured in
    the same round k; None with fewer than two rounds (no spread to measure)."""
    pairs = [(b, h) for b, h in zip(base_ms, head_ms) if b > 0 and h > 0 and math.isfinite(b) and math.isfinite(h)]
    n = len(pairs)
    if n < 2:
        return None
    logs_b = [math.log(b) for b, _ in pairs]
    logs_h = [math.log(h) for _, h in pairs]
    d = [100.0 * (h - b) for b, h in zip(logs_b, logs_h)]
    mean = math.fsum(d) / n
    s = math.sqrt(math.fsum((x - mean) ** 2 for x in d) / (n - 1))
    base, head = math.exp(math.fsum(logs_b) / n), math.exp(math.fsum(logs_h) / n)
    resolution = 100.0 * math.sqrt(2.0) * RESOLUTION_MS["cpu" if host_clock else "cuda"] / base
    floor = math.sqrt(2.0) * (FLOOR_PCT_HOST_CLOCK if host_clock else FLOOR_PCT.get(bound, FLOOR_PCT[None]))
    floored = n < TRUSTED_ROUNDS and s < floor
    s = max(s, floor if floored else 0.0, resolution)
    tolerance, detectable = limits(s, n, threshold_pct)
    change = 100.0 * (head / base - 1.0)
    tolerance_pct, detectable_pct, past = decide.bounded(_ratio(tolerance), _ratio(detectable), threshold_pct)
    # The one rule of every verdict word (analysis/decide.py), at ab's power for `same`.
    status, _ = decide.decide(decide.Evidence(change_pct=change, tolerance_pct=tolerance_pct, reach_pct=detectable_pct,
                                              threshold_pct=threshold_pct, past_bound=past))
    return Paired(rounds=n, base_ms=base, head_ms=head, change_pct=change, spread_pct=s / math.sqrt(2.0), floored=floored,
                  tolerance_pct=tolerance_pct, detectable_pct=detectable_pct, threshold_pct=threshold_pct,
                  past_bound=past, status=status)  # type: ignore[arg-type]


def limits(s: float, n: int, threshold_pct: float) -> tuple[float, float]:
    """(T, D) in log-% (as the d_k) for a spread `s` of the differences over `n` rounds."""
    se = s / math.sqrt(n)
    threshold = 100.0 * math.log1p(threshold_pct / 100.0)
    tolerance = max(quantile(1.0 - ALPHA, n - 1) * se, threshold - quantile(MARGIN, n - 1) * se)
    return tolerance, tolerance + quantile(POWER, n - 1) * se


def _ratio(log_pct: float) -> float:
    """A change in log-% as a ratio's: 100·ln(1.01) = 0.995 reads 1.0%. expm1 overflows past e^709 (two
    rounds of a wide spread reached e^800): a figure past e^100 is far past decide's bound, which holds it."""
    return 100.0 * math.expm1(min(log_pct, 10_000.0) / 100.0)


def needs_round(paired: Paired, most: int) -> bool:
    """Whether ab gives the case another round: it is undecided, and rounds up to `most` could decide it
    (the one rule of ab's loop, ab_verdict.Judged.undecided; the simulations of it ask it too)."""
    return not paired.decided and rounds_needed(paired, most) is not None


def rounds_needed(paired: Paired, most: int) -> int | None:
    """The fewest rounds (up to `most`) at which a case of this spread could be decided, None past
    `most`. The spread is taken HOPELESS_SLACK times smaller than measured, since a few rounds'
    spread may be high by chance; a floored spread is not judged hopeless at all."""
    if paired.floored:
        return paired.rounds + 1
    s = math.sqrt(2.0) * paired.spread_pct / HOPELESS_SLACK
    threshold = 100.0 * math.log1p(paired.threshold_pct / 100.0)
    for n in range(max(2, paired.rounds), most + 1):
        if limits(s, n, paired.threshold_pct)[1] <= threshold:
            return n
    return None


@functools.lru_cache(maxsize=256)
def quantile(p: float, df: int) -> float:
    """Student's t quantile: scipy.stats.t.ppf's own function (noise.alarm_quantile says why this one)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))
