#!/usr/bin/env bash
# Everything perfguard checks on a GPU, in one command; full logs in OUTDIR, a short summary printed.
#   bash benchmarks/gpu.sh OUTDIR [tests] [calibrate] [suites] [explain] [profile] [accuracy] [record] [judge] [detection] [xdist]
#   (default: tests calibrate suites explain profile accuracy detection)
#   tests      the gpu-marked tests
#   calibrate  `perfguard calibrate` into OUTDIR/baselines (the suites below are placed against it)
#   suites     `pytest --perfguard -n auto --perfguard-update suites/` into OUTDIR/baselines, then again as
#              an A/A check against that fresh baseline (no case may regress); records in OUTDIR/record1, record2
#   explain    benchmarks/explain.py on record2: issue 4's bounds, Triton vs torch, the training-step breakdown
#   profile    a few suites again with --perfguard-profile=all: top operator and kernels per call per case
#   accuracy   benchmarks/accuracy.py (perfguard against triton's do_bench)
#   record     benchmarks/detection.py record: a baseline of RUNS (default 5) runs of the suites in OUTDIR/record
#   judge      benchmarks/detection.py judge: 3 runs of the unchanged suites against JUDGE_BASELINES (a folder
#              recorded on another host), verdicts counted per run, in OUTDIR/judge
#   detection  benchmarks/detection.py inject: injected slowdowns (x1.03, x1.05, x1.10) and an extra buffer on
#              36 memory-bound cases, against a 5-run baseline, in OUTDIR/inject
#   xdist      benchmarks/xdist_scaling.py (-n 1, 2, 4, 8 as many GPUs as visible: speed-ups, fixed share); not in the default
#   ab         benchmarks/ab_sensitivity.py: perfguard ab on 1%, 2%, 3% slowdowns and A/A, in OUTDIR/ab; AB_ARGS
#              (default --runs 3) are its arguments: one device call is at most 600 s, so e.g.
#              AB_ARGS="--runs 1 --budget 540" for one run to a call
#   workscale  benchmarks/work_scaling_probe.py: ab's slowdowns timed by hand (how much 1%, 2%, 3% more work
#              costs each case), without perfguard
#   counters   issue 19: benchmarks/work_counters.py on nanoGPT's model.py (NANOGPT=its folder) and ResNet-50:
#              WC_STAGES (default record judge inject), a RUNS-run baseline (default 5), 3 runs each, in OUTDIR/wc
#   cost       issue 19.5: pytest --perfguard suites/ with and without the counting pass
#   owncard    issue 20.2: benchmarks/own_card.py (OWN_CARD_SUITES, default suites/): this card's own runs against the fleet's
#   retained   issue 19.2: benchmarks/retained_memory.py on nanoGPT's model.py (NANOGPT=its folder): gradients kept
#              between steps and a 1 MiB leak a call caught 3/3, an A/A, and a batch sweep's footprint fit
#   models     issue 12: benchmarks/model_precision.py in 3 fresh processes (GPT-2 batch-1 forward against
#              hand measurement) and benchmarks/host_overhead.py (injected host work), in OUTDIR/host
# perfguard is installed without dependencies: the GPU image has torch, triton, scipy and NVML.
# On the lent device machine at most 8 files of $OUT come back: give a folder outside it and pack that,
#   bash benchmarks/gpu.sh /tmp/g counters; tar czf "$OUT/g.tgz" -C /tmp g
set -uo pipefail
out=${1:?output folder}; shift
stages=${*:-tests calibrate suites explain profile accuracy detection}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# The GPU image sets PYTHONDONTWRITEBYTECODE=1, so every Python process there compiles torch's sources
# again (import torch: 5.8 s against 2.1 s with bytecode, measured); an installed package has its
# bytecode. Keep it, as an install would, so that per-process start-up is what users see.
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/perfguard-pycache; fi
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw,power.limit --format=csv,noheader
for stage in $stages; do
  echo "== $stage"
  case "$stage" in
  tests)
    python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/ >"$out/gpu-tests.log" 2>&1
    tail -n 6 "$out/gpu-tests.log" ;;
  calibrate)
    perfguard calibrate --baselines "$out/baselines" 2>&1 | tee "$out/calibrate.log" ;;
  explain)
    python3 benchmarks/explain.py "$out/record2/perfguard.json" 2>&1 | tee "$out/explain.log" ;;
  profile)
    python3 -m pytest -q -p no:cacheprovider --perfguard --perfguard-profile=all --perfguard-baselines="$out/baselines" \
      --perfguard-report="$out/profile" suites/test_matmul.py suites/test_elementwise.py suites/test_training_step.py \
      suites/test_triton_softmax.py >"$out/profile.log" 2>&1
    tail -n 1 "$out/profile.log"
    python3 - "$out/profile/perfguard.json" <<'PY'
