"""The regression gate end to end: real pytest runs, real baseline files, verdicts no load can flip.

One suite is recorded twice with `--perfguard-update` (two runs per case); each scenario then runs
pytest in a folder of its own holding a copy of that baseline (or a spoilt one), so that the
scenarios are independent and can run two at a time. Cases sleep, for a time read from `sleeps.json`
beside the suite, on the run's own clock (fake_clock.py, each folder's conftest.py): a 20 ms sleep
measures 20.001 ms, every call of every run, loaded machine or not, so the one suite is the baseline
in one run and an injected slowdown (20 ms -> 80 ms, four times) in another, and the unchanged cases
read `same` exactly. Everything else is real: pytest, the plugin, the sampling loop, the re-measurements,
the baseline files and the reports. What the gate decides between narrow margins on real noise is
tested on constructed runs in test_verdict.py; real sleeps on the real clock, in test_plugin.py.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import re
import textwrap
from pathlib import Path

import pytest

from perfguard import store
from perfguard.model import BaselineFile, DeviceInfo, RunRecord, Verdict, dumps, kept, loads_baseline, loads_record, to_jsonable
from perfguard.report import words

BUDGET = "0.2"
MEASURE = ("-v", "--perfguard", "--perfguard-budget", BUDGET)
SLOW_S = 0.08  # the suite's cases sleep 20 ms unless sleeps.json says otherwise

GATE_SUITE = """
    import json
    import pathlib
    import time

    from perfguard import perf_case

    SLEEPS = pathlib.Path(__file__).with_name("sleeps.json")
    SECONDS = json.loads(SLEEPS.read_text()) if SLEEPS.exists() else {}

    def nap(case_id):
        seconds = SECONDS.get(case_id, 0.02)
        return lambda: time.sleep(seconds)

    @perf_case
    def steady(device):
        return nap("steady")

    @perf_case
    def slowed(device):
        return nap("slowed")

    @perf_case(threshold=2000)
    def lenient(device):
        return nap("lenient")

    @perf_case(threshold=5)
    def strict(device):
        return nap("strict")

    def test_dozing(perf):
        perf(nap("test_dozing"))
"""

RETIRED_SUITE = """
    import time

    from perfguard import perf_case

    @perf_case
    def retired(device):
        return lambda: time.sleep(0.02)
"""

FRESH_SUITE = RETIRED_SUITE.replace("retired", "fresh")

# Two cases, for the runs where each measured case must fail on its own.
TWO_NAPS = """
    import time

    from perfguard import perf_case

    @perf_case(params={"ms": [1, 2]})
    def nap(ms, device):
        return lambda: time.sleep(ms / 1000)
"""
NAPS = ("nap[ms=1]", "nap[ms=2]")

RECORDED = ("steady", "slowed", "lenient", "strict", "test_dozing", "retired")
SLOWED = ("slowed", "lenient", "strict", "test_dozing")  # steady (and retired) keep their 20 ms
SLOWDOWN = json.dumps({case: SLOW_S for case in SLOWED})
BLIND_SLOWDOWN = json.dumps({"slowed": 0.026})  # 20 ms -> 26 ms, +30%

# Baseline files that cannot be used, by how they are spoilt (see `spoil`): whether the run asks for
# --perfguard-update (which then refuses to write it), and what its one line must say (what is wrong, and what to do).
RESTORE = "restore it from version control"
BAD_FILES = {
    "corrupt": (True, (": not valid JSON (invalid character, line 1: '<<<<<<< HEAD\\n{\\n\"sess'); the file is corrupt or "
                       "truncated, " + RESTORE,)),
    "other_device": (False, (": recorded on NVIDIA H200 (nvidia-h200) but named cpu-",
                            "; rename it to nvidia-h200.json or " + RESTORE)),
}


@dataclasses.dataclass
class Run:
    """One inner pytest run in a folder of its own, and its baseline file's bytes just before it."""

    path: Path
    args: tuple[str, ...]
    baseline: Path | None = None  # the file this run compares with (it need not exist)
    report: str = "reports"
    before: bytes | None = None
    result: pytest.RunResult | None = None

    def record(self) -> RunRecord:
        path = self.path / self.report / "perfguard.json"
        return loads_record(path.read_text(), str(path))

    def gpu_time(self) -> dict[str, Verdict]:
        return {v.case_id: v for v in self.record().verdicts if v.metric == "gpu_time"}

    def stored(self) -> BaselineFile:
        baseline = store.load_file(self.baseline)
        assert baseline is not None, f"{self.baseline} is gone"
        return baseline

    @property
    def label(self) -> str:
        """How verdict messages name the baseline file: relative to the run's root folder."""
        return f"baselines/{self.baseline.name}"


