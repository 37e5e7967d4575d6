"""Work counters on model code as training repositories write it (issue 19): nanoGPT's model.py as
published and torchvision's ResNet-50, inference and a training step, judged by kernels, syncs,
copies, allocations, ATen operators and GPU busy time.

    python3 benchmarks/work_counters.py --nanogpt DIR --out OUT [record] [judge] [inject] [cost] [--runs N]
        [--record-runs N] [--inject extra_op ...] [--cost-paths suites/]

- record: N fresh `pytest --perfguard --perfguard-update` processes of the unchanged cases (a baseline in OUT/baselines);
- judge: 3 fresh `pytest --perfguard` processes against it: counters identical run to run, the
  spread of GPU busy time, and no false alarm;
- inject: each structural regression below, judged against the unchanged baseline, 3 runs each;
  printed: case, injection, caught by which counter n/3, the message;
- cost (not by default): `pytest --perfguard suites/` without counting, with it, and without again,
  and the counting passes' share of the run with it.

Each stage starts fresh pytest processes, 20-35 s each on an H200 (2026-12-01: CUDA start-up, five
cases' measurement and their counting passes): the default stages start 18 (record 3, judge 3, inject
4 x 3), about 8-10 minutes; `cost` is four runs of suites/ (one unmeasured).

The cases live in a perf-case file this script writes to OUT/cases/ (DIR's model.py is imported as
it is, never copied or edited); an injection is made by the environment variable PERFGUARD_INJECT,
which the case file reads (one extra elementwise op per transformer block by wrapping Block.forward,
a `.item()` inside the training step, an unfused AdamW, a tensor made from a Python list inside
the call). nanoGPT runs as its train.py and sample.py run it: TF32 matmuls, bf16 autocast on a GPU,
its own configure_optimizers (fused AdamW on CUDA) and a gradient clip of 1.0. Without torchvision
the ResNet-50 cases are left out; without CUDA everything runs on the CPU (ATen operators only).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfguard.model import COUNTER_KINDS, loads_record  # noqa: E402
from perfguard.report import words  # noqa: E402
from perfguard.units import plural  # noqa: E402

# Which cases each injection applies to, and the counter that should catch it.
INJECTIONS = {
    "extra_op": (("gpt_infer", "gpt_train"), "kernels"),
    "item": (("gpt_train", "resnet_train"), "syncs"),
    "unfused": (("gpt_train", "resnet_train"), "kernels"),
    "list_tensor": (("gpt_infer", "resnet_infer"), "copies"),
}

CASES = '''
import contextlib
import os
import sys

import torch

from perfguard import perf_case

sys.path.insert(0, os.environ["NANOGPT_DIR"])
import model as nanogpt  # noqa: E402  (nanoGPT's model.py as published)

INJECT = os.environ.get("PERFGUARD_INJECT", "none")
SMALL = os.environ.get("PERFGUARD_SMALL") == "1"  # a CPU's trial: a small GPT

if INJECT == "extra_op":  # one extra elementwise op per transformer block, model.py untouched
    _forward = nanogpt.Block.forward
    nanogpt.Block.forward = lambda self, x: _forward(self, x) * 1.0


def _config():
    if SMALL:
        return nanogpt.GPTConfig(block_size=64, vocab_size=512, n_layer=2, n_head=2, n_embd=64, dropout=0.0)
    return nanogpt.GPTConfig(block_size=1024, vocab_size=50304, n_layer=12, n_head=12, n_embd=768, dropout=0.0)


def _optimizer(model, device):
    if INJECT == "unfused":
        return torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), foreach=False, fused=False)
    if isinstance(model, nanogpt.GPT):  # train.py's optimizer: fused AdamW on CUDA
        return model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), device)
    fused = device == "cuda"
    return torch.optim.AdamW(model.parameters(), lr=6e-4, fused=fused or None, foreach=None if fused else True)


# train.py's and sample.py's precision, set as they set it, once for the whole file (a flag a case set
# would follow it into whichever case ran next): TF32 matmuls, and bf16 autocast on a GPU.
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True


def _amp(device):
    return torch.amp.autocast(device_type="cuda", dtype=torch.bfloat16) if device == "cuda" else contextlib.nullcontext()


@perf_case(params={"batch": [1, 8]}, budget_s=0.4)
def gpt_infer(batch, device):
    torch.manual_seed(0)
    model = nanogpt.GPT(_config()).to(device).eval()
    idx = torch.randint(0, model.config.vocab_size, (batch, 64 if not SMALL else 16), device=device)
    ctx = _amp(device)

    def forward():
        with ctx:
            return model(idx)[0]

    return _inference(forward, device)


def _inference(forward, device):
    @torch.no_grad()
    def call():
        out = forward()
        if INJECT == "list_tensor":  # a tensor from a Python list inside the call
            out = out * torch.tensor([1.0], device=device)
        return out

    return call


@perf_case(params={"batch": [8]}, budget_s=0.4)
def gpt_train(batch, device):
    torch.manual_seed(0)
    model = nanogpt.GPT(_config()).to(device).train()
    opt = _optimizer(model, device)
    t = 64 if not SMALL else 16
    idx = torch.randint(0, model.config.vocab_size, (batch, t), device=device)
    targets = torch.randint(0, model.config.vocab_size, (batch, t), device=device)
    ctx = _amp(device)

    def loss_of():
        with ctx:
            return model(idx, targets)[1]

    return _training(loss_of, opt, clip=model)


def _training(loss_of, opt, clip=None):
    def step():
        loss = loss_of()
        loss.backward()
        if clip is not None:  # train.py's grad_clip = 1.0 (its GradScaler is off under bf16)
            torch.nn.utils.clip_grad_norm_(clip.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if INJECT == "item":  # a .item() inside the step
            loss.item()
        return loss

    return step


try:
    import torchvision
except ImportError:
    torchvision = None

if torchvision is not None:

    @perf_case(params={"batch": [8, 32]}, budget_s=0.4)
    def resnet_infer(batch, device):
        torch.manual_seed(0)
        model = torchvision.models.resnet50().to(device).eval()
        x = torch.randn(batch, 3, 224, 224, device=device)
        return _inference(lambda: model(x), device)

    @perf_case(params={"batch": [8]}, budget_s=0.4)
    def resnet_train(batch, device):
        torch.manual_seed(0)
        model = torchvision.models.resnet50().to(device).train()
        opt = _optimizer(model, device)
        x = torch.randn(batch, 3, 224, 224, device=device)
        y = torch.randint(0, 1000, (batch,), device=device)
        return _training(lambda: torch.nn.functional.cross_entropy(model(x), y), opt)
'''


def pytest(out: Path, report: str, args: list[str], inject: str = "none", select: str = "") -> tuple[int, Path]:
    env = {**os.environ, "PERFGUARD_INJECT": inject, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    folder = out / report
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(out / "cases"),
               f"--rootdir={out / 'cases'}", "-c", os.devnull, "--perfguard", f"--perfguard-baselines={out / 'baselines'}",
               f"--perfguard-report={folder}", *(["-k", select] if select else []), *args]
    done = subprocess.run(command, env=env, cwd=out / "cases", capture_output=True, text=True)
    (out / f"{report}.log").write_text(done.stdout + done.stderr)
    return done.returncode, folder / "perfguard.json"


def record(out: Path, runs: int) -> None:
    for i in range(runs):
        started = time.perf_counter()
        rc, path = pytest(out, f"record-{i}", ["--perfguard-update"])
        print(f"record {i}: exit {rc}, {time.perf_counter() - started:.0f} s, {path}", flush=True)


def judge(out: Path, runs: int) -> None:
    records, alarms = [], []
    for i in range(runs):
        rc, path = pytest(out, f"judge-{i}", [])
        if not path.is_file():
            raise SystemExit(f"judge {i}: exit {rc}, no record; see {out / f'judge-{i}.log'}")
        rec = loads_record(path.read_text(), str(path))
        records.append(rec)
        alarms += [f"judge {i}: {v.case_id}: {words.line(v)}" for v in rec.verdicts if v.status in ("regressed", "unstable")]
        print(f"judge {i}: exit {rc}, devices {', '.join(d.uuid or d.slug for d in rec.devices)}", flush=True)
    print(f"\n{datetime.date.today()}: {runs} fresh runs against the baseline in {out / 'baselines'}")
    print(f"{'case':22} {'regime':13} {'kernels':>8} {'syncs':>6} {'copies':>7} {'allocs':>7} {'ATen ops':>9} "
          f"{'identical':>9} {'busy ms (min-max)':>20} {'spread':>7} {'caller ms (min-max)':>20}")
    by_case = collections.defaultdict(list)
    for rec in records:
        for r in rec.results:
            by_case[r.id].append(r)
    for case_id, results in sorted(by_case.items()):
        counted = [r.counters for r in results if r.counters]
        if not counted:
            print(f"{case_id:22} no counters: {results[0].counters_problem or results[0].error}")
            continue
        first = counted[0]
        same = all({k: getattr(c, k) for k in COUNTER_KINDS} == {k: getattr(first, k) for k in COUNTER_KINDS} for c in counted)
        busy = [r.median_of("busy_time") for r in results if r.median_of("busy_time")]
        caller = [r.median_of("caller_time") for r in results if r.median_of("caller_time")]
        spread = f"{100 * (max(busy) / min(busy) - 1):.2f}%" if len(busy) > 1 else "-"
        span = lambda xs: f"{min(xs):.4f}-{max(xs):.4f}" if xs else "-"  # noqa: E731
        print(f"{case_id:22} {results[0].regime:13} {first.total('kernels'):8.0f} {first.total('syncs'):6.0f} "
              f"{first.total('copies'):7.0f} {first.total('allocations'):7.0f} {first.total('aten_ops'):9.0f} "
              f"{f'{len(counted)}/{len(results)}' if same else 'NO':>9} {span(busy):>20} {spread:>7} {span(caller):>20}")
    print("false alarms: " + ("none" if not alarms else f"{len(alarms)}"))
    for line in alarms:
        print(f"  {line}")


def inject(out: Path, runs: int, which: list[str]) -> None:
    rows = []
    for name in which:
        cases, counter = INJECTIONS[name]
        caught: dict[str, list[str]] = collections.defaultdict(list)
        busy: dict[str, int] = collections.Counter()
        message: dict[str, str] = {}
        for i in range(runs):
            rc, path = pytest(out, f"inject-{name}-{i}", [], inject=name, select=" or ".join(cases))
            if not path.is_file():
                raise SystemExit(f"inject {name} {i}: exit {rc}, no record; see {out / f'inject-{name}-{i}.log'}")
            rec = loads_record(path.read_text(), str(path))
            for v in rec.verdicts:
                if v.status == "regressed":
                    caught[v.case_id].append(v.metric)
                    if v.metric == counter or v.case_id not in message:
                        message[v.case_id] = words.line(v)
                    busy[v.case_id] += v.metric == "busy_time"
            print(f"inject {name} {i}: exit {rc}", flush=True)
        for r in sorted({r.id for r in rec.results}):
            by = collections.Counter(caught.get(r, []))
            rows.append((r, name, f"{counter} {by.get(counter, 0)}/{runs}", f"busy {busy.get(r, 0)}/{runs}",
                         ", ".join(f"{m} {n}/{runs}" for m, n in sorted(by.items()) if m != counter) or "-",
                         (message.get(r, "not caught"))[:200]))
    print(f"\n{datetime.date.today()}: injected regressions, each judged against the unchanged baseline, {runs} runs")
    print(f"{'case':22} {'injection':12} {'caught by':14} {'busy time':10} {'also':28} message")
    for row in rows:
        print(f"{row[0]:22} {row[1]:12} {row[2]:14} {row[3]:10} {row[4]:28} {row[5]}")


def cost(out: Path, paths: list[str]) -> None:
    """What counting costs `pytest --perfguard PATHS` (default suites/), two ways: one run with it against
    the mean of two without it (benchmarks/no_counting.py, which leaves out the pass and the profiler's
    first start), one either side, after an unmeasured run that fills the compile caches; and, within
    the run with it, each case's counting pass (Counters.wall_s) over the run's wall time."""
    plugins = out / "plugins"  # the reference plugin alone on the path, not every script of benchmarks/
    plugins.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "benchmarks" / "no_counting.py", plugins)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(plugins), os.environ.get("PYTHONPATH", "")])}

    def run(name: str, extra: list[str]) -> tuple[float, int, Path]:
        report = out / name
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, *paths, "--perfguard",
                               f"--perfguard-report={report}", f"--perfguard-baselines={out / f'{name}-baselines'}"],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        (out / f"{name}.log").write_text(done.stdout + done.stderr)
        return time.perf_counter() - started, done.returncode, report / "perfguard.json"

    # Each case once, unmeasured, first: Triton's compile cache and the first import of every module are
    # then paid by no measured run (on an H200 the run with counting went first and paid them: 113.8 s
    # against 90.1 s, of which its counting passes were 7.7 s). Then without, with, without: a drift
    # over the three runs (the card warming, the page cache) falls on both sides alike.
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths], cwd=ROOT, env=env,
                   capture_output=True, text=True)
    bare1, rc1, _ = run("cost-without-1", ["-p", "no_counting"])
    wall, rc, path = run("cost", [])
    bare2, rc2, _ = run("cost-without-2", ["-p", "no_counting"])
    bare = (bare1 + bare2) / 2
    rec = loads_record(path.read_text(), "cost")
    counted = sum(r.counters.wall_s or 0 for r in rec.results if r.counters)
    problems = [r.counters_problem for r in rec.results if r.counters_problem]
    print(f"\n{datetime.date.today()}: pytest --perfguard {' '.join(paths)}, {plural(len(rec.results), 'case')}, run without counting, "
          f"with it, without again: {bare1:.1f} s (exit {rc1}), {wall:.1f} s (exit {rc}), {bare2:.1f} s (exit {rc2}): "
          f"{100 * (wall / bare - 1):+.1f}% wall time with counting against the mean without; within the run with it, "
          f"the counting passes took {counted:.1f} s = {100 * counted / wall:.1f}% of it; {len(problems)} case(s) without counters")
    for line in problems[:5]:
        print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stages", nargs="*", help="record, judge and/or inject (default: all three)")
    parser.add_argument("--nanogpt", type=Path, required=True, help="the folder holding nanoGPT's model.py")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3, help="runs of judge and of each injection")
    parser.add_argument("--record-runs", type=int, default=None,
                        help="the baseline's runs (default: --runs); five make a card's own busy-time tolerance 1%%")
    parser.add_argument("--inject", nargs="*", default=list(INJECTIONS), choices=list(INJECTIONS))
    parser.add_argument("--cost-paths", nargs="+", default=["suites/"], help="what the cost stage runs (default: suites/)")
    args = parser.parse_args()
    args.stages = args.stages or ["record", "judge", "inject"]
    if set(args.stages) - {"record", "judge", "inject", "cost"}:
        parser.error(f"stages are record, judge, inject and cost, got {' '.join(args.stages)}")
    if not (args.nanogpt / "model.py").is_file():
        parser.error(f"{args.nanogpt}: no model.py there; pass --nanogpt the folder of nanoGPT's model.py")
    os.environ["NANOGPT_DIR"] = str(args.nanogpt.resolve())
    out = args.out.resolve()
    (out / "cases").mkdir(parents=True, exist_ok=True)
    (out / "cases" / "test_work_cases.py").write_text(CASES)
    if "record" in args.stages:
        record(out, args.record_runs or args.runs)
    if "judge" in args.stages:
        judge(out, args.runs)
    if "inject" in args.stages:
        inject(out, args.runs, args.inject)
    if "cost" in args.stages:
        cost(out, args.cost_paths)
    summary = {"date": str(datetime.date.today()), "stages": args.stages}
    (out / "summary.json").write_text(json.dumps(summary))


if __name__ == "__main__":
    main()
