"""A GPU model with no baseline of its own, judged by another model's file (issue 48), with regressions
injected from outside the suites' code.

    python3 benchmarks/across_models.py OUT [--baselines DIR] [--inject none extra_op sync leak] [--case ID ...]
    python3 benchmarks/across_models.py --agreement RECORD.json BASELINE.json    # anywhere: from files

Runs `pytest --perfguard` of suites/test_models.py's cases (--case; default: nanoGPT's training step at
batch 8, suites/models/gpt2.py) once per injection on this card against DIR (default: the committed baselines/; on
a model without its own file, another model's of the same architecture and software stands in: on an H100, whose
file is committed, a DIR holding only nvidia-h200.json), with
this file as a pytest plugin (`-p across_models`) that patches suites/models/gpt2.py from outside
where PERFGUARD_INJECT says:
- extra_op: one more elementwise op a block (each Block's output times 1.0);
- sync: the loss read back to the host each call (`.item()` on GPT.forward's loss);
- leak: each call's last-position logits kept in a list that outlives the call (800 KB a call).

Prints, per run, the counter and memory verdicts by status, and the line of each that is not `same`.
Without CUDA the cases are skipped (they are CUDA only): run it on a GPU.

`--agreement` sets a record of one model (`pytest --perfguard suites/`'s) beside another model's
baseline file, kind by kind: in how many cases each count agrees exactly, whether the gate judges it
across models (analysis/across.py's ACROSS), and the verdicts the record's run gave its memory and times.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INJECTIONS = ("none", "extra_op", "sync", "leak")
KEPT: list[object] = []  # the leak's list: it outlives every call


def pytest_collection_finish(session) -> None:
    """The plugin's one hook: patch suites/models/gpt2.py (imported by now, through the suites'
    conftest) as PERFGUARD_INJECT says, before any case builds its model."""
    change = os.environ.get("PERFGUARD_INJECT", "none")
    gpt2 = sys.modules.get("models.gpt2")
    if change == "none" or gpt2 is None:
        return
    if change == "extra_op":
        block = gpt2.Block.forward
        gpt2.Block.forward = lambda self, x: block(self, x) * 1.0
        return
    forward = gpt2.GPT.forward

    def patched(self, idx, targets=None):
        logits, loss = forward(self, idx, targets)
        if change == "sync" and loss is not None:
            loss.item()
        if change == "leak":
            KEPT.append(logits[:, -1, :].detach().clone())
        return logits, loss

    gpt2.GPT.forward = patched


def agreement(record: Path, baseline: Path) -> None:
    from perfguard import store
    from perfguard.analysis.across import ACROSS
    from perfguard.model import COUNTER_KINDS, MEMORY_METRICS, TIME_METRICS, loads_record

    rec, cases = loads_record(record.read_text(), str(record)), store.load_file(baseline).cases
    both = [r for r in rec.results if r.id in cases and r.counters and cases[r.id].result.counters]
    names = sorted({d.name for d in rec.devices})
    print(f"{record} ({', '.join(names)}) beside {baseline} ({store.load_file(baseline).device.name}): {len(both)} cases")
    print(f"{'counter':16} {'judged across':>13} {'agree':>6} {'differ':>6}  differing cases")
    for kind in COUNTER_KINDS:
        differ = [r.id for r in both if getattr(r.counters, kind) != getattr(cases[r.id].result.counters, kind)]
        print(f"{kind:16} {'yes' if kind in ACROSS else 'no':>13} {len(both) - len(differ):>6} {len(differ):>6}  "
              f"{', '.join(differ[:3])}{f' and {len(differ) - 3} more' if len(differ) > 3 else ''}")
    for metric in (*MEMORY_METRICS, *TIME_METRICS):
        statuses = collections.Counter(v.status for v in rec.verdicts if v.metric == metric)
        if statuses:
            print(f"{metric:16} verdicts: {', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))}")


def main() -> None:
    sys.path[:0] = [str(ROOT)]
    if sys.argv[1:2] == ["--agreement"]:
        return agreement(Path(sys.argv[2]), Path(sys.argv[3]))
    from perfguard.model import COUNTER_KINDS, MEMORY_METRICS, loads_record
    from perfguard.report import words

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--baselines", type=Path, default=ROOT / "baselines")
    parser.add_argument("--inject", nargs="*", default=list(INJECTIONS), choices=INJECTIONS)
    parser.add_argument("--case", nargs="*", default=["gpt2_train_step[batch=8-seq=1024-dtype=bfloat16]"])
    args = parser.parse_args()
    judged = ("kernels", *COUNTER_KINDS, *MEMORY_METRICS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for change in args.inject:
        report = args.out.resolve() / f"run-{change}"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "across_models",
                               "--perfguard", f"--perfguard-baselines={args.baselines.resolve()}", f"--perfguard-report={report}",
                               "--perfguard-profile=none", *(f"suites/test_models.py::{c}" for c in args.case)],
                              cwd=ROOT, env={**env, "PERFGUARD_INJECT": change}, capture_output=True, text=True)
        (args.out / f"run-{change}.log").write_text(done.stdout + done.stderr)
        path = report / "perfguard.json"
        if not path.is_file():
            print(f"{change}: exit {done.returncode}, no record; see {args.out / f'run-{change}.log'}")
            continue
        rec = loads_record(path.read_text(), str(path))
        counts = collections.Counter(v.status for v in rec.verdicts if v.metric.split(":")[0] in judged)
        print(f"{change}: exit {done.returncode}; counter and memory verdicts: "
              f"{', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}")
        for v in rec.verdicts:
            if v.metric.split(":")[0] in judged and v.status != "same":
                print(f"  {words.line(v)}")


if __name__ == "__main__":
    main()
