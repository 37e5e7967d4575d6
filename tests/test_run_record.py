"""The run record's JSON: a lossless round trip, sorted keys, 6 significant digits, and strict loading."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from perfguard import BaselineError, CaseResult, DeviceInfo, RunRecord
from perfguard.model import (
    SAMPLE_DIGITS,
    SCHEMA_VERSION,
    TimeSummary,
    Timing,
    Memory,
    Metrics,
    Telemetry,
    dumps,
    loads_record,
    round_sig,
    thin_samples,
)

SOURCE = "reports/run-42.json"

H200 = DeviceInfo(
    kind="cuda",
    name="NVIDIA H200",
    slug="nvidia-h200",
    uuid="GPU-0e2b7a9c-0000-4000-8000-000000000000",
    index=0,
    driver="580.159.04",
    cuda="13.0",
    torch="2.11.0+cu130",
    triton="3.6.0",
    python="3.12.3",
    compute_capability="9.0",
    memory_bytes=150_754_820_096,
    bus_width_bits=6016,
    max_memory_clock_mhz=3201,
    max_sm_clock_mhz=1980,
    peak_bandwidth_gbps=4814.42,
    sm_count=132,
    l2_bytes=62_914_560,
    cpu_count=16,
    ecc_enabled=True,
)

MEASURED = CaseResult(
    id="vector_add[n=1048576-dtype=float16]",
    name="vector_add",
    status="ok",
    nodeid="suites/test_elementwise.py::vector_add[n=1048576-dtype=float16]",
    params={"n": 1048576, "dtype": "float16", "scale": 0.5, "causal": False},
    device="nvidia-h200",
    device_uuid=H200.uuid,
    timer="cuda-events",
    cache="cold",
    mode="eager",
    bytes=6291460.0,  # figures in a record carry 6 significant digits
    flops=1048580.0,
    threshold=3.0,
    timings={"gpu_time": Timing(TimeSummary(
        median_ms=0.00512, mean_ms=0.00519, min_ms=0.00498, max_ms=0.0081, p10_ms=0.00501, p90_ms=0.0055,
        iqr_ms=0.00021, ci_low_ms=0.0051, ci_high_ms=0.00514, n=4096, stop_reason="converged",
    ), (0.00512, 0.00498, 0.0081))},
    metrics=Metrics(
        gbps=1228.8, bandwidth_util=0.255233, tflops=0.2048, arithmetic_intensity=0.166667,
        caller_ms=0.021, launch_overhead_ms=0.01588, launch_overhead_share=0.756190,
    ),
    memory=Memory(
        peak_allocated_bytes=2097152, peak_reserved_bytes=20971520, setup_allocated_bytes=4194304,
        nvml_used_delta_bytes=0, fragmentation=0.9, alloc_retries=0,
    ),
    telemetry=Telemetry(
        sm_clock_mhz_before=345, sm_clock_mhz_after=1980, sm_clock_mhz_mean=1975.5, temperature_c_before=31,
        temperature_c_after=38, power_w_before=88.1, power_w_after=412.7, throttle_reasons=("sw_power_cap",),
        throttled=True,
    ),
    setup_s=0.0123,
    wall_s=0.5,
)

ERRORED = CaseResult(
    id="oom", name="oom", status="error", device="nvidia-h200",
    error="oom: ran out of GPU memory during setup (CUDA out of memory)",
)

RECORD = RunRecord(
    created_at="2026-11-29T12:00:00+00:00",
    perfguard_version="0.1.0",
    devices=(H200,),
    results=(ERRORED, MEASURED),
    commit="23269a2",
    options={"budget_s": 0.5},
)


def record_json() -> dict:
    return json.loads(dumps(RECORD))


def load(data: dict | str) -> RunRecord:
    return loads_record(data if isinstance(data, str) else json.dumps(data), SOURCE)


# --- writing and reading back ---------------------------------------------------------------------


def test_a_record_with_nested_results_survives_a_round_trip():
    back = loads_record(dumps(RECORD), SOURCE)
    assert back == RECORD
    assert back.results[1].telemetry.throttle_reasons == ("sw_power_cap",)  # tuples come back as tuples
    assert isinstance(back.results[1].samples_ms, tuple)
    assert back.schema_version == SCHEMA_VERSION


def test_writing_is_deterministic_with_sorted_keys_one_a_line():
    text = dumps(RECORD)
    assert text == dumps(loads_record(text, SOURCE))
    assert text.endswith("}\n")

    def check_sorted(pairs):
        keys = [k for k, _ in pairs]
        assert keys == sorted(keys)
        return dict(pairs)

    json.loads(text, object_pairs_hook=check_sorted)
    assert '\n"created_at":"2026-11-29T12:00:00+00:00",\n' in text  # a member of the top object a line
    lines = text.split('"results":[\n')[1].split("\n]")[0].splitlines()
    assert [json.loads(line.rstrip(","))["id"] for line in lines] == [r.id for r in RECORD.results]  # a result a line


def test_figures_are_rounded_to_six_significant_digits_and_integers_are_kept_exactly():
    result = dataclasses.replace(
        MEASURED,
        bytes=1 / 3,
        flops=123456789.123,
        timings={"gpu_time": Timing(MEASURED.judged_time, (2 / 3 * 1e-5, 1.23456789, -9.87654321))},
        memory=dataclasses.replace(MEASURED.memory, peak_allocated_bytes=123456789123),
        params={"scale": 0.1 + 0.2},
    )
    data = json.loads(dumps(result))
    assert data["bytes"] == 0.333333
    assert data["flops"] == 123457000.0
    assert data["timings"]["gpu_time"]["samples_ms"] == [6.667e-06, 1.235, -9.877]  # raw samples: SAMPLE_DIGITS
    assert data["memory"]["peak_allocated_bytes"] == 123456789123
    assert data["params"] == {"scale": 0.3}
    assert data["telemetry"]["throttled"] is True


def test_round_sig_keeps_zero_and_six_digits_of_anything_else():
    assert round_sig(0.0) == 0.0
    assert round_sig(4814.4256) == 4814.43
    assert round_sig(1.0000004) == 1.0
    assert round_sig(-0.000123456789) == -0.000123457
    assert round_sig(6.02214076e23) == 6.02214e23


def test_a_record_holding_nan_cannot_be_written():
    bad = dataclasses.replace(MEASURED, bytes=float("nan"))
    with pytest.raises(ValueError):
        dumps(bad)


def test_thin_samples_keeps_at_most_the_limit_evenly_in_time_order():
    assert thin_samples([3.0, 1.0, 2.0], limit=5) == (3.0, 1.0, 2.0)
    thinned = thin_samples([float(i) for i in range(2500)], limit=1000)
    assert len(thinned) == 1000
    assert thinned[0] == 0.0 and thinned[-1] >= 2497.0
    assert list(thinned) == sorted(set(thinned))  # order kept, nothing repeated
    gaps = {b - a for a, b in zip(thinned, thinned[1:])}
    assert gaps <= {2.0, 3.0}  # evenly spread


# --- bad files: one BaselineError naming the file ------------------------------------------------


def drop(path: list, data: dict) -> dict:
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return data


def put(path: list, value, data: dict) -> dict:
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


LATENCY = ["results", 1, "timings", "gpu_time", "summary"]

BAD_FILES = {
    "truncated": (lambda: dumps(RECORD)[: len(dumps(RECORD)) // 2], r"not valid JSON .*corrupt or truncated"),
    "empty": (lambda: "", r"not valid JSON"),
    "not json": (lambda: "<html>502 Bad Gateway</html>", r"not valid JSON"),
    "a list at the top": (lambda: "[]", r"expected a JSON object at the top; pass a run record"),
    "schema from the future": (lambda: put(["schema_version"], SCHEMA_VERSION + 1, record_json()),
                               rf"schema_version {SCHEMA_VERSION + 1}, but this perfguard reads schema {SCHEMA_VERSION};"),
    "no schema": (lambda: drop(["schema_version"], record_json()), r"not a perfguard file of this kind \(it has no schema_version\)"),
    "unknown top field": (lambda: put(["branch"], "main", record_json()), r": Object contains unknown field `branch`; was the file edited by hand"),
    "unknown nested field": (
        lambda: put([*LATENCY, "median"], 1.0, record_json()),
        r"results\[1\]: timings\[\.\.\.\]\.summary: Object contains unknown field `median`",
    ),
    "missing required field": (lambda: drop(["created_at"], record_json()), r": Object missing required field `created_at`"),
    "missing nested field": (lambda: drop([*LATENCY, "n"], record_json()), r"results\[1\]: timings\[\.\.\.\]\.summary: Object missing required field `n`"),
    "text for a number": (lambda: put([*LATENCY, "median_ms"], "fast", record_json()), r"summary\.median_ms: Expected `float`, got `str`"),
    "float for an int": (lambda: put([*LATENCY, "n"], 10.5, record_json()), r"summary\.n: Expected `int`, got `float`"),
    "bool for an int": (lambda: put([*LATENCY, "n"], True, record_json()), r"summary\.n: Expected `int`, got `bool`"),
    "text in samples": (lambda: put(["results", 1, "timings", "gpu_time", "samples_ms", 1], "x", record_json()), r"samples_ms\[1\]: Expected `float`, got `str`"),
    "an unknown kind of time": (lambda: put(["results", 1, "timings", "wall_time"], {}, record_json()),
                                r"results\[1\]: a key of timings: Invalid enum value 'wall_time'"),
    "object for a list": (lambda: put(["devices"], {}, record_json()), r"devices: Expected `array`, got `object`"),
    "list for an object": (lambda: put(["results", 1, "params"], [], record_json()), r"results\[1\]: params: Expected `object`, got `array`"),
    "number for a result": (lambda: put(["results", 0], 3, record_json()), r"results\[0\]: Expected `object`, got `int`"),
    "null id": (lambda: put(["results", 0, "id"], None, record_json()), r"results\[0\]: id: Expected `str`, got `null`"),
    "nan median": (lambda: dumps(RECORD).replace('"median_ms":0.00512', '"median_ms":NaN'), r"invalid character, line \d+: 'NaN"),
    "infinite sample": (lambda: dumps(RECORD).replace("0.0081]", "Infinity]", 1), r"invalid character, line \d+: 'Infinity"),
    "nan in params": (lambda: dumps(RECORD).replace('"scale":0.5', '"scale":NaN'), r"invalid character, line \d+: 'NaN"),
}


@pytest.mark.parametrize("case", BAD_FILES, ids=list(BAD_FILES))
def test_a_bad_record_is_a_baseline_error_naming_the_file(case):
    make, expected = BAD_FILES[case]
    text = make()
    if case.startswith(("nan", "infinite")):
        assert text != dumps(RECORD)  # the edit really happened
    with pytest.raises(BaselineError, match=expected) as info:
        load(text)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}: ")
    assert "\n" not in message


def test_each_pass_of_a_cpu_measurement_is_timed_in_the_record_and_no_baseline_keeps_them():
    from perfguard import perf_case
    from perfguard.measure import runner
    from perfguard.measure.device import detect
    from perfguard.measure.timers import SamplingRule
    from perfguard.model import kept

    import torch

    @perf_case
    def doubled(device):
        x = torch.ones(64)
        return lambda: x * 2

    (instance,) = doubled.instances("cpu")
    result = runner.measure(instance, detect("cpu"), SamplingRule(budget_s=0.05))
    assert result.status == "ok", result.error
    # A CPU has no caller's pass nor memory pass: the host clock's samples are the caller's time
    assert {"first_call", "warm_up", "samples", "counters"} <= set(result.passes_s) <= {
        "first_call", "warm_up", "samples", "counters", "compile_warm", "caller_samples", "memory", "memory_breakdown"}
    assert all(s >= 0 for s in result.passes_s.values())
    # wall_s is the first call to the memory pass; the counting pass comes after it
    assert sum(s for p, s in result.passes_s.items() if p != "counters") <= result.wall_s
    record = dataclasses.replace(RECORD, devices=(detect("cpu"),), results=(result,))
    assert loads_record(dumps(record), "r.json").results[0].passes_s == pytest.approx(result.passes_s, rel=10 ** (1 - SAMPLE_DIGITS))  # records.SHOWN_ONLY
    assert kept(result).passes_s == {}