def prepare(path: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(textwrap.dedent(content) if name.endswith(".py") else content)
    return path


def run_in_order(run_pytest, *runs: Run) -> None:
    for run in runs:
        run.before = run.baseline.read_bytes() if run.baseline and run.baseline.exists() else None
        run.result = run_pytest(run.path, *run.args)


SECTION = re.compile(r"^(_{3,}|={3,}) (.+) (_{3,}|={3,})$")


def failure_text(result: pytest.RunResult, test_name: str) -> str:
    """The body of one test's section under FAILURES."""
    lines = result.outlines
    header = next(i for i, line in enumerate(lines) if (m := SECTION.match(line)) and m.group(2) == test_name)
    end = next((i for i, line in enumerate(lines[header + 1 :], header + 1) if SECTION.match(line)), len(lines))
    return "\n".join(lines[header + 1 : end]).strip()


def verdict_line(result: pytest.RunResult) -> str:
    """The count of verdicts by status, "verdicts: 0 regressed, ...", without the "N verdicts (one per
    metric) for M cases" before it."""
    (line,) = [line for line in result.outlines if " (one per metric) for " in line]
    return "verdicts: " + line.split(": ", 1)[1]


def spoil(kind: str, text: str) -> str:
    """A copy of a valid baseline file spoilt as `kind` says."""
    if kind == "corrupt":  # a merge conflict committed by mistake
        return f"<<<<<<< HEAD\n{text}=======\n{text}>>>>>>> topic\n"
    if kind == "other_device":  # a valid H200 baseline, saved under this CPU's name
        baseline = loads_baseline(text, "baseline")
        h200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", driver="580.159.04", torch="2.11.0")
        cases = {k: dataclasses.replace(e, result=dataclasses.replace(e.result, device=h200.slug)) for k, e in baseline.cases.items()}
        return dumps(dataclasses.replace(baseline, device=h200, cases=cases))
    raise AssertionError(kind)


def with_torch(text: str, case_id: str, torch_version: str) -> str:
    """The baseline with one entry recorded, so it says, under another torch."""
    baseline = loads_baseline(text, "baseline")
    entry = baseline.cases[case_id]
    edited = dataclasses.replace(entry, fingerprint={**entry.fingerprint, "torch": torch_version})
    return dumps(dataclasses.replace(baseline, cases={**baseline.cases, case_id: edited}))


@pytest.fixture(scope="module")
def gate(tmp_path_factory, run_pytest, fake_clock) -> dict[str, Run]:
    """The suite recorded once, then every scenario below run against a copy of its baseline."""
    root = tmp_path_factory.mktemp("gate")
    suite = {"conftest.py": fake_clock, "test_gate.py": GATE_SUITE, "test_retired.py": RETIRED_SUITE}
    recorded = Run(prepare(root / "recorded", suite), (*MEASURE, "--perfguard-update"))
    again = dataclasses.replace(recorded, report="reports/again", args=(*recorded.args, "--perfguard-report=reports/again"))
    run_in_order(run_pytest, recorded)
    files = store.list_files(recorded.path / "baselines")
    assert len(files) == 1, "\n".join(recorded.result.outlines + recorded.result.errlines)
    one_run = {f"baselines/{files[0].name}": files[0].read_text()}  # each case's one run
    run_in_order(run_pytest, again)
    recorded.baseline = again.baseline = files[0]
    name, text = files[0].name, files[0].read_text()
    baseline = {f"baselines/{name}": text}

    def scenario(folder: str, files: dict[str, str | bytes], *args: str) -> Run:
        files = {"conftest.py": fake_clock, **files}
        return Run(prepare(root / folder, files), (*MEASURE, *args), root / folder / "baselines" / name)

    runs = {
        "recorded": recorded,
        "again": again,
        # No baseline yet, no --perfguard-update.
        "unrecorded": scenario("unrecorded", {"test_naps.py": TWO_NAPS}),
        # The same code again, but one case's file deleted, one added, and one entry recorded under another torch.
        "rerun": scenario(
            "rerun",
            {"test_gate.py": GATE_SUITE, "test_fresh.py": FRESH_SUITE, f"baselines/{name}": with_torch(text, "steady", "1.0.0")},
        ),
        "slowdown": scenario("slowdown", {**suite, **baseline, "sleeps.json": SLOWDOWN}),
        "lenient_ini": scenario(
            "lenient_ini", {**suite, **baseline, "sleeps.json": SLOWDOWN, "pytest.ini": "[pytest]\nperfguard-threshold = 2000\n"}
        ),
        "accepted": scenario("accepted", {**suite, **baseline, "sleeps.json": SLOWDOWN}, "--perfguard-update=force", "-k", "slowed"),
        "refused": scenario("refused", {**suite, **baseline, "sleeps.json": SLOWDOWN}, "--perfguard-update", "-k", "slowed or steady"),
        # A one-run baseline, a 30% slowdown: the gate cannot see a 1% change there, and says so.
        "blind": scenario("blind", {**suite, **one_run, "sleeps.json": BLIND_SLOWDOWN}),
        "blind_failing": scenario("blind_failing", {**suite, **one_run, "sleeps.json": BLIND_SLOWDOWN},
                                  "--perfguard-fail-inconclusive"),
        "blind_ini": scenario("blind_ini", {**suite, **one_run, "sleeps.json": BLIND_SLOWDOWN,
                                            "pytest.ini": "[pytest]\nperfguard_fail_inconclusive = true\n"}, "-k", "slowed"),
    }
    # "--opt=value": pytest picks the rootdir before it knows plugin options, and takes the value of a
    # spaced "--perfguard-report DIR" for a test path when DIR exists.
    runs["after_accepting"] = dataclasses.replace(
        runs["accepted"], args=(*MEASURE, "-k", "slowed", "--perfguard-report=reports/after"), report="reports/after"
    )
    for kind, (update, _) in BAD_FILES.items():
        files = {"test_naps.py": TWO_NAPS, f"baselines/{name}": spoil(kind, text)}
        runs[kind] = scenario(kind, files, *(("--perfguard-update",) if update else ()))

    # Two at a time: the runs' clocks are their own, so nothing they measure depends on the other.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = [pool.submit(run_in_order, run_pytest, runs["accepted"], runs["after_accepting"])]
        jobs += [pool.submit(run_in_order, run_pytest, run) for key, run in runs.items() if run.result is None and "accept" not in key]
        for job in jobs:
            job.result()
    return runs


def assert_clean(result: pytest.RunResult) -> None:
    out = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in out and "Traceback" not in out, out


# --- recording a baseline ---------------------------------------------------------------------------


def test_update_writes_a_valid_baseline_named_after_this_cpu(gate):
    run = gate["recorded"]
    run.result.assert_outcomes(passed=len(RECORDED))
    (device,) = run.record().devices
    assert run.baseline.name == f"{device.slug}.json" and device.slug.startswith("cpu-")
    run.result.stdout.fnmatch_lines([f"perfguard: wrote {run.baseline}"])
    assert {v.case_id: v.status for v in run.record().verdicts} == dict.fromkeys(RECORDED, "new")
    assert verdict_line(run.result) == f"verdicts: 0 regressed, 0 unstable, 0 inconclusive, 0 improved, 0 missing, {len(RECORDED)} new, 0 same"
    for name in ("perfguard.json", "perfguard.html", "perfguard.md"):
        run.result.stdout.fnmatch_lines([f"perfguard: wrote {run.path / 'reports' / name}"])


def test_each_update_adds_a_run_and_keeps_the_newest_runs_samples(gate):
    again = gate["again"]
    again.result.assert_outcomes(passed=len(RECORDED))
    baseline = again.stored()
    (device,) = again.record().devices
    assert sorted(baseline.cases) == sorted(RECORDED)
    measured = {r.id: r for r in again.record().results}
    first = {r.id: r for r in gate["recorded"].record().results}
    for case_id, entry in baseline.cases.items():
        assert [r.median_of("gpu_time") for r in entry.runs] == pytest.approx(
            [first[case_id].judged_time.median_ms, measured[case_id].judged_time.median_ms], rel=1e-5), case_id
        assert {r.host for r in entry.runs} == {device.host}, case_id
        assert entry.result.judged_time == kept(measured[case_id]).judged_time, case_id  # the record's, less its spread
        assert 10 <= len(entry.result.samples_ms) <= 200, case_id
        assert entry.fingerprint == device.fingerprint(), case_id
        assert entry.result.judged_time.median_ms == pytest.approx(20.001), case_id  # a 20 ms sleep on the run's clock
    assert dumps(baseline) == again.baseline.read_text()  # sorted and rounded: re-saving it is an empty diff


def test_the_second_recording_of_unchanged_code_is_inconclusive_where_one_run_cannot_see_the_threshold(gate):
    # One run of a host-clock case: its tolerance (72%) is far wider than 1%, so "same" would claim a
    # change of 1% was looked for and not found. lenient's own threshold (2000%) is wider still.
    verdicts = gate["again"].gpu_time()
    statuses = {c: v.status for c, v in verdicts.items()}
    assert statuses == {**dict.fromkeys(RECORDED, "inconclusive"), "lenient": "same"}, [words.line(v) for v in verdicts.values()]
    for v in verdicts.values():
        assert v.noise.runs == 1 and v.tolerance_pct >= v.threshold_pct and v.detectable_pct > v.tolerance_pct
        assert v.noise.judged_by == "own" and "judged by this host's 1 run" in words.line(v), words.line(v)


def test_without_update_no_baseline_file_is_created(gate):
    run = gate["unrecorded"]
    run.result.assert_outcomes(passed=2)
    assert not (run.path / "baselines").exists()
    assert {v.case_id: v.status for v in run.record().verdicts} == dict.fromkeys(NAPS, "new")
    for v in run.record().verdicts:
        assert f"not in {run.label} yet; record it with `pytest --perfguard --perfguard-update`" in words.line(v), words.line(v)


@pytest.mark.parametrize("scenario", ["rerun", "slowdown", "lenient_ini"])
def test_without_update_the_baseline_file_is_left_byte_for_byte(gate, scenario):
    run = gate[scenario]
    assert run.result.outlines, run.result.errlines
    assert run.baseline.read_bytes() == run.before
    assert sorted(p.name for p in run.baseline.parent.iterdir()) == [run.baseline.name]  # no lock, no temp file
    assert f"perfguard: wrote {run.baseline}" not in str(run.result.stdout)


# --- the same code again: A/A, a new case, a missing case, another torch ------------------------------


def test_the_same_code_measured_again_passes_with_every_case_the_same(gate):
    run = gate["rerun"]
    run.result.assert_outcomes(passed=6)
    assert run.result.ret == pytest.ExitCode.OK
    verdicts = run.gpu_time()
    ran = [c for c in RECORDED if c != "retired"]
    assert {c: verdicts[c].status for c in ran} == {**dict.fromkeys(ran, "inconclusive"), "lenient": "same"}, \
        [words.line(verdicts[c]) for c in ran]
    for case_id in ran:
        v = verdicts[case_id]
        assert v.baseline_file == run.label and v.noise.runs == 2
        assert "judged by this host's 2 runs" in words.line(v) and "confidence" not in words.line(v) and "p=" not in words.line(v)
        assert abs(v.change_pct) < v.tolerance_pct and "within ±" in words.line(v), words.line(v)
    assert verdict_line(run.result) == "verdicts: 0 regressed, 0 unstable, 4 inconclusive, 0 improved, 1 missing, 1 new, 1 same"
    assert_clean(run.result)


def test_a_case_not_in_the_baseline_passes_as_new(gate):
    run = gate["rerun"]
    run.result.stdout.fnmatch_lines(["test_fresh.py::fresh PASSED*"])
    fresh = run.gpu_time()["fresh"]
    assert (fresh.status, fresh.baseline, fresh.tolerance_pct) == ("new", None, None)
    assert fresh.current == {r.id: r for r in run.record().results}["fresh"].judged_time.median_ms
    assert "fresh" not in run.stored().cases  # and it is not recorded without --perfguard-update


def test_a_baseline_case_that_did_not_run_is_missing_and_fails_nothing(gate):
    run = gate["rerun"]
    retired = run.gpu_time()["retired"]
    assert retired.status == "missing" and retired.current is None
    runs = gate["again"].stored().cases["retired"].runs
    assert retired.baseline == pytest.approx(sum(r.median_of("gpu_time") for r in runs) / 2, rel=1e-5)  # the centre of its 2 runs
    assert "retired" not in {r.id for r in run.record().results}
    run.result.stdout.fnmatch_lines([f"retired: host_time missing: in {run.label} (* ms) but did not run"])


def test_another_torch_in_the_baseline_is_shown_on_the_case_and_does_not_fail_it(gate):
    run = gate["rerun"]
    (device,) = run.record().devices
    verdicts = run.gpu_time()
    steady = verdicts["steady"]
    assert steady.status == "inconclusive"
    assert steady.env_mismatch == (f"torch 1.0.0 → {device.torch}",)
    assert words.line(steady).endswith(f"; environment differs from the baseline: torch 1.0.0 → {device.torch}")
    for case_id in ("slowed", "lenient", "strict", "test_dozing"):
        assert verdicts[case_id].env_mismatch == () and "environment" not in words.line(verdicts[case_id])


# --- a slowdown ---------------------------------------------------------------------------------------

REGRESSED = re.compile(
    r"^(?P<case>\S+): host_time regressed: (?P<old>[\d.]+) ms → (?P<new>[\d.]+) ms \((?P<change>[+-][\d.]+)%\), "
    r"outside ±(?P<tolerance>[\d.]+)%: judged by this host's 2 runs, run-to-run spread ±[\d.]+%; smallest detectable change [\d.]+% "
    r"against (?P<file>\S+) \(threshold (?P<threshold>[\d.]+)%\); confirmed by 2 re-measurements \(.+\)\n"
    # every failure ends with the one command that accepts it, which works as printed (test_accept.py)
    r"perfguard: to accept these changes into the baseline: `perfguard baseline accept \S+ --case (?P=case)`$"
)


def test_a_slowdown_fails_its_cases_and_only_them_once_re_measurements_confirm_it(gate):
    run = gate["slowdown"]
    run.result.assert_outcomes(passed=3, failed=3)
    run.result.stdout.fnmatch_lines(
        ["FAILED test_gate.py::slowed*", "FAILED test_gate.py::strict*", "FAILED test_gate.py::test_dozing*"], consecutive=False
    )
    verdicts = run.gpu_time()
    statuses = {c: v.status for c, v in verdicts.items()}
    assert statuses["slowed"] == statuses["strict"] == statuses["test_dozing"] == "regressed"
    assert statuses["steady"] == statuses["retired"] == "inconclusive"
    assert statuses["lenient"] == "same"  # its own threshold=2000 is above the +300%
    assert verdict_line(run.result).startswith("verdicts: 3 regressed, ")
    for case_id in ("slowed", "strict", "test_dozing"):
        v = verdicts[case_id]
        assert v.time.confirmed is True and len(v.time.remeasured_ms) == 2 and min(v.time.remeasured_ms) > 2 * v.baseline, words.line(v)


def test_the_failure_names_the_metric_both_figures_the_change_the_tolerance_and_the_file(gate):
    run = gate["slowdown"]
    runs = gate["again"].stored().cases["slowed"].runs
    old = sum(r.median_of("gpu_time") for r in runs) / 2
    new = {r.id: r for r in run.record().results}["slowed"].judged_time.median_ms
    message = failure_text(run.result, "slowed")
    match = REGRESSED.match(message)
    assert match, message
    assert match["case"] == "slowed" and match["file"] == run.label and float(match["threshold"]) == 1
    assert float(match["old"]) == pytest.approx(old, rel=5e-4)
    assert float(match["new"]) == pytest.approx(new, rel=5e-4)
    assert float(match["change"]) == pytest.approx(100 * (new / old - 1), abs=0.051)
    assert float(match["change"]) == pytest.approx(100 * (80.001 / 20.001 - 1), abs=0.051)  # 20 ms -> 80 ms
    verdict = run.gpu_time()["slowed"]
    assert (verdict.baseline, verdict.current, verdict.baseline_file) == (pytest.approx(old, rel=1e-5), new, run.label)
    assert float(match["tolerance"]) == pytest.approx(verdict.tolerance_pct, abs=0.051)
    assert words.line(verdict) == message.splitlines()[0].removeprefix("slowed: ")
    # The failure above holds the line; the perfguard section says in one line what moved, not it again.
    # pytest's own short summary is cut off: it quotes the message whole only where $CI is set.
    out = run.result.stdout.str().partition("short test summary info")[0]
    assert out.count(message) == 1, out
    assert f"slowed: regressed: host_time {float(match['change']):+.1f}%" in out


def test_a_slowdown_in_a_test_using_the_perf_fixture_fails_that_test_with_the_same_line(gate):
    run = gate["slowdown"]
    message = failure_text(run.result, "test_dozing")
    assert REGRESSED.match(message) and message.startswith("test_dozing: host_time regressed: "), message
    assert "Traceback" not in message and "perfguard/plugin" not in message


def test_a_run_wide_threshold_above_the_slowdown_lets_it_pass_but_a_cases_own_threshold_wins(gate):
    run = gate["lenient_ini"]
    assert run.gpu_time()["strict"].status == "regressed", words.line(run.gpu_time()["strict"])
    run.result.assert_outcomes(passed=5, failed=1)
    assert run.record().options["threshold_pct"] == 2000
    verdicts = run.gpu_time()
    for case_id in ("slowed", "test_dozing", "lenient"):
        assert verdicts[case_id].status == "same", words.line(verdicts[case_id])
        assert verdicts[case_id].threshold_pct == 2000 and verdicts[case_id].change_pct > 150, case_id
    strict = verdicts["strict"]  # @perf_case(threshold=5) overrides the run-wide 2000
    assert (strict.status, strict.threshold_pct) == ("regressed", 5)
    assert REGRESSED.match(failure_text(run.result, "strict"))["threshold"] == "5"


# --- accepting a slowdown -----------------------------------------------------------------------------


def test_a_forced_update_accepts_a_slowdown_without_failing_and_starts_its_runs_afresh(gate):
    run = gate["accepted"]
    run.result.assert_outcomes(passed=1, deselected=len(RECORDED) - 1)
    assert run.result.ret == pytest.ExitCode.OK
    run.result.stdout.fnmatch_lines([f"perfguard: wrote {run.baseline}"])
    assert_clean(run.result)
    before = loads_baseline(run.before.decode(), "before")
    after = run.stored()
    assert sorted(after.cases) == sorted(RECORDED)
    measured = {r.id: r for r in run.record().results}["slowed"]
    slowed = after.cases["slowed"]
    assert slowed.result.judged_time == kept(measured).judged_time and slowed.recorded_at == run.record().created_at
    # Its old runs described the old code: the series restarts with this run alone.
    assert [r.median_of("gpu_time") for r in slowed.runs] == pytest.approx([measured.judged_time.median_ms], rel=1e-5)
    for case_id in set(RECORDED) - {"slowed"}:
        assert to_jsonable(after.cases[case_id]) == to_jsonable(before.cases[case_id]), case_id
    statuses = {c: v.status for c, v in run.gpu_time().items()}
    assert statuses == {"slowed": "regressed"}  # the cases -k left out are counted, not listed as missing
    run.result.stdout.fnmatch_lines([f"perfguard: {len(RECORDED) - 1} baseline case(s) not selected in this run*"])


def test_after_accepting_the_same_slow_code_passes(gate):
    run = gate["after_accepting"]
    run.result.assert_outcomes(passed=1, deselected=len(RECORDED) - 1)
    assert run.gpu_time()["slowed"].status == "inconclusive", words.line(run.gpu_time()["slowed"])  # one run: it cannot see 1%
    assert run.gpu_time()["slowed"].change_pct == pytest.approx(0.0, abs=0.01)
    assert run.baseline.read_bytes() == run.before


def test_an_update_refuses_a_run_outside_its_cases_tolerance_with_one_line_and_adds_the_others(gate):
    run = gate["refused"]
    run.result.assert_outcomes(passed=2, deselected=len(RECORDED) - 2)
    assert run.result.ret == pytest.ExitCode.OK
    before, after = loads_baseline(run.before.decode(), "before"), run.stored()
    assert to_jsonable(after.cases["slowed"]) == to_jsonable(before.cases["slowed"])  # not mixed in, not restarted
    assert len(after.cases["steady"].runs) == 3  # steady's unchanged run joins its series
    lines = [line for line in run.result.outlines if line.startswith("perfguard: slowed: ")]
    assert len(lines) == 1, run.result.outlines
    assert re.fullmatch(
        r"perfguard: slowed: the run of \S+ from this run not added: host_time \+300\.0% from the centre of this host's 2 runs, "
        r"outside its tolerance of ±[\d.]+%, so the code changed or the run is off; if the change is intended, accept it: "
        r"`perfguard baseline accept reports/perfguard.json --case slowed`", lines[0]), lines[0]
    assert not [line for line in run.result.outlines if line.startswith("perfguard: steady: ")]


def test_a_forced_update_says_which_series_started_again(gate):
    run = gate["accepted"]
    (line,) = [line for line in run.result.outlines if line.startswith("perfguard: slowed: ")]
    assert re.fullmatch(r"perfguard: slowed: its series starts again with 1 run from this run \(host_time \+300\.0% from the "
                        r"centre of this host's 2 runs, outside its tolerance of ±[\d.]+%: the code changed\); "
                        r"its 2 runs before dropped", line), line


# --- a gate that cannot see: inconclusive -------------------------------------------------------------


def test_a_one_run_baseline_and_a_30_percent_slowdown_read_inconclusive_never_same(gate):
    run = gate["blind"]
    assert run.result.ret == pytest.ExitCode.OK  # inconclusive passes by default
    slowed = run.gpu_time()["slowed"]
    assert slowed.status == "inconclusive" and slowed.change_pct == pytest.approx(30.0, abs=0.01), words.line(slowed)
    assert slowed.tolerance_pct > 30 > slowed.threshold_pct
    for part in ("within ±", "wider than the 1% threshold, so a change of 1% would pass unseen",
                 "judged by this host's 1 run", "to decide it: ", "`perfguard ab`"):
        assert part in words.line(slowed), part
    assert verdict_line(run.result) == "verdicts: 0 regressed, 0 unstable, 5 inconclusive, 0 improved, 0 missing, 0 new, 1 same"
    # Five inconclusive verdicts: each one's line in the terminal, yellow like unstable ones.
    run.result.stdout.fnmatch_lines(["slowed: host_time inconclusive: 20.00 ms → 26.00 ms (+30.0%), within ±*"])
    markdown = (run.path / "reports" / "perfguard.md").read_text()
    assert "### Inconclusive (5)" in markdown and "+30.0%" in markdown
    html = (run.path / "reports" / "perfguard.html").read_text()
    assert 'class="chip v-inconclusive"' in html


@pytest.mark.parametrize("scenario", ["blind_failing", "blind_ini"])
def test_fail_inconclusive_fails_a_case_the_gate_cannot_see_with_its_line(gate, scenario):
    run = gate[scenario]
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED
    message = failure_text(run.result, "slowed")
    assert message.startswith("slowed: host_time inconclusive: 20.00 ms → 26.00 ms (+30.0%), within ±"), message
    assert "to decide it: " in message
    if scenario == "blind_failing":  # every case whose tolerance is wider than its threshold fails; lenient's is not
        run.result.assert_outcomes(passed=1, failed=5)


# --- baseline files that cannot be used ---------------------------------------------------------------


@pytest.mark.parametrize("kind", BAD_FILES)
def test_a_bad_baseline_fails_each_measured_case_with_one_line_naming_the_file_and_is_kept(gate, kind):
    run = gate[kind]
    _, says = BAD_FILES[kind]
    run.result.assert_outcomes(failed=2)
    for case_id in NAPS:  # each case names the file; why it cannot be read is said once
        message = failure_text(run.result, case_id)
        label = run.baseline.relative_to(run.path)
        assert message == f"{case_id}: measured, but not compared: {label} cannot be read (the run's end says why, once)"
    problem = [line for line in run.result.outlines if line.startswith(f"perfguard: {run.baseline}: ")]
    assert len(problem) == 1 and all(fragment in problem[0] for fragment in says), run.result.outlines
    assert_clean(run.result)
    assert run.baseline.read_bytes() == run.before
    assert not [p.name for p in run.baseline.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("kind", [k for k, (update, _) in BAD_FILES.items() if update])
def test_update_on_a_bad_baseline_refuses_to_write_it_and_says_so(gate, kind):
    run = gate[kind]
    _, says = BAD_FILES[kind]
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED  # its cases failed; the update was refused
    problem = [line for line in run.result.outlines if line.startswith(f"perfguard: {run.baseline}: ")]
    assert len(problem) == 1 and all(fragment in problem[0] for fragment in says), run.result.outlines
    assert f"perfguard: wrote {run.baseline}" not in str(run.result.stdout)
    run.result.stdout.fnmatch_lines([f"perfguard: wrote {run.path / 'reports' / 'perfguard.json'}"])


# --- two processes updating one baseline at once ------------------------------------------------------

# Holds each run at the start of its session's end until both are there, so that the two baseline
# updates begin within a few milliseconds of each other rather than whenever each run happens to end.
MEET_AT_THE_END = """
    import os
    import pathlib
    import time

    import pytest

    ARRIVED = pathlib.Path(__file__).with_name("arrived")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(session):
        ARRIVED.mkdir(exist_ok=True)
        (ARRIVED / str(os.getpid())).touch()
        deadline = time.monotonic() + 60
        while len(list(ARRIVED.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
"""


def test_two_runs_updating_one_baseline_at_once_keep_both_cases(tmp_path, run_pytest):
    prepare(tmp_path, {
        "conftest.py": MEET_AT_THE_END,
        "test_alpha.py": RETIRED_SUITE.replace("retired", "alpha"),
        "test_beta.py": RETIRED_SUITE.replace("retired", "beta"),
    })
    # The two share the folder, its baselines/ and its --basetemp (which neither creates: no tmp_path).
    argv = [(*MEASURE, "--perfguard-update", f"--perfguard-report=reports/{name}", f"test_{name}.py") for name in ("alpha", "beta")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda args: run_pytest(tmp_path, *args), argv))
    for result in results:
        result.assert_outcomes(passed=1)
        assert_clean(result)
    assert len(list((tmp_path / "arrived").iterdir())) == 2  # both reached the end of their session together
    (path,) = store.list_files(tmp_path / "baselines")
    baseline = store.load_file(path)
    assert sorted(baseline.cases) == ["alpha", "beta"]
    for name in ("alpha", "beta"):
        record = loads_record((tmp_path / "reports" / name / "perfguard.json").read_text(), name)
        assert baseline.cases[name].result.judged_time == kept(record.results[0]).judged_time
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_spaced_folder_option_is_refused_with_the_form_to_use(pytester, inner_args):
    pytester.makepyfile(test_nothing="def test_nothing(): pass")
    (pytester.path / "elsewhere").mkdir()
    result = pytester.runpytest_subprocess(*inner_args, "--perfguard", "--perfguard-report", "elsewhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*write --perfguard-report=DIR (with '=')*"])


