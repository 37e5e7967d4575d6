#!/usr/bin/env bash
# Issue 31: re-record a GPU model's baseline for the current perfguard, one card at a time (issue 48: a new model's).
#   bash benchmarks/rerecord.sh BASELINE.json|none OUTDIR [RUNS [PYTEST ARGS...]]   (e.g. 3 -k 'rms_norm and 32768')
# Adds RUNS (default 3) runs of `pytest --perfguard --perfguard-update suites/` on this machine's card to a
# copy of BASELINE.json (OUTDIR/baselines/, its name kept), one process each, so that each run is the
# unit of evidence; with `none`, to a new file of this card's model (its first run begins the series).
# A card the file already holds runs of is refused: a held machine stays the same card, and more runs
# of one card do not tell the card-to-card offset (DESIGN §5). Each card's file of a new model is
# recorded from `none` and the cards' files folded together afterwards (`perfguard baseline merge`):
# a second card's runs added to the first card's series would be judged by one card's spread.
set -uo pipefail
src=${1:?baseline file, or none}; out=${2:?output folder}; runs=${3:-3}; shift $(( $# < 3 ? $# : 3 ))
mkdir -p "$out/baselines"
[ "$src" = none ] || cp "$src" "$out/baselines/"
export PYTHONUNBUFFERED=1
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/perfguard-pycache; fi
plugin=()
# Not installable here: run from the tree, naming the plugin, since then it is no pytest11 entry point.
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || { export PYTHONPATH=$PWD; plugin=(-p perfguard.plugin); }
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n 1)
echo "card $uuid"
if [ "$src" != none ] && grep -q "\"$uuid\"" "$src"; then echo "refused: $src already holds runs of $uuid"; exit 3; fi
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  python3 -m pytest -q -p no:cacheprovider "${plugin[@]}" --perfguard --perfguard-update --perfguard-baselines="$out/baselines" \
    --perfguard-report="$out/run$i" "$@" suites/ >"$out/run$i.log" 2>&1
  echo "run $i: exit $? in $(( $(date +%s) - start )) s: $(tail -n 1 "$out/run$i.log")"
done
