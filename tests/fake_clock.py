"""The conftest.py of an inner run (copied in under that name) whose cases' times must be exact; read
as text by the tests, never imported by them (it would stop this process's own clock).

In that run, `time.sleep(s)` moves a clock of the process's own on by `s` instead of sleeping, and
`time.perf_counter` and `time.perf_counter_ns`, which perfguard's host-clock timer and sampling loop
read, read that clock, each read moving it on by 1 µs (so that a loop waiting on it always ends). A
case that sleeps 20 ms is then measured at 20.001 ms a call, every call, in every run, on any machine
under any load: an end-to-end verdict made on such cases is decided by the code under test, never by
how busy the machine is, and the run takes no time sleeping. Only those three functions of the `time`
module change: pytest's own timings (bound at its import), waits on a baseline's lock
(`time.monotonic`, polling without a real sleep) and the watchdog's timeouts (a real timer signal)
keep real time. Real sleeps on the real clock are measured elsewhere (test_plugin.py), with bounds
no load can break.
"""

from __future__ import annotations

import time

_now_ns = 0


def perf_counter_ns() -> int:
    global _now_ns
    _now_ns += 1_000
    return _now_ns


def perf_counter() -> float:
    return perf_counter_ns() / 1e9


def sleep(seconds: float) -> None:
    global _now_ns
    _now_ns += round(seconds * 1e9)


time.perf_counter_ns, time.perf_counter, time.sleep = perf_counter_ns, perf_counter, sleep
