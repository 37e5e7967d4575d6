"""Where every time of where_moved.py's runs moved, judged offline by perfguard as it stands (its records
and baselines as a GPU wrote them).

    python3 benchmarks/where_offline.py OUT                        # OUT: where_moved.py's --out folder
    python3 benchmarks/where_offline.py --baseline FILE RUN.json ...

The first form: analysis/moved.where on every time of every run, moved or not, against the run's
baseline (each verdict's tolerance, as the gate attaches it): what each would name. The second: each
record judged again against another card's baseline file, as the gate judges it (analysis/verdict.py,
then analysis/judgement.py with the baseline's results for where): a baseline recorded on one card
judging runs taken on another; each time and memory verdict, and its `where:` line where it moved.
"""
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]
from perfguard import store  # noqa: E402
from perfguard.analysis import moved  # noqa: E402
from perfguard.analysis.judgement import judge  # noqa: E402
from perfguard.analysis.verdict import compare_case  # noqa: E402
from perfguard.model import Acceptances, loads_record  # noqa: E402
from perfguard.report import words  # noqa: E402
from unseen_card import tally_lines  # noqa: E402


def own(out: Path) -> None:
    (b,) = store.list_files(out / "baselines")
    cases = store.load_file(b).cases
    for run in sorted(p.name for p in out.iterdir() if p.is_dir() and (p / "perfguard.json").is_file() and not p.name.startswith("record")):
        rec = loads_record((out / run / "perfguard.json").read_text(), run)
        tolerance = {(v.case_id, v.metric): v.tolerance_pct or 0.0 for v in rec.verdicts}
        for r in rec.results:
            for metric in ("busy_time", "gpu_time", "caller_time"):
                w = moved.where(metric, cases[r.id].result, r, tolerance.get((r.id, metric), 0.0))
                if w is None:
                    continue
                named = [f"{c.name[:50]}" for c in w.culprits]
                print(f"{run:24} {r.id[:18]:18} {metric:11} {w.by:8} rows {len(w.rows):3} moved {w.moved:+.3f}: "
                      f"{', '.join(named[:4]) or '-'}{' +' + str(len(named) - 4) if len(named) > 4 else ''}")


def across(baseline: Path, runs: list[Path]) -> None:
    file = store.load_file(baseline)
    print(f"baseline {baseline}: {file.device.name}, cards {sorted({r.device_uuid for e in file.cases.values() for r in e.runs if r.device_uuid})}")
    for path in runs:
        rec = loads_record(path.read_text(), str(path))
        device = rec.devices[0]
        verdicts = [v for r in rec.results for v in compare_case(r, file.cases.get(r.id), baseline_file=str(baseline),
                                                                 host=device.host, current_fingerprint=device.fingerprint())]
        judged = judge(rec.results, verdicts, Acceptances(), before={r.id: file.cases[r.id].result for r in rec.results
                                                                      if r.id in file.cases})
        failing = ", ".join(f"{v.case_id} {v.metric}" for v in judged.failing) or "nothing"
        print(f"{path} (card {device.uuid}): failing: {failing}")
        print("\n".join(tally_lines(judged.verdicts, rec.results)))
        for v in judged.verdicts:
            if v.metric in moved.ATTRIBUTED:
                where = words.where_line(v)
                print(f"  {v.case_id} {v.metric} {v.status}"
                      + (f" ({v.change_pct:+.1f}%, tolerance ±{v.tolerance_pct:.1f}%)" if v.tolerance_pct else "")
                      + (f": {where}" if where else ""))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--baseline"]:
        across(Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
    else:
        own(Path(sys.argv[1]))
