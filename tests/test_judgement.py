"""The one judge (analysis/judgement.py) and the one order of statuses (analysis/decide.py), on
constructed verdicts: re-measure a case whose time looks regressed, apply the acceptances, then say
what fails and which cases one command accepts. The gate, `perfguard ab` and `perfguard compare` each
call it (test_accept.py, test_ab.py and test_cli.py run them end to end)."""

from __future__ import annotations

import dataclasses

import pytest

from perfguard.analysis import decide
from perfguard.analysis.judgement import judge
from perfguard.errors import BaselineError
from perfguard.model import AcceptedChange, Acceptances, CaseResult, NextStep, Noise, TimeEvidence, Verdict

SLUG = "cpu-x"
NONE = Acceptances()


NOISE = Noise(runs=5, spread_pct=1.0, tolerance_pct=5.0, detectable_pct=6.6)


def case(case_id: str = "mm", status: str = "ok") -> CaseResult:
    return CaseResult(id=case_id, name=case_id, status=status, device=SLUG)


def verdict(status: str, case_id: str = "mm", metric: str = "gpu_time", current: float = 2.0, **fields) -> Verdict:
    steps = (NextStep("accept"),) if status == "regressed" else ()
    return Verdict(case_id, metric, status, 1.0, current, 100.0 * (current - 1.0), 1.0, "baselines/cpu-x.json",
                   reason="outside", time=TimeEvidence(noise=NOISE), next_steps=steps, **fields)


def accepts(figure: float, metric: str = "gpu_time", baseline: float = 1.0) -> Acceptances:
    return Acceptances((AcceptedChange("mm", metric, SLUG, figure, baseline, "fused"),))


@pytest.mark.parametrize("status", ["unstable", "inconclusive", "improved", "accepted", "missing", "new", "same"])
def test_only_a_regression_fails_and_is_offered_to_accept(status):
    judged = judge([case("a"), case("b")], [verdict(status, "a"), verdict("regressed", "b")], NONE)
    assert [(v.case_id, v.status) for v in judged.failing] == [("b", "regressed")]
    assert judged.accept == ("b",)


def test_an_inconclusive_time_fails_when_asked_and_is_not_offered_to_accept():
    verdicts = [verdict("inconclusive"), verdict("same", metric="kernels")]
    assert judge([case()], verdicts, NONE).failing == ()
    asked = judge([case()], verdicts, NONE, fail_inconclusive=True)
    assert [v.status for v in asked.failing] == ["inconclusive"] and asked.accept == ()


def test_a_regression_without_an_accept_step_fails_but_is_not_offered_to_accept():
    judged = judge([case()], [dataclasses.replace(verdict("regressed"), next_steps=(NextStep("find_leak"),))], NONE)
    assert len(judged.failing) == 1 and judged.accept == ()


def test_an_accepted_regression_passes_and_one_past_the_accepted_figure_fails():
    within = judge([case()], [verdict("regressed", current=2.05)], accepts(2.0))
    assert [v.status for v in within.verdicts] == ["accepted"] and within.verdicts[0].accepted_reason == "fused"
    assert within.failing == () and within.accept == () and within.unread is None
    past = judge([case()], [verdict("regressed", current=2.5)], accepts(2.0))
    assert [v.status for v in past.failing] == ["regressed"] and past.accept == ("mm",)


def test_an_acceptance_is_for_the_device_it_names():
    other = dataclasses.replace(case(), device="nvidia-h200")
    assert [v.status for v in judge([other], [verdict("regressed", current=2.0)], accepts(2.0)).failing] == ["regressed"]


def test_an_unreadable_acceptance_file_accepts_nothing_and_says_why():
    unread = BaselineError("baselines/accepted-changes.json: not valid JSON; restore it from version control")
    judged = judge([case()], [verdict("regressed", current=2.0)], unread)
    assert [v.status for v in judged.failing] == ["regressed"] and judged.accept == ("mm",)
    assert judged.unread == str(unread) and judged.spent == ()


def test_an_entry_the_baseline_holds_already_is_spent():
    held = dataclasses.replace(verdict("same", current=2.0), baseline=2.0, change_pct=0.0)
    judged = judge([case()], [held], accepts(2.0))
    assert [(c.case_id, c.metric) for c in judged.spent] == [("mm", "gpu_time")] and judged.failing == ()


def test_an_update_fails_nothing_and_re_measures_nothing():
    def confirm(first, verdicts):
        raise AssertionError("an update re-measured a case")

    judged = judge([case()], [verdict("regressed")], NONE, updating=True, confirm=confirm)
    assert judged.failing == () and judged.accept == ()
    assert [v.status for v in judged.verdicts] == ["regressed"]  # against the baseline it replaces


def test_only_a_case_whose_time_regressed_is_re_measured_and_it_keeps_what_confirm_settled():
    asked = []
    kept = dataclasses.replace(case("slow"), nodeid="the middle measurement")

    def confirm(first, verdicts):
        asked.append(first.id)
        return kept, [dataclasses.replace(v, status="unstable", reason="not_confirmed") for v in verdicts]

    verdicts = [verdict("regressed", "slow"), verdict("regressed", "counted", metric="kernels"), verdict("same", "steady")]
    judged = judge([case("slow"), case("counted"), case("steady")], verdicts, NONE, confirm=confirm)
    assert asked == ["slow"]  # a count is exact: it is not measured again
    assert judged.results[0] is kept
    assert {v.case_id: v.status for v in judged.verdicts} == {"slow": "unstable", "counted": "regressed", "steady": "same"}
    assert [v.case_id for v in judged.failing] == ["counted"]


def test_the_acceptances_judge_the_figure_the_re_measurements_settled_on():
    # First measured past the accepted figure; the re-measurements settle within it: accepted.
    def confirm(first, verdicts):
        return first, [dataclasses.replace(v, current=2.05, time=dataclasses.replace(v.time, confirmed=True)) for v in verdicts]

    judged = judge([case()], [verdict("regressed", current=3.0)], accepts(2.0), confirm=confirm)
    assert [v.status for v in judged.verdicts] == ["accepted"] and judged.failing == ()


def test_a_case_status_is_the_most_pressing_of_its_deciding_verdicts():
    assert decide.case_status([verdict("same"), verdict("regressed", metric="kernels")]) == "regressed"
    assert decide.case_status([verdict("same")], case(status="error")) == "error"
    assert [decide.case_status([], case(status=s)) for s in ("skipped", "smoke", "ok")] == ["skipped", "smoke", "measured"]
    # A figure the baseline predates (memory across calls, `new`) beside a judged time: judged, not new.
    assert decide.case_status([verdict("inconclusive"), verdict("new", metric="footprint")]) == "inconclusive"
    assert decide.case_status([verdict("new"), verdict("new", metric="footprint")]) == "new"
    assert decide.case_statuses([verdict("same", "a"), verdict("missing", "b")]) == {"a": "same", "b": "missing"}


def test_one_order_lists_regressions_first_and_cases_without_a_verdict_last():
    assert decide.STATUS_ORDER[:2] == ("error", "regressed") and decide.STATUS_ORDER[-1] == "measured"
    assert decide.rank("regressed") < decide.rank("same") < decide.rank("measured") < decide.rank("")
    verdicts = [verdict("same", "a"), verdict("new", "b"), verdict("regressed", "c"), verdict("unstable", "d")]
    assert [v.case_id for v in decide.ordered(verdicts)] == ["c", "d", "b", "a"]