NAP = "import time\nfrom perfguard import perf_case\n\n@perf_case\ndef nap():\n    return lambda: time.sleep(0.002)\n"


def test_update_alone_measures_and_writes_the_baseline(tmp_path, run_pytest):
    prepare(tmp_path, {"test_nap.py": NAP})
    result = run_pytest(tmp_path, "--perfguard-update", "--perfguard-budget=0.01")
    assert result.ret == 0
    (baseline,) = (tmp_path / "baselines").glob("cpu-*.json")
    assert '"nap"' in baseline.read_text()


def test_a_broken_report_template_costs_the_html_only(tmp_path, run_pytest):
    # A real template error: the inner run points perfguard at a copy of its templates with a broken tag
    # (and drops what the fork server compiled from the real ones).
    from perfguard.report import html

    broken = tmp_path / "templates"
    broken.mkdir()
    for source in html.TEMPLATES.iterdir():
        (broken / source.name).write_text(source.read_text())
    (broken / "report.html.j2").write_text("{% for case in %}broken{% endfor %}")
    prepare(tmp_path, {
        "conftest.py": f"import perfguard.report.html as h, pathlib\nh.TEMPLATES = pathlib.Path({str(broken)!r})\n"
                       "h._environment.cache_clear()\nh._static.cache_clear()\nh._script_hash.cache_clear()\n",
        "test_nap.py": NAP,
    })
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget=0.01")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*cannot render perfguard.html (ReportError: cannot render the HTML report*perfguard.json is intact"])
    reports = tmp_path / "reports"
    assert loads_record((reports / "perfguard.json").read_text(), "record").results[0].id == "nap"
    assert (reports / "perfguard.md").is_file() and not (reports / "perfguard.html").exists()
