"""The `perfguard` console command: work on stored run records and baselines, never re-running a case.

    perfguard show RUN.json
    perfguard baseline show [--device SLUG] [--baselines DIR]
    perfguard baseline accept RUN.json [--case ID ...] [--baselines DIR]
    perfguard compare BASE.json HEAD.json [--threshold PCT] [--memory-threshold PCT]
    perfguard report RUN.json [RUN.json ...] -o FILE.html [--markdown FILE.md]
    perfguard calibrate [--baselines DIR] [--budget SECONDS]
    perfguard ab --base REF [--rounds N] [--threshold PCT] [--report DIR] [-- PYTEST ARGS]
    perfguard asv-export RUN.json [RUN.json ...] --to DIR [--repo DIR] [--branch NAME] [--commit REV]
    perfguard history DIR [--threshold PCT] [--repo DIR]

`calibrate` and `ab` are the commands that measure: `calibrate` imports torch when it runs, `ab` runs
pytest in a worktree of REF and in the working tree by turns. The others work on stored files.

Exit status: 0 done, 1 `compare` or `ab` found a regression or `history` a drift, 2 a usage or file
error (one line on stderr, no traceback). It imports neither pytest nor torch, so it is quick to start
and runs anywhere.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from perfguard.ab import DEFAULT_ROUNDS
from perfguard.errors import BaselineError, ConfigError, PerfguardError
from perfguard.model import CaseResult, RunRecord, loads_record
from perfguard.report import units

DEFAULT_BASELINES = "baselines"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if argv[:1] == ["ab"] and "--" in argv:  # everything after `--` is pytest's, untouched by argparse
        argv, pytest_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    args = _parser().parse_args(argv)
    args.pytest_args = pytest_args
    try:
        return args.command(args)
    except PerfguardError as exc:
        print(f"perfguard: {exc}", file=sys.stderr)
        return 2


def read_record(path: Path | str) -> RunRecord:
    """A run record from disk; a missing or unreadable file is one clear error naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; pass a run record such as reports/perfguard.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read it as a run record ({getattr(exc, 'strerror', None) or exc})") from None
    return loads_record(text, str(path))


# --- commands ---------------------------------------------------------------------------------


def _show(args: argparse.Namespace) -> int:
    from perfguard.report.terminal import summary

    record = read_record(args.run)
    for line, _style in summary(record.results, record.devices, record):
        print(line)
    return 0


def _baseline_show(args: argparse.Namespace) -> int:
    from perfguard.store import list_files, load_file, path_for

    directory = Path(args.baselines)
    if args.device:
        paths = [path_for(directory, args.device)]
        if not paths[0].is_file():
            known = ", ".join(p.stem for p in list_files(directory)) or "none"
            raise ConfigError(f"{paths[0]}: no baseline for {args.device} (baselines in {directory}: {known})")
    else:
        paths = list_files(directory)
        if not paths:
            print(f"no baselines in {directory}")
            return 0
    status = 0
    for path in paths:
        try:
            baseline = load_file(path)
        except BaselineError as exc:  # one bad file should not hide the others
            print(f"perfguard: {exc}", file=sys.stderr)
            status = 2
            continue
        assert baseline is not None  # it was listed a moment ago
        versions = ", ".join(f"{k} {v}" for k, v in sorted(baseline.device.fingerprint().items()) if v)
        print(f"{path}: {baseline.device.name} ({baseline.device.slug}), {len(baseline.cases)} case(s)"
              + (f"; {versions}" if versions else ""))
        cal = baseline.calibration
        if cal:
            rates = ", ".join(f"{k} {units.number(v, 2)}" for k, v in cal.tflops.items())
            print(f"  calibrated {cal.measured_at}: copy {units.number(cal.copy_gbps)} GB/s; matmul TFLOP/s {rates}")
        rows = [
            (case_id, units.duration(e.result.latency.median_ms if e.result.latency else None),
             str(e.result.latency.n if e.result.latency else len(e.result.samples_ms)), e.recorded_at,
             (e.commit or "-")[:12])
            for case_id, e in sorted(baseline.cases.items())
        ]
        for line in _columns(("case", "median", "samples", "recorded_at", "commit"), rows):
            print(f"  {line}")
    return status


