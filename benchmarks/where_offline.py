"""Where every time of where_moved.py's runs moved, moved or not, judged offline by analysis/moved.py as it
stands (its records and baseline as a GPU wrote them): what each would name.

    python3 benchmarks/where_offline.py OUT    # OUT: where_moved.py's --out folder
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from perfguard import store
from perfguard.analysis import moved
from perfguard.model import loads_record
from perfguard.report import words
out = Path(sys.argv[1])
(b,) = store.list_files(out / "baselines")
cases = store.load_file(b).cases
for run in sorted(p.name for p in out.iterdir() if p.is_dir() and (p / "perfguard.json").is_file() and not p.name.startswith("record")):
    rec = loads_record((out / run / "perfguard.json").read_text(), run)
    for r in rec.results:
        for metric in ("busy_time", "gpu_time", "caller_time"):
            w = moved.where(metric, cases[r.id].result, r)
            if w is None:
                continue
            named = [f"{c.name[:50]}" for c in w.culprits]
            print(f"{run:24} {r.id[:18]:18} {metric:11} {w.by:8} rows {len(w.rows):3} moved {w.moved:+.3f}: {', '.join(named[:4]) or '-'}{' +' + str(len(named) - 4) if len(named) > 4 else ''}")
