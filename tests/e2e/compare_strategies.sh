#!/usr/bin/env bash
# jobs/compare_strategies.sh end to end on the CPU with 2 replicas/ranks: three configurations
# trained, one table printed, the CSV and JSON written with a row each, and the picture drawn.
#   tests/e2e/compare_strategies.sh MPIEXEC build/ringtrain
set -u
mpiexec=$1
bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
root=$(cd "$(dirname "$0")/../.." && pwd)
"$bin" data synth --out "$dir/small.h5" --train 512 --test 64 --height 16 --width 16 >/dev/null
if ! RINGTRAIN=$bin MPIRUN=$mpiexec OUT="$dir/out" STEPS=6 DEVICES=2 GLOBAL_BATCH=16 timeout 300 \
  bash "$root/jobs/compare_strategies.sh" --data "$dir/small.h5" --depth 18 --width 0.125 \
  >"$dir/log" 2>&1; then
  echo "FAIL compare_strategies: exit status $?"
  cat "$dir/log"
  exit 1
fi
failures=0
check() {
  if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi
}
check "table has the three configurations" \
  '[ "$(grep -cE "^(DataParallel|DDP), (sync|tuned) loader" "$dir/log")" -eq 3 ]'
check "baseline speed-up is 1.00x" 'grep -q "^DataParallel, sync loader .* 1.00x" "$dir/log"'
check "CSV has a header and three rows" '[ "$(wc -l <"$dir/out/compare.csv")" -eq 4 ]'
check "JSON has three rows" \
  'python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))) == 3" "$dir/out/compare.json"'
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  check "picture drawn" \
    '/usr/bin/python3 "$root/tools/plot_runs.py" "$dir/out" >/dev/null && [ -s "$dir/out/compare.png" ]'
else
  echo "skip picture: no matplotlib for /usr/bin/python3 (Debian's python3-matplotlib)"
fi
[ "$failures" -eq 0 ] || cat "$dir/log"
[ "$failures" -eq 0 ]