def _baseline_accept(args: argparse.Namespace) -> int:
    from perfguard.store import update

    record = read_record(args.run)
    results = list(record.results)
    if args.case:
        unknown = sorted(set(args.case) - {r.id for r in results})
        if unknown:
            raise ConfigError(f"{args.run}: no case {', '.join(unknown)} in this record; see `perfguard show {args.run}`")
        results = [r for r in results if r.id in set(args.case)]
    for r in results:
        if r.status != "ok":
            print(f"skipped {r.id}: not measured (status {r.status})")
    by_device: dict[str, list[CaseResult]] = {}
    for r in results:
        if r.status == "ok":
            by_device.setdefault(r.device, []).append(r)
    if not by_device:
        raise ConfigError(f"{args.run}: no measured case to accept; run pytest --perfguard first")
    devices = {d.slug: d for d in record.devices}
    for slug, accepted in sorted(by_device.items()):
        if slug not in devices:
            raise BaselineError(
                f"{args.run}: case {accepted[0].id} was measured on {slug!r}, a device the record does not list"
            )
        path = update(args.baselines, devices[slug], accepted, commit=record.commit, recorded_at=record.created_at)
        print(f"accepted {len(accepted)} case(s) into {path}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from perfguard.analysis import verdict

    base, head = read_record(args.base), read_record(args.head)
    verdicts = verdict.ordered(verdict.compare_records(
        base,
        head,
        threshold_pct=verdict.DEFAULT_THRESHOLD_PCT if args.threshold is None else args.threshold,
        memory_threshold_pct=(
            verdict.DEFAULT_MEMORY_THRESHOLD_PCT if args.memory_threshold is None else args.memory_threshold
        ),
        baseline_file=str(args.base),
        head_file=str(args.head),
    ))
    for v in verdicts:
        print(f"{v.status:<9}  {v.case_id}: {v.message}")
    tally = verdict.counts(verdicts)
    print(_summary(tally))
    return 1 if tally["regressed"] else 0


def _report(args: argparse.Namespace) -> int:
    from perfguard.report.html import render_html
    from perfguard.report.markdown import render_markdown
    from perfguard.store.atomic import write_atomic

    records = [read_record(path) for path in args.runs]
    # Render everything before writing anything: a failure leaves no half-updated pair of files.
    outputs = [(Path(args.output), render_html(records))]
    if args.markdown:
        outputs.append((Path(args.markdown), render_markdown(records)))
    for path, text in outputs:
        write_atomic(path, text)
    cases = len({(r.device, r.id) for record in records for r in record.results})
    print(f"wrote {' and '.join(str(p) for p, _ in outputs)} from {len(records)} record(s), {cases} case result(s)")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    import datetime

    from perfguard.measure.calibrate import calibrate
    from perfguard.measure.device import default_kind, detect
    from perfguard.store import calibrate as store_calibration

    device = detect(default_kind())
    print(f"calibrating {device.name} ({device.slug}): a large copy and an n×n×n matmul per dtype")
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
    for line in _columns(("roof", "measured", "of spec", "spec"), rows):
        print(f"  {line}")
    path = store_calibration(args.baselines, device, calibration)
    print(f"stored in {path}: `pytest --perfguard` now places cases against these roofs on {device.slug}")
    return 0


def _ab(args: argparse.Namespace) -> int:
    from perfguard.ab import run_ab

    try:
        return run_ab(args.base, args.pytest_args, rounds=args.rounds, threshold_pct=args.threshold, report_dir=args.report)
    except KeyboardInterrupt:
        print("perfguard ab: interrupted; the base worktree was removed", file=sys.stderr)
        return 130


def _asv_export(args: argparse.Namespace) -> int:
    from perfguard.export import export

    records = [(str(path), read_record(path)) for path in args.runs]
    done = export(records, args.to, repo=args.repo, commit=args.commit, branch=args.branch, project=args.project)
    print(f"exported {done.records} record(s) to {Path(args.to)}: {done.commits} commit(s), "
          f"{len(done.machines)} machine(s) ({', '.join(done.machines)}), {done.benchmarks} asv benchmark(s)")
    for commit in done.not_on_branch:
        print(f"note: commit {commit[:12]} is not in the first-parent history of the branches in {done.config}; "
              "asv will not draw it")
    print(f"site: asv publish --config {done.config} && asv preview --config {done.config}")
    return 0


def _history(args: argparse.Namespace) -> int:
    from perfguard.export import find_drifts

    history = find_drifts(args.dir, threshold_pct=args.threshold, repo=args.repo)
    for drift in history.drifts:
        print(f"drift  {drift.message}")
    skipped = f"; {history.off_branch} result file(s) off the branches skipped" if history.off_branch else ""
    print(f"perfguard: {len(history.drifts)} drift(s) in {history.series} series over {history.commits} commit(s){skipped}")
    return 1 if history.drifts else 0


# --- plumbing ---------------------------------------------------------------------------------


def _summary(tally: dict[str, int]) -> str:
    return "perfguard: " + ", ".join(f"{n} {status}" for status, n in tally.items())


def _columns(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *rows]]


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1000:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 5, got {text!r}")
    return value


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a number of rounds from 1 to 100, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perfguard", description="Work on perfguard run records and baselines.")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    show = commands.add_parser("show", help="print a run record as the terminal table")
    show.add_argument("run", metavar="RUN.json")
    show.set_defaults(command=_show)

    baseline = commands.add_parser("baseline", help="list or accept baselines")
    actions = baseline.add_subparsers(title="actions", metavar="ACTION", required=True)
    listing = actions.add_parser("show", help="list the baselines and their cases")
    listing.add_argument("--device", metavar="SLUG", help="only this device's file, e.g. nvidia-h200")
    accept = actions.add_parser("accept", help="write a run's measured cases into its device's baseline")
    accept.add_argument("run", metavar="RUN.json")
    accept.add_argument("--case", metavar="ID", action="append", help="only this case (repeatable)")
    for sub in (listing, accept):
        sub.add_argument("--baselines", metavar="DIR", default=DEFAULT_BASELINES,
                         help=f"baseline folder (default: {DEFAULT_BASELINES})")
    listing.set_defaults(command=_baseline_show)
    accept.set_defaults(command=_baseline_accept)

    # Defaults come from perfguard.analysis.verdict, imported only when comparing (it loads scipy).
    compare = commands.add_parser("compare", help="verdicts between two run records; exit 1 on a regression")
    compare.add_argument("base", metavar="BASE.json")
    compare.add_argument("head", metavar="HEAD.json")
    compare.add_argument("--threshold", metavar="PCT", type=_percent, default=None,
                         help="latency change that counts, in percent (default: 5, or the case's own)")
    compare.add_argument("--memory-threshold", metavar="PCT", type=_percent, default=None,
                         help="peak-memory growth that counts, in percent (default: 5, or the case's own)")
    compare.set_defaults(command=_compare)

    report = commands.add_parser("report", help="render run records as one HTML report (several GPUs, workers or runs merge)")
    report.add_argument("runs", metavar="RUN.json", nargs="+", help="run records; per device and case the latest wins")
    report.add_argument("-o", "--output", metavar="FILE.html", required=True, help="where to write the HTML report")
    report.add_argument("--markdown", metavar="FILE.md", help="also write the Markdown summary here")
    report.set_defaults(command=_report)

    calibrate = commands.add_parser("calibrate", help="measure this device's copy bandwidth and matmul rates; store them with its baseline")
    calibrate.add_argument("--baselines", metavar="DIR", default=DEFAULT_BASELINES,
                           help=f"baseline folder (default: {DEFAULT_BASELINES})")
    calibrate.add_argument("--budget", metavar="SECONDS", type=float, default=2.0,
                           help="wall-time budget per measurement (default: 2)")
    calibrate.set_defaults(command=_calibrate)

    ab = commands.add_parser("ab", help="measure a base revision and the working tree by turns; exit 1 on a regression",
                             usage="perfguard ab --base REF [--rounds N] [--threshold PCT] [--report DIR] [-- PYTEST ARGS]",
                             description="Measure REF (in a temporary git worktree) and the working tree in "
                             "alternating rounds of `pytest --perfguard`, and give the verdicts between them. "
                             "Pytest's arguments (test paths, -k, --perfguard-budget ...) go after `--`.")
    ab.add_argument("--base", metavar="REF", required=True, help="the revision to compare with, e.g. origin/main")
    ab.add_argument("--rounds", metavar="N", type=_rounds, default=DEFAULT_ROUNDS,
                    help="rounds per side, base and head alternating (default: 2, i.e. base head head base)")
    ab.add_argument("--threshold", metavar="PCT", type=_percent, default=None,
                    help="latency change that counts, in percent (default: 5, or the case's own)")
    ab.add_argument("--report", metavar="DIR", default="reports",
                    help="folder for perfguard.json (head, with verdicts), perfguard-base.json and the reports (default: reports)")
    ab.set_defaults(command=_ab)

    export = commands.add_parser("asv-export", help="add run records to an asv results folder (history; asv publish draws it)")
    export.add_argument("runs", metavar="RUN.json", nargs="+", help="run records; records of one commit and GPU merge")
    export.add_argument("--to", metavar="DIR", required=True, help="the asv folder (asv.conf.json, results/); created or merged into")
    export.add_argument("--repo", metavar="DIR", default=".", help="git checkout the records were measured in (default: .)")
    export.add_argument("--commit", metavar="REV", help="commit of records that carry none (written outside a checkout)")
    export.add_argument("--branch", metavar="NAME", help="branch whose history asv draws (default: the one checked out)")
    export.add_argument("--project", metavar="NAME", help="project name on the asv site (default: the checkout's folder name)")
    export.set_defaults(command=_asv_export)

    history = commands.add_parser("history", help="asv's step detection over an exported folder; exit 1 on a drift")
    history.add_argument("dir", metavar="DIR", help="the folder asv-export wrote")
    history.add_argument("--threshold", metavar="PCT", type=_percent, default=5.0,
                         help="smallest step that counts, in percent (default: 5, asv's own)")
    history.add_argument("--repo", metavar="DIR", help="git checkout of the commits (default: the repo in DIR/asv.conf.json)")
    history.set_defaults(command=_history)
    return parser


if __name__ == "__main__":
    sys.exit(main())
