"""The commands that measure: calibrate (this card's roofs) and ab (a base revision against the working tree)."""

from __future__ import annotations

import argparse
import signal
import sys

from perfguard import defaults, parsers, units
from perfguard.cli.common import add_option, argument, columns, command, tell


def _calibrate(args: argparse.Namespace) -> int:
    import datetime

    from perfguard.measure.calibrate import calibrate
    from perfguard.measure.device import default_kind, detect
    from perfguard.store import calibrate as store_calibration

    device = detect(default_kind())
    threads = ""
    if device.kind == "cpu":  # as `pytest --perfguard` measures on a CPU, so that its copy_util compares like with like
        from perfguard.measure.torch_state import measuring_threads

        threads = f", with {measuring_threads()} torch thread(s)"
    print(f"calibrating {device.name} ({device.slug}): a large copy and an n×n×n matmul per dtype{threads}")
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    calibration, results = calibrate(device, now, budget_s=args.budget)
    theoretical = device.peak_bandwidth_gbps
    rows = [("copy", f"{units.number(calibration.copy_gbps)} GB/s",
             units.percent(calibration.copy_gbps / theoretical if theoretical else None),
             f"theoretical {units.number(theoretical)} GB/s" if theoretical else "-")]
    for dtype, rate in calibration.tflops.items():
        peak = (device.peak_tflops or {}).get(dtype)
        rows.append((f"matmul {dtype}", f"{units.number(rate, 2)} TFLOP/s", units.percent(rate / peak if peak else None),
                     f"datasheet {units.number(peak, 2)} TFLOP/s" if peak else "-"))
    for line in columns(("roof", "measured", "of spec", "spec"), rows):
        print(f"  {line}")
    path = store_calibration(args.baselines, device, calibration)
    if device.kind == "cuda":
        print(f"stored in {path}: `pytest --perfguard` now places cases against these roofs on {device.slug}")
    else:  # a CPU gets no roofline (analysis/roofline.py): only the copy is used
        print(f"stored in {path}: a CPU gets no roofline; `pytest --perfguard` on {device.slug} now gives each case's "
              "achieved GB/s as a share of this copy (copy_util)")
    return 0


def _ab(args: argparse.Namespace) -> int:
    from perfguard.ab import Settings, run_ab
    from perfguard.ab.stale import Terminated

    settings = Settings(rounds=args.rounds, max_rounds=args.max_rounds, budget_s=args.budget, shards=args.gpus,
                        threshold_pct=args.threshold, fail_inconclusive=args.fail_inconclusive,
                        counter_allowance=args.counter_allowance, baselines=args.baselines, strict=args.strict)
    try:
        return run_ab(args.base, args.pytest_args, settings, report_dir=args.report, out=tell)
    except KeyboardInterrupt:
        print("perfguard ab: interrupted; the base worktree was removed", file=sys.stderr)
        return 130
    except Terminated:
        print("perfguard ab: terminated (SIGTERM); its pytest runs were stopped and the base worktree was removed",
              file=sys.stderr)
        return 128 + signal.SIGTERM  # as a shell reports a process that SIGTERM ended


def _gpus(text: str) -> int | None:
    """-n: a number of GPUs, or "auto" (None: every visible GPU)."""
    return None if text.strip().lower() == "auto" else parsers.count(text, 1, 64)


def add_commands(commands: argparse._SubParsersAction) -> None:
    calibrate = command(commands, "calibrate", "measure this device's copy bandwidth and matmul rates; store them with its baseline")
    add_option(calibrate, "perfguard-baselines")
    add_option(calibrate, "perfguard-budget", default=defaults.CALIBRATE_BUDGET_S,
               help=f"wall-time budget per measurement in seconds (default: {defaults.CALIBRATE_BUDGET_S:g})")
    calibrate.set_defaults(command=_calibrate)

    ab = command(commands, "ab", "measure a base revision and the working tree by turns; exit 1 on a regression",
                 "REF is checked out in a temporary git worktree; the two sides run in alternating rounds of "
                 "`pytest --perfguard`, each case is judged on the differences of its round medians, round by round, "
                 "and the cases not yet decided run again while the budget lasts. Pytest's arguments (test paths, -k, "
                 "--perfguard-budget ...) go after `--`: perfguard ab --base origin/main -- suites/")
    ab.add_argument("--base", metavar="REF", required=True, help="the revision to compare with, e.g. origin/main")
    ab.add_argument("--rounds", metavar="N", type=argument(lambda text: parsers.count(text, 2, 100)),
                    default=defaults.AB_ROUNDS,
                    help=f"rounds of every case, base and head alternating (base head, head base, ...), before the "
                    f"first judgement (default: {defaults.AB_ROUNDS})")
    ab.add_argument("--max-rounds", metavar="M", type=argument(lambda text: parsers.count(text, 2, 1000)),
                    default=defaults.AB_MAX_ROUNDS,
                    help=f"rounds an undecided case gets at most (default: {defaults.AB_MAX_ROUNDS})")
    ab.add_argument("--budget", metavar="SECONDS", type=argument(parsers.seconds), default=defaults.AB_BUDGET_S,
                    help="wall time of the whole ab: no round starts that would overrun it; the cases still "
                    f"undecided then are inconclusive (default: {defaults.AB_BUDGET_S:g})")
    ab.add_argument("-n", "--gpus", metavar="GPUS", type=argument(_gpus), default=1,
                    help="share the tests out over this many GPUs (auto: every visible one), each test on one GPU "
                    "for every round of both sides (default: 1)")
    ab.add_argument("--fail-inconclusive", action="store_true",
                    help="exit 1 when a case could not be decided within the budget, as when one regressed")
    ab.add_argument("--strict", action="store_true",
                    help="for CI: exit 1 when a case the base runs does not run on the head (skipped, deselected, "
                    "renamed or removed there), as --perfguard-strict fails a missing case")
    add_option(ab, "perfguard-threshold", default=None,
               help=f"the smallest latency change that matters, in percent (default: {defaults.THRESHOLD_PCT:g}, "
               "or the case's own)")
    add_option(ab, "perfguard-counter-allowance")
    add_option(ab, "perfguard-baselines", help="the folder whose accepted-changes.json (`perfguard pr accept`) says which "
               "changes of the head are intended (default: baselines)")
    add_option(ab, "perfguard-report", help="folder for perfguard.json (head, with verdicts), perfguard-base.json and the "
               f"reports (default: {defaults.REPORT_DIR})")
    # argparse's own usage line, every option in it, and what argparse does not see: pytest's arguments.
    ab.usage = ab.format_usage().removeprefix("usage: ").rstrip() + " [-- PYTEST ARGS]"
    ab.set_defaults(command=_ab)
