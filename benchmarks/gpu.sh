#!/usr/bin/env bash
# Everything perfguard checks on a GPU, in one command; full logs in OUTDIR, a short summary printed.
#   bash benchmarks/gpu.sh OUTDIR [tests] [suites] [accuracy] [detection]   (default: all four)
#   tests      the gpu-marked tests
#   suites     `pytest --perfguard --perfguard-update suites/` into OUTDIR/baselines, then again as an
#              A/A check against that fresh baseline (no case may regress)
#   accuracy   benchmarks/accuracy.py (perfguard against triton's do_bench)
#   detection  benchmarks/detection.py (false alarms and detection rates of the gate)
#   xdist      benchmarks/xdist_scaling.py (-n 1 against -n 2: speed-up, GPUs, figures); not in the default
# perfguard is installed without dependencies: the GPU image has torch, triton, scipy and NVML.
set -uo pipefail
out=${1:?output folder}; shift
stages=${*:-tests suites accuracy detection}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw,power.limit --format=csv,noheader
for stage in $stages; do
  echo "== $stage"
  case "$stage" in
  tests)
    python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/ >"$out/gpu-tests.log" 2>&1
    tail -n 6 "$out/gpu-tests.log" ;;
  suites)
    pg="python3 -m pytest -q -p no:cacheprovider --perfguard --perfguard-baselines=$out/baselines suites/"
    $pg --perfguard-update --perfguard-report="$out/record1" >"$out/suites.log" 2>&1
    grep -E "verdicts:|passed|failed" "$out/suites.log"
    $pg --perfguard-report="$out/record2" >>"$out/suites.log" 2>&1
    grep -E "verdicts:|passed|failed" "$out/suites.log" | tail -n 2
    grep -E "^[a-z_0-9]+\[.*: latency (regressed|unstable|improved)" "$out/suites.log" | cut -c1-220 ;;
  accuracy)
    python3 benchmarks/accuracy.py --json "$out/accuracy.json" >"$out/accuracy.log" 2>&1
    sed -n '/^case /,$p' "$out/accuracy.log" ;;
  detection)
    python3 benchmarks/detection.py --json "$out/detection.json" 2>&1 | tee "$out/detection.log" ;;
  xdist)
    python3 benchmarks/xdist_scaling.py --out "$out/xdist" 2>&1 | tee "$out/xdist.log" ;;
  esac
done
rm -f "$out"/baselines/*.lock
