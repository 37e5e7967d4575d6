#!/usr/bin/env bash
# The README's first screen, run for real: docs/example_ops.py recorded five times, gated unchanged,
# then gated with the regression (an extra copy of the result), the change accepted by the command
# the failure prints, run as printed, and gated again. Prints what the README quotes.
#   bash benchmarks/readme_example.sh OUTDIR
set -uo pipefail
out=${1:?output folder}; mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d); cp "$here/docs/example_ops.py" "$work/test_ops.py"; cd "$work" || exit 2
echo "# $(date -u +%F) on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no GPU')"
for i in 1 2 3 4 5; do
  python3 -m pytest -q -p no:cacheprovider --perfguard --perfguard-update test_ops.py >"$out/record$i.log" 2>&1
done
echo '$ pytest --perfguard --perfguard-update test_ops.py   # 5 times'; sed -n "/^=* perfguard =*$/,\$p" "$out/record5.log"
echo '$ pytest --perfguard test_ops.py'
python3 -m pytest -q -p no:cacheprovider --perfguard test_ops.py >"$out/gate.log" 2>&1; echo "exit $?"; sed -n "/^=* perfguard =*$/,\$p" "$out/gate.log"
echo '$ pytest --perfguard test_ops.py   # with the extra copy'
PERFGUARD_EXAMPLE_CLONE=1 python3 -m pytest -q -p no:cacheprovider --perfguard test_ops.py >"$out/slow.log" 2>&1; echo "exit $?"
cat "$out/slow.log"
# The summary's accept command: its own line or the next (lines are wrapped to the terminal; a command never is).
accept=$(tr '\n' ' ' <"$out/slow.log" | grep -o 'to accept these changes into the baseline: *`[^`]*`' | tail -n 1 | sed 's/^[^`]*`\(.*\)`$/\1/')
echo "\$ $accept"
eval "$accept" >"$out/accept.log" 2>&1; echo "exit $?"; cat "$out/accept.log"
echo '$ pytest --perfguard test_ops.py   # the accepted change'
PERFGUARD_EXAMPLE_CLONE=1 python3 -m pytest -q -p no:cacheprovider --perfguard test_ops.py >"$out/after.log" 2>&1; echo "exit $?"
tail -n 8 "$out/after.log"
cp -r baselines reports "$out/" 2>/dev/null
