"""A pytest plugin for benchmarks/work_counters.py's `cost` stage alone: perfguard without its counting
pass, the reference the pass's cost is measured against (`-p no_counting`, with benchmarks/ on the
path). Every case then carries a `counters_problem` naming this file; nothing else changes. Never in
a gate: a run without counters judges no counter (docs/gate.md)."""

from perfguard.measure import counters


def _off(*args, **kwargs):
    raise RuntimeError("counting switched off by benchmarks/no_counting.py (the cost stage's reference run)")


counters.count = _off
counters.prepare = lambda: None  # the profiler's first start, which only counting pays for