import sys
from perfguard.model import loads_record
record = loads_record(open(sys.argv[1]).read(), sys.argv[1])
for r in record.results:
    p = r.profile
    top = p.ops[0] if p and p.ops else None
    print(f"{r.id[:60]:60} kernels/call {p.kernels_per_call if p else None!s:>5}  top {top.operator[:50] if top else p.problem if p else None}")
PY
    ;;
  suites)
    pg="python3 -m pytest -q -p no:cacheprovider --perfguard -n auto --perfguard-baselines=$out/baselines suites/"
    $pg --perfguard-update --perfguard-report="$out/record1" >"$out/suites.log" 2>&1
    grep -E "verdicts \(one per metric\)|passed|failed" "$out/suites.log"
    $pg --perfguard-report="$out/record2" >>"$out/suites.log" 2>&1
    grep -E "verdicts \(one per metric\)|passed|failed" "$out/suites.log" | tail -n 2
    grep -E "^[a-z_0-9]+\[.*: (gpu|caller)_time (regressed|unstable|improved)" "$out/suites.log" | cut -c1-220 ;;
  accuracy)
    python3 benchmarks/accuracy.py --json "$out/accuracy.json" >"$out/accuracy.log" 2>&1
    sed -n '/^case /,$p' "$out/accuracy.log" ;;
  record)
    python3 benchmarks/detection.py record "$out/record" --runs "${RUNS:-5}" 2>&1 | tee "$out/record.log" ;;
  judge)
    python3 benchmarks/detection.py judge "$out/judge" "${JUDGE_BASELINES:?set JUDGE_BASELINES to a baselines folder}" 2>&1 | tee "$out/judge.log" ;;
  detection)
    python3 benchmarks/detection.py inject "$out/inject" 2>&1 | tee "$out/detection.log" ;;
  models)
    for i in 1 2 3; do python3 benchmarks/model_precision.py 2>&1 | grep -v -i warn; done | tee "$out/model-precision.log"
    python3 benchmarks/host_overhead.py "$out/host" 2>&1 | tee "$out/host-overhead.log" ;;
  xdist)
    python3 benchmarks/xdist_scaling.py --out "$out/xdist" 2>&1 | tee "$out/xdist.log" ;;
  ab)
    python3 benchmarks/ab_sensitivity.py --out "$out/ab" ${AB_ARGS:-} 2>&1 | tee "$out/ab.log" ;;
  workscale)
    python3 benchmarks/work_scaling_probe.py 2>&1 | tee "$out/work-scaling.log" ;;
  counters)
    python3 benchmarks/work_counters.py --nanogpt "${NANOGPT:?set NANOGPT to the folder holding nanoGPT model.py}" \
      --out "$out/wc" ${WC_STAGES:-record judge inject} --record-runs "${RUNS:-5}" --runs 3 ${WC_ARGS:-} 2>&1 \
      | grep -v -i warn | tee "$out/work-counters.log" ;;
  cost)
    python3 benchmarks/work_counters.py --nanogpt "${NANOGPT:?set NANOGPT}" --out "$out/wc-cost" cost 2>&1 | tee "$out/cost.log" ;;
  owncard)
    python3 benchmarks/own_card.py "$out/own-card" -- -n auto ${OWN_CARD_SUITES:-suites/} 2>&1 | tee "$out/own-card.log" ;;
  retained)
    python3 benchmarks/retained_memory.py --nanogpt "${NANOGPT:?set NANOGPT to the folder holding nanoGPT model.py}" 2>&1 \
      | grep -v -i warn | tee "$out/retained-memory.log" ;;
  esac
done
rm -f "$out"/baselines/*.lock
