"""Verdicts from synthetic samples: A/A passes, real slowdowns fail, noise is called unstable, memory is exact."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from perfguard.analysis.stats import summarize
from perfguard.analysis.verdict import (
    DEFAULT_THRESHOLD_PCT,
    compare_case,
    compare_records,
    compare_to_baseline,
    counts,
    env_differences,
    ordered,
)
from perfguard.errors import BaselineError
from perfguard.model import (
    BaselineEntry,
    BaselineFile,
    CaseResult,
    DeviceInfo,
    Memory,
    RunRecord,
    Telemetry,
    dumps,
    loads_record,
)

BASELINE_FILE = "baselines/nvidia-h200.json"
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", driver="580.159.04", cuda="12.8",
                  torch="2.11.0", triton="3.6.0")


def result(samples, case_id="vector_add[n=1048576]", **fields) -> CaseResult:
    samples = tuple(float(x) for x in samples)
    return CaseResult(id=case_id, name=case_id.split("[")[0], status="ok", device="nvidia-h200", timer="cuda-events",
                      latency=summarize(samples, "converged"), samples_ms=samples, **fields)


def timings(rng, n=200, median_ms=1.0, sigma=0.03):
    """Lognormal per-call times: right-skewed like real GPU timings."""
    return rng.lognormal(np.log(median_ms), sigma, n)


def latency(verdicts):
    (v,) = [v for v in verdicts if v.metric == "latency"]
    return v


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def test_identical_samples_are_the_same(rng):
    samples = timings(rng)
    v = latency(compare_case(result(samples), result(samples), baseline_file=BASELINE_FILE))
    assert v.status == "same"
    assert v.change_pct == 0.0
    assert v.p_value == pytest.approx(1.0)


def test_a_a_from_the_same_distribution_is_the_same(rng):
    v = latency(compare_case(result(timings(rng)), result(timings(rng))))
    assert v.status == "same", v.message


def test_injected_ten_percent_slowdown_is_a_regression_with_an_actionable_message(rng):
    base, head = result(timings(rng)), result(timings(rng) * 1.10)
    v = latency(compare_case(head, base, baseline_file=BASELINE_FILE))
    assert v.status == "regressed"
    assert 5 < v.change_pct < 15
    assert v.p_value < 0.01 and v.confidence == pytest.approx(1 - v.p_value)
    assert v.threshold_pct == DEFAULT_THRESHOLD_PCT
    for part in ("latency regressed", "ms →", f"{v.change_pct:+.1f}%", "confidence", BASELINE_FILE, "threshold 5%"):
        assert part in v.message
    assert "\n" not in v.message


def test_ten_percent_speedup_is_an_improvement_suggesting_an_update(rng):
    v = latency(compare_case(result(timings(rng) * 0.9), result(timings(rng))))
    assert v.status == "improved"
    assert "--perfguard-update" in v.message


def test_significant_change_below_the_threshold_is_the_same(rng):
    v = latency(compare_case(result(timings(rng, n=1000, sigma=0.01) * 1.02), result(timings(rng, n=1000, sigma=0.01))))
    assert v.p_value < 0.01  # real, but smaller than the 5% that matters
    assert v.status == "same"


def test_per_case_threshold_overrides_the_run_wide_one(rng):
    base = result(timings(rng, sigma=0.01))
    head = result(timings(rng, sigma=0.01) * 1.03, threshold=2.0)
    v = latency(compare_case(head, base, threshold_pct=5.0))
    assert v.status == "regressed" and v.threshold_pct == 2.0
    assert latency(compare_case(dataclasses.replace(head, threshold=None), base, threshold_pct=5.0)).status == "same"


def test_heavy_noise_is_unstable_rather_than_a_pass(rng):
    v = latency(compare_case(result(timings(rng, n=20, sigma=0.5)), result(timings(rng, n=20, sigma=0.5))))
    assert v.status == "unstable"
    assert "too noisy" in v.message


def test_throttled_measurement_is_unstable_even_when_slower(rng):
    hot = Telemetry(throttled=True, throttle_reasons=("hw_thermal_slowdown",))
    v = latency(compare_case(result(timings(rng) * 1.2, telemetry=hot), result(timings(rng))))
    assert v.status == "unstable"
    assert "throttled" in v.message and "hw_thermal_slowdown" in v.message


def test_power_cap_in_one_run_only_makes_a_large_change_unstable_not_a_regression(rng):
    capped = Telemetry(throttle_reasons=("sw_power_cap",), power_capped=True)
    v = latency(compare_case(result(timings(rng) * 1.08, telemetry=capped), result(timings(rng), telemetry=Telemetry())))
    assert v.status == "unstable"
    assert "power cap engaged only in this run" in v.message


def test_power_cap_in_both_runs_is_judged_as_usual(rng):
    capped = Telemetry(throttle_reasons=("sw_power_cap",), power_capped=True)
    slower = compare_case(result(timings(rng) * 1.10, telemetry=capped), result(timings(rng), telemetry=capped))
    assert latency(slower).status == "regressed"
    same = compare_case(result(timings(rng), telemetry=capped), result(timings(rng), telemetry=capped))
    assert latency(same).status == "same"


def test_a_change_the_capped_clock_accounts_for_is_unstable_and_one_it_does_not_is_judged(rng):
    # The H200 A/A figures: +5.3% at a mean clock 5% lower (1903 -> 1807 MHz), both runs capped.
    def capped(mhz):
        return Telemetry(throttle_reasons=("sw_power_cap",), power_capped=True, sm_clock_mhz_mean=mhz)

    explained = latency(compare_case(result(timings(rng) * 1.053, telemetry=capped(1807.0)),
                                     result(timings(rng), telemetry=capped(1903.0))))
    assert explained.status == "unstable"
    assert "held the SM clock at 1807 MHz against 1903 MHz in the baseline" in explained.message
    # The same clocks cannot account for a 15% slowdown: that is the code.
    real = latency(compare_case(result(timings(rng) * 1.15, telemetry=capped(1807.0)),
                                result(timings(rng), telemetry=capped(1903.0))))
    assert real.status == "regressed"


def test_a_stale_power_cap_bit_at_full_clock_does_not_make_a_regression_unstable(rng):
    stale = Telemetry(throttle_reasons=("sw_power_cap",), power_capped=False, sm_clock_mhz_mean=1980.0)
    v = latency(compare_case(result(timings(rng) * 1.10, telemetry=stale), result(timings(rng), telemetry=Telemetry())))
    assert v.status == "regressed"


def test_too_few_samples_are_unstable(rng):
    v = latency(compare_case(result(timings(rng, n=3) * 1.5), result(timings(rng, n=3))))
    assert v.status == "unstable"


def test_peak_memory_growth_beyond_its_threshold_is_a_regression(rng):
    samples = timings(rng)
    base = result(samples, memory=Memory(peak_allocated_bytes=100 * 2**20))
    grown = compare_case(result(samples, memory=Memory(peak_allocated_bytes=110 * 2**20)), base)
    slightly = compare_case(result(samples, memory=Memory(peak_allocated_bytes=101 * 2**20)), base)
    shrunk = compare_case(result(samples, memory=Memory(peak_allocated_bytes=80 * 2**20)), base)
    memory = lambda vs: [v for v in vs if v.metric == "peak_memory"][0]  # noqa: E731
    assert memory(grown).status == "regressed" and memory(grown).change_pct == pytest.approx(10.0)
    assert "peak_memory regressed" in memory(grown).message
    assert memory(slightly).status == "same"
    assert memory(shrunk).status == "improved"


def test_tiny_memory_changes_below_the_absolute_floor_do_not_flip(rng):
    samples = timings(rng)
    vs = compare_case(result(samples, memory=Memory(peak_allocated_bytes=8192)),
                      result(samples, memory=Memory(peak_allocated_bytes=4096)))
    assert [v.status for v in vs if v.metric == "peak_memory"] == ["same"]


def test_memory_is_skipped_when_not_measured(rng):
    samples = timings(rng)
    assert [v.metric for v in compare_case(result(samples), result(samples))] == ["latency"]


def test_new_and_missing_cases(rng):
    entry = BaselineEntry(recorded_at="2026-11-29T00:00:00+00:00", commit="abc", fingerprint=H200.fingerprint(),
                          result=result(timings(rng), case_id="old"))
    baseline = BaselineFile(device=H200, cases={"old": entry})
    verdicts = compare_to_baseline([result(timings(rng), case_id="fresh")], baseline, baseline_file=BASELINE_FILE)
    by_case = {v.case_id: v for v in verdicts}
    assert by_case["fresh"].status == "new" and "--perfguard-update" in by_case["fresh"].message
    assert by_case["old"].status == "missing" and BASELINE_FILE in by_case["old"].message
    errored = CaseResult(id="old", name="old", status="error", error="setup raised")
    assert latency(compare_case(errored, entry)).status == "missing"


def test_environment_mismatch_is_listed_but_does_not_decide(rng):
    samples = timings(rng)
    entry = BaselineEntry(recorded_at="t", commit=None, fingerprint=H200.fingerprint(), result=result(samples))
    now = dataclasses.replace(H200, torch="2.12.0", triton=None).fingerprint()
    v = latency(compare_case(result(samples), entry, current_fingerprint=now))
    assert v.status == "same"
    assert v.env_mismatch == ("torch 2.11.0 → 2.12.0", "triton 3.6.0 → n/a")
    assert "torch 2.11.0 → 2.12.0" in v.message
    assert env_differences(H200.fingerprint(), H200.fingerprint()) == ()


def test_verdicts_are_deterministic(rng):
    base, head = result(timings(rng, sigma=0.2)), result(timings(rng, sigma=0.2) * 1.04)
    assert compare_case(head, base) == compare_case(head, base)


def test_false_alarms_stay_within_one_percent_over_200_a_a_comparisons():
    rng = np.random.default_rng(2026)
    statuses = [latency(compare_case(result(timings(rng, n=100, sigma=0.1)), result(timings(rng, n=100, sigma=0.1)))).status
                for _ in range(200)]
    assert statuses.count("regressed") <= 2
    assert statuses.count("same") > 120  # the rest are unstable: 100 samples at 10% noise are borderline


def test_compare_records_matches_cases_and_lists_the_device_change(rng):
    other = dataclasses.replace(H200, driver="590.1")
    base = RunRecord(created_at="a", perfguard_version="0.1.0", devices=(H200,),
                     results=(result(timings(rng), "a"), result(timings(rng), "b"), result(timings(rng), "gone")))
    head = RunRecord(created_at="b", perfguard_version="0.1.0", devices=(other,),
                     results=(result(timings(rng), "a"), result(timings(rng) * 1.2, "b"), result(timings(rng), "c")))
    verdicts = compare_records(base, head, baseline_file="base.json")
    assert {v.case_id: v.status for v in verdicts} == {"a": "same", "b": "regressed", "c": "new", "gone": "missing"}
    assert "driver 580.159.04 → 590.1" in {v.case_id: v for v in verdicts}["a"].env_mismatch
    assert ordered(verdicts)[0].case_id == "b"
    assert counts(verdicts) == {"regressed": 1, "unstable": 0, "improved": 0, "missing": 1, "new": 1, "same": 1}


def test_compare_records_refuses_a_case_id_twice(rng):
    twice = RunRecord(created_at="a", perfguard_version="0.1.0",
                      results=(result(timings(rng), "a"), dataclasses.replace(result(timings(rng), "a"), device="cpu-x")))
    with pytest.raises(BaselineError, match="more than once"):
        compare_records(twice, twice)


def test_verdicts_round_trip_through_the_run_record(rng):
    verdicts = tuple(compare_case(result(timings(rng) * 1.2), result(timings(rng)), baseline_file=BASELINE_FILE))
    record = RunRecord(created_at="now", perfguard_version="0.1.0", verdicts=verdicts)
    loaded = loads_record(dumps(record), "perfguard.json")
    assert [v.status for v in loaded.verdicts] == ["regressed"]
    assert [v.message for v in loaded.verdicts] == [v.message for v in verdicts]
    assert dumps(loaded) == dumps(record)
    before_verdicts = json.loads(dumps(record))
    del before_verdicts["verdicts"]  # a record written before verdicts existed still loads
    assert loads_record(json.dumps(before_verdicts), "old.json").verdicts == ()
