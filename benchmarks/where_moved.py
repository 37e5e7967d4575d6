"""Where a time moved (issue 45), on code nobody here wrote: nanoGPT's model.py as published
(suites/models/nanogpt), GPT-2 small under train.py's precision (bf16 autocast, TF32), a forward and a
training step, judged against a baseline of its unchanged code, with changes injected from outside
model.py.

    python3 benchmarks/where_moved.py --out OUT [record] [aa] [inject] [ab] [--runs N] [--record-runs N]

- record: N fresh `pytest --perfguard --perfguard-update` processes of the unchanged cases (OUT/baselines);
- aa: N fresh runs of the unchanged cases against it: what each time verdict names (nothing should be
  named beyond its noise);
- inject: each change below, one run against the unchanged baseline: each time (and memory) verdict's
  `where:` line, and whether it names the kernel (operator) the change touched first;
- ab: `perfguard ab` of each change in --ab (a git repository whose head commit makes it), --ab-rounds a side:
  the `where:` lines of its moved times.

Changes (PERFGUARD_INJECT, read by the case file): `wider_mlp` (each block's MLP 5x wide instead of 4x),
`fp32_linear` (the LM head outside autocast, in float32), `noncontig_ln` (the final layer norm given a
transposed, non-contiguous input) and `extra_kernel` (one more elementwise op a block). Without CUDA it
runs a small GPT on the CPU (a trial of the script: operators, not kernels).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # perfguard from the tree; work_counters.py beside

from perfguard import store  # noqa: E402
from perfguard.analysis import moved  # noqa: E402
from perfguard.model import loads_record  # noqa: E402
from perfguard.report import words  # noqa: E402
from work_counters import pytest as run_cases  # noqa: E402  (the cases of OUT/cases, PERFGUARD_INJECT set)

UNPROFILED = ["--perfguard-profile=none"]  # no profile pass after a regression: a run is one measurement

# Each change, and the words a where: line names the kernel (operator) it touched by.
INJECTIONS = {
    "wider_mlp": ("gemm", "nvjet", "addmm", "mm", "linear"),  # nvjet_sm90_*: cuBLAS's GEMM kernels on Hopper
    "fp32_linear": ("gemm", "nvjet", "addmm", "mm", "linear"),
    "noncontig_ln": ("layer_norm", "copy", "elementwise"),
    "extra_kernel": ("MulFunctor", "mul", "elementwise"),
}

# The case `ab` times for each change: the one whose GPU time the change moves (the gate's runs show which;
# a round of one case is half a round of both).
AB_CASE = {"wider_mlp": "gpt_train_step", "fp32_linear": "gpt_train_step", "noncontig_ln": "gpt_train_step",
           "extra_kernel": "gpt_forward"}

CASES = '''
import contextlib
import os

import torch

from perfguard import perf_case
from suites.models.nanogpt import model as nanogpt  # nanoGPT's model.py as published

INJECT = os.environ.get("PERFGUARD_INJECT", "none")
CUDA = torch.cuda.is_available()

if INJECT == "extra_kernel":  # one more elementwise op a block, model.py untouched
    _forward = nanogpt.Block.forward
    nanogpt.Block.forward = lambda self, x: _forward(self, x) * 1.0

torch.backends.cuda.matmul.allow_tf32 = True  # train.py's precision
torch.backends.cudnn.allow_tf32 = True


def _config():
    if not CUDA:
        return nanogpt.GPTConfig(block_size=64, vocab_size=512, n_layer=2, n_head=2, n_embd=64, dropout=0.0)
    return nanogpt.GPTConfig(block_size=1024, vocab_size=50304, n_layer=12, n_head=12, n_embd=768, dropout=0.0)


def _model(device):
    torch.manual_seed(0)
    model = nanogpt.GPT(_config())
    n = model.config.n_embd
    if INJECT == "wider_mlp":  # 5x wide instead of 4x: the same kernels, more work in two of them a block
        for block in model.transformer.h:
            block.mlp.c_fc = torch.nn.Linear(n, 5 * n, bias=model.config.bias)
            block.mlp.c_proj = torch.nn.Linear(5 * n, n, bias=model.config.bias)
    if INJECT == "fp32_linear":  # the LM head in float32, outside autocast
        head = model.lm_head

        def fp32_head(x):
            with torch.autocast(device_type=device, enabled=False):
                return torch.nn.functional.linear(x.float(), head.weight)

        head.forward = fp32_head
    if INJECT == "noncontig_ln":  # the final layer norm given a transposed, non-contiguous input
        ln = model.transformer.ln_f
        plain = ln.forward
        ln.forward = lambda x: plain(x.transpose(0, 1)).transpose(0, 1)
    return model.to(device)


def _amp(device):
    return torch.amp.autocast(device_type="cuda", dtype=torch.bfloat16) if device == "cuda" else contextlib.nullcontext()


def _tokens(model, batch, device):
    t = 256 if CUDA else 16
    return torch.randint(0, model.config.vocab_size, (batch, t), device=device)


@perf_case(params={"batch": [8]}, budget_s=0.4)
def gpt_forward(batch, device):
    model = _model(device).eval()
    idx, ctx = _tokens(model, batch, device), _amp(device)

    @torch.no_grad()
    def call():
        with ctx:
            return model(idx)[0]

    return call


@perf_case(params={"batch": [8]}, budget_s=0.4)
def gpt_train_step(batch, device):
    model = _model(device).train()
    opt = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), device)
    idx, targets, ctx = _tokens(model, batch, device), _tokens(model, batch, device), _amp(device)

    def step():
        with ctx:
            loss = model(idx, targets)[1]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step
'''


def where_lines(path: Path) -> list[str]:
    """Each verdict of a record that says where it moved (a time, or memory): "case metric status: where: ..."."""
    rec = loads_record(path.read_text(), str(path))
    return [f"{v.case_id} {v.metric} {v.status} ({v.change_pct:+.1f}%): {words.where_line(v)}"
            for v in rec.verdicts if v.where is not None]


def named_first(line: str, change: str) -> str:
    said = line.partition("where: ")[2].split(" ")[0]
    if said in ("its", "spread"):  # "its N rows moved the other way in all", "spread over N rows": no culprit
        return "names none"
    return "named first" if any(word.lower() in said.lower() for word in INJECTIONS[change]) else f"first: {said}"


def record(out: Path, runs: int) -> None:
    for i in range(runs):
        started = time.perf_counter()
        rc, path = run_cases(out, f"record-{i}", [*UNPROFILED, "--perfguard-update"])
        print(f"record {i}: exit {rc}, {time.perf_counter() - started:.0f} s", flush=True)


def aa(out: Path, runs: int) -> None:
    print(f"\n{datetime.date.today()}: {runs} runs of the unchanged cases against their baseline")
    for i in range(runs):
        rc, path = run_cases(out, f"aa-{i}", UNPROFILED)
        if not path.is_file():
            raise SystemExit(f"aa {i}: exit {rc}, no record; see {out / f'aa-{i}.log'}")
        rec = loads_record(path.read_text(), str(path))
        statuses = sorted(f"{v.case_id} {v.metric} {v.status}" for v in rec.verdicts if v.metric in moved.ATTRIBUTED)
        print(f"aa {i}: exit {rc}; {'; '.join(statuses)}")
        # Every time, moved or not, compared row by row with the baseline's (against the verdict's
        # tolerance, as the gate attaches it): what would be named.
        (baseline,) = store.list_files(out / "baselines")
        cases = store.load_file(baseline).cases
        tolerance = {(v.case_id, v.metric): v.tolerance_pct or 0.0 for v in rec.verdicts}
        for r in rec.results:
            for metric in ("busy_time", r.judged_metric, "peak_memory"):
                w = moved.where(metric, cases[r.id].result, r, tolerance.get((r.id, metric), 0.0)) if r.id in cases else None
                if w is not None:
                    named = ", ".join(f"{row.name[:60]} {words.row_figures(row, w.by)}" for row in w.culprits) or "nothing"
                    print(f"  {r.id} {metric}: {len(w.rows)} {w.by}s compared, beyond their noise: {named}")


def inject(out: Path, which: list[str]) -> None:
    print(f"\n{datetime.date.today()}: each change, one run against the unchanged baseline")
    for change in which:
        rc, path = run_cases(out, f"inject-{change}", UNPROFILED, inject=change)
        if not path.is_file():
            raise SystemExit(f"inject {change}: exit {rc}, no record; see {out / f'inject-{change}.log'}")
        lines = where_lines(path)
        print(f"{change}: exit {rc}, {len(lines)} verdict(s) that moved")
        for line in lines:
            print(f"  {line}  [{named_first(line, change)}]")


def ab(out: Path, which: list[str], rounds: int) -> None:
    print(f"\n{datetime.date.today()}: perfguard ab, the unchanged cases (base) against each change (head), {rounds} rounds a side")
    for change in which:
        repo = out / f"ab-{change}"
        shutil.rmtree(repo, ignore_errors=True)
        (repo / "suites").mkdir(parents=True)
        shutil.copytree(ROOT / "suites" / "models", repo / "suites" / "models")
        (repo / "suites" / "__init__.py").write_text("")
        (repo / "test_where.py").write_text(CASES)
        git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
        git("init", "-q")
        git("add", "-A")
        git("-c", "user.name=pg", "-c", "user.email=pg@x", "commit", "-qm", "base")
        (repo / "test_where.py").write_text(CASES.replace('os.environ.get("PERFGUARD_INJECT", "none")', repr(change)))
        git("-c", "user.name=pg", "-c", "user.email=pg@x", "commit", "-qam", "head")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        done = subprocess.run([sys.executable, "-m", "perfguard.cli", "ab", "--base", "HEAD~1", "--rounds", str(rounds),
                               "--max-rounds", str(rounds), "--report", str(out / f"ab-{change}-report"), "--",
                               "-p", "no:cacheprovider", "--perfguard-profile=none", "test_where.py", "-k", AB_CASE[change]],
                              cwd=repo, env=env, capture_output=True, text=True)
        (out / f"ab-{change}.log").write_text(done.stdout + done.stderr)
        path = out / f"ab-{change}-report" / "perfguard.json"
        lines = where_lines(path) if path.is_file() else []
        print(f"{change}: exit {done.returncode}, {len(lines)} verdict(s) that moved")
        for line in lines:
            print(f"  {line}  [{named_first(line, change)}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stages", nargs="*", help="record, aa, inject and/or ab (default: all)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3, help="runs of aa")
    parser.add_argument("--record-runs", type=int, default=3)
    parser.add_argument("--inject", nargs="*", default=list(INJECTIONS), choices=list(INJECTIONS))
    parser.add_argument("--ab", nargs="*", default=["wider_mlp", "extra_kernel"], choices=list(INJECTIONS))
    parser.add_argument("--ab-rounds", type=int, default=5, help="perfguard ab's rounds a side (2 leave its times inconclusive)")
    args = parser.parse_args()
    stages = args.stages or ["record", "aa", "inject", "ab"]
    if set(stages) - {"record", "aa", "inject", "ab"}:
        parser.error(f"stages are record, aa, inject and ab, got {' '.join(stages)}")
    out = args.out.resolve()
    (out / "cases" / "suites").mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "suites" / "models", out / "cases" / "suites" / "models", dirs_exist_ok=True)
    (out / "cases" / "suites" / "__init__.py").write_text("")
    (out / "cases" / "test_where.py").write_text(CASES)
    if "record" in stages:
        record(out, args.record_runs)
    if "aa" in stages:
        aa(out, args.runs)
    if "inject" in stages:
        inject(out, args.inject)
    if "ab" in stages:
        ab(out, args.ab, args.ab_rounds)


if __name__ == "__main__":
    main()
