"""The sampling loop's stopping rule (DESIGN §3) and the host-clock timer, with timers whose values are chosen."""

from __future__ import annotations

import itertools
import time
import types

from perfguard.analysis.stats import ci_half_width_ratio
from perfguard.measure import timers
from perfguard.measure.timers import HostTimer, SamplingRule, sample

FAR = float("inf")  # a deadline that never comes


class Timer:
    """A timer whose calls take the given times in turn, remembering how many calls each batch asked for."""

    def __init__(self, *times_ms: float):
        self.values = itertools.cycle(times_ms)
        self.batches: list[int] = []

    def __call__(self, k: int) -> list[float]:
        self.batches.append(k)
        return [next(self.values) for _ in range(k)]


def steady(ms: float) -> Timer:
    """Every call takes exactly `ms`: the median's CI is zero wide at once."""
    return Timer(ms)


def bimodal() -> Timer:
    """Calls alternate 0.5 ms and 3 ms: the median's CI never narrows to 0.5%."""
    return Timer(0.5, 3.0)


def test_steady_samples_converge_after_the_minimum_count_when_no_minimum_time_is_asked():
    samples, stop = sample(steady(1.0), 0.001, SamplingRule(min_time_s=0.0), FAR)
    assert stop == "converged"
    assert len(samples) == 10


def test_converging_waits_for_the_minimum_sampling_time(monkeypatch):
    rule = SamplingRule(min_time_s=0.05)
    now = [0.0]  # the sampling loop's clock, moved only by the calls: no load changes what it reads
    monkeypatch.setattr(timers, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))

    def take(k):  # steady 1 ms calls that take their time
        now[0] += k * 0.001
        return [1.0] * k

    samples, stop = sample(take, 0.001, rule, FAR)
    assert stop == "converged"
    assert now[0] >= rule.min_time_s
    # Converged at 10 samples, but went on until the minimum time had passed, and no further batch.
    assert 50 <= len(samples) <= 60


def test_the_minimum_time_counts_from_when_the_load_began(monkeypatch):
    # The runner passes the warm-up's start: 25 ms of warm-up leave 75 ms of a 100 ms minimum to sample.
    rule = SamplingRule(min_time_s=0.1)
    now = [0.025]
    monkeypatch.setattr(timers, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))

    def take(k):
        now[0] += k * 0.001
        return [1.0] * k

    samples, stop = sample(take, 0.001, rule, FAR, started=0.0)
    assert stop == "converged" and 0.1 <= now[0] <= 0.111
    assert 75 <= len(samples) <= 86


def test_noisy_samples_stop_at_the_deadline_with_at_least_the_minimum_count():
    samples, stop = sample(bimodal(), 0.001, SamplingRule(), deadline=time.perf_counter())
    assert stop == "budget"
    assert len(samples) == 10
    assert ci_half_width_ratio(samples) > 0.005


def test_the_minimum_count_is_taken_past_the_deadline_one_slow_call_at_a_time():
    take = Timer(500.0, 3000.0)
    samples, stop = sample(take, 1.0, SamplingRule(), deadline=0.0)
    assert take.batches == [1] * 10  # a 1 s call overfills the 10 ms batch target: one call a batch
    assert (len(samples), stop) == (10, "budget")


def test_noisy_samples_stop_at_max_samples_exactly():
    samples, stop = sample(bimodal(), 0.001, SamplingRule(max_samples=55), FAR)
    assert (len(samples), stop) == (55, "max_samples")


def test_host_timer_times_each_call_in_milliseconds():
    calls = []

    def nap():
        calls.append(1)
        time.sleep(0.001)

    times = HostTimer(nap).take(5)
    assert len(times) == len(calls) == 5
    assert all(t >= 1.0 for t in times)  # a 1 ms sleep never takes less; no upper bound (noisy CPU)


def test_the_cpu_timers_are_timers_the_runner_can_sample_and_ask_if_outrun():
    # measure/passes.py types every timer as timers.Timer and asks each `outrun` and `dropped`.
    for timer in (HostTimer(lambda: None), timers.CallerTimer(lambda: None, per_call_s=1e-3)):
        assert isinstance(timer, timers.Timer), type(timer).__name__
        assert (timer.outrun, timer.dropped) == (False, 0)
    assert not isinstance(types.SimpleNamespace(name="x", dropped=0, take=lambda k: []), timers.Timer)  # no outrun


class FakeGpu:
    """A device that cannot run here (no CUDA): one stream whose work runs in order, on a virtual clock
    that the host's calls and waits move. A call costs the host `host_s` and the device `device_s`."""

    def __init__(self, host_s: float, device_s: float):
        self.host_s, self.device_s = host_s, device_s
        self.now = 0.0  # the host's clock
        self.free = 0.0  # when the device has done all that is queued
        gpu = self

        class Event:
            def record(self):
                self.at = gpu.free

            def query(self):
                return gpu.now >= self.at

            def synchronize(self):
                gpu.now = max(gpu.now, self.at)

        self.Event = Event

    def call(self):
        self.now += self.host_s
        self.free = max(self.free, self.now) + self.device_s

    def synchronize(self):
        self.now = max(self.now, self.free)


def fake_caller_timer(monkeypatch, host_s, device_s):
    import torch

    gpu = FakeGpu(host_s, device_s)
    monkeypatch.setattr(torch.cuda, "Event", gpu.Event)
    monkeypatch.setattr(torch.cuda, "synchronize", gpu.synchronize)
    monkeypatch.setattr(timers, "time", types.SimpleNamespace(perf_counter_ns=lambda: int(round(gpu.now * 1e9))))
    return gpu, timers.CallerTimer(gpu.call, per_call_s=max(host_s, device_s), sample_s=0.004)


def test_the_callers_samples_of_a_device_bound_call_are_its_device_time_with_no_fill_or_drain(monkeypatch):
    # 1 ms on the device, 10 µs to enqueue: a sample synchronised before and after read (0.01 + 4 x 1) / 4
    # ms a call, 0.25% slow; with the next sample queued before each wait, every sample reads 1 ms.
    gpu, timer = fake_caller_timer(monkeypatch, host_s=10e-6, device_s=1e-3)
    assert timer.take(5) == [1.0] * 5
    gpu.now += 0.5e-3  # the sampling loop's own work between batches, while the device still runs
    assert timer.take(3) == [1.0] * 3


def test_the_callers_samples_of_a_host_bound_call_are_the_hosts_time_and_not_its_pauses(monkeypatch):
    gpu, timer = fake_caller_timer(monkeypatch, host_s=50e-6, device_s=5e-6)
    first = timer.take(4)
    gpu.now += 2e-3  # the host away between batches: the device idles, and that is not the calls' time
    after = timer.take(4)
    assert [round(x, 6) for x in first + after] == [0.05] * 8
