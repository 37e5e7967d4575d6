#!/usr/bin/env bash
# Everything perfguard checks on a GPU, in one command, printing a short table at the end.
#   bash benchmarks/gpu.sh OUTDIR accuracy    GPU tests, the suites twice (record + A/A), accuracy.py
#   bash benchmarks/gpu.sh OUTDIR detection   detection.py (false alarms and detection rates)
# It installs perfguard without dependencies (the GPU image has torch, triton, scipy, NVML...).
set -uo pipefail
out=${1:?output folder}; stage=${2:-accuracy}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
case "$stage" in
accuracy)
  python3 -m pytest -q -p no:cacheprovider -m gpu tests/ 2>&1 | tail -n 15
  rm -f "$out/nvidia-h200.json"
  python3 -m pytest -q -p no:cacheprovider --perfguard --perfguard-update --perfguard-report "$out/record1" \
    --perfguard-baselines "$out/baselines" suites/ 2>&1 | tail -n 45
  python3 -m pytest -q -p no:cacheprovider --perfguard --perfguard-report "$out/record2" \
    --perfguard-baselines "$out/baselines" suites/ 2>&1 | grep -E "verdicts:|regressed|unstable|improved|passed|failed"
  python3 benchmarks/accuracy.py --json "$out/accuracy.json" | tail -n 40
  ;;
detection)
  python3 benchmarks/detection.py --json "$out/detection.json"
  ;;
esac
