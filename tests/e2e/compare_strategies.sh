#!/usr/bin/env bash
# jobs/compare_strategies.sh end to end on the CPU with 2 replicas/ranks: three configurations
# trained, one Markdown table printed and written (images/s, step time per phase, GPU
# utilisation '-' on CPUs, the ratio to DDP with the tuned loader), the CSV and JSON written
# with a row each, and the picture drawn; then, with a launcher that fails, the DDP rows are
# marked failed, the DataParallel row still comes out and the script exits 1.
#   tests/e2e/compare_strategies.sh MPIEXEC build/ringtrain
set -u
mpiexec=$1
bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
root=$(cd "$(dirname "$0")/../.." && pwd)
"$bin" data synth --out "$dir/small.h5" --train 512 --test 64 --height 16 --width 16 >/dev/null
model=(--data "$dir/small.h5" --depth 18 --width 0.125)
if ! RINGTRAIN=$bin MPIRUN=$mpiexec OUT="$dir/out" STEPS=6 DEVICES=2 GLOBAL_BATCH=16 timeout 300 \
  bash "$root/jobs/compare_strategies.sh" "${model[@]}" >"$dir/log" 2>&1; then
  echo "FAIL compare_strategies: exit status $?"
  cat "$dir/log"
  exit 1
fi
failures=0
check() {
  if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi
}
# row TABLE LABEL: the table's row of that configuration, one cell per line.
row() { grep "^| $2 |" "$1" | tr '|' '\n' | sed 's/^ *//; s/ *$//' | sed '1,2d'; }
header="| configuration | img/s | step ms | data | copy | replicate | scatter | forward | backward |"
header+=" comm | optimizer | GPU util | vs DDP tuned |"
check "the table's header names every phase" 'grep -qxF "$header" "$dir/out/compare.md"'
check "the table printed is the table written" 'grep -qxF "$header" "$dir/log"'
check "table has the three configurations" \
  '[ "$(grep -cE "^\| (DataParallel|DDP), (sync|tuned) loader \|" "$dir/out/compare.md")" -eq 3 ]'
check "DDP tuned is the 1.00x reference" \
  '[ "$(row "$dir/out/compare.md" "DDP, tuned loader" | sed -n 12p)" = 1.00x ]'
check "every row has img/s, step time, forward, comm and optimizer numbers" \
  '! grep "^| [DP]" "$dir/out/compare.md" | awk -F"|" "\$3 !~ /[0-9]/ || \$4 !~ /[0-9]/ ||
     \$9 !~ /[0-9]/ || \$11 !~ /[0-9]/ || \$12 !~ /[0-9]/" | grep -q .'
check "DDP rows have a backward phase" \
  '[ "$(row "$dir/out/compare.md" "DDP, sync loader" | sed -n 8p)" != - ]'
check "GPU utilisation is '-' on CPUs" \
  '[ "$(grep "^| [DP]" "$dir/out/compare.md" | awk -F"|" "{print \$13}" | sort -u)" = " - " ]'
check "CSV has a header and three rows" '[ "$(wc -l <"$dir/out/compare.csv")" -eq 4 ]'
check "JSON has three rows" \
  'python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))) == 3" "$dir/out/compare.json"'
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  check "picture drawn" \
    '/usr/bin/python3 "$root/tools/plot_runs.py" "$dir/out" >/dev/null && [ -s "$dir/out/compare.png" ]'
else
  echo "skip picture: no matplotlib for /usr/bin/python3 (Debian's python3-matplotlib)"
fi
RINGTRAIN=$bin MPIRUN=false OUT="$dir/fail" STEPS=2 DEVICES=2 GLOBAL_BATCH=16 timeout 300 \
  bash "$root/jobs/compare_strategies.sh" "${model[@]}" >"$dir/fail.log" 2>&1
status=$?
check "a failing configuration: exit 1" '[ "$status" -eq 1 ]'
check "a failing configuration: its rows say failed, the DataParallel row has numbers" \
  '[ "$(grep -c "^| DDP, .* | failed |" "$dir/fail/compare.md")" -eq 2 ] &&
   [[ "$(row "$dir/fail/compare.md" "DataParallel, sync loader" | sed -n 1p)" =~ ^[0-9.]+$ ]]'
check "a failing configuration: the failure is named" \
  'grep -q "failed: ddp_sync ddp_tuned" "$dir/fail.log"'
[ "$failures" -eq 0 ] || cat "$dir/log" "$dir/fail.log"
[ "$failures" -eq 0 ]
