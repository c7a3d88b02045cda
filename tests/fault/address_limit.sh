#!/usr/bin/env bash
# Under an address-space limit (ulimit -v) every command ends, never hangs: OpenBLAS is pinned to
# one thread before its library constructor starts its pool (whose thread spun at exit, deaf to
# SIGTERM, under a limit of about 1.0-1.15 GiB). At each limit `--version` and a small `data
# synth` either finish or fail at once (a library that cannot be mapped); a tiny CPU training run
# passes at the documented 1.4 GB. `timeout` guards every run, so a hang fails the test.
source "$(dirname "$0")/common.sh"
under_asan && skip_all "under AddressSanitizer (its shadow memory exceeds the limits)"
fail_log=$dir/err

# limited KIB COMMAND...: COMMAND under ulimit -v KIB, 20 s at most; its status.
limited() {
  local kib=$1
  shift
  (ulimit -v "$kib" && exec timeout -k 5 20 "$@") >"$dir/out" 2>"$dir/err" </dev/null
}

for kib in 1000000 1050000 1100000 1150000 1200000; do
  for run in "--version" "data synth --out $dir/s$kib.h5 --train 64 --test 8 --height 8 --width 8"; do
    # shellcheck disable=SC2086 # the command's words
    limited "$kib" "$bin" $run
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      fail "ulimit -v $kib: '$run' still running after 20 s"
    else
      ok "ulimit -v $kib: '$run' ended (exit $rc)"
    fi
  done
done

"$bin" data synth --out "$dir/small.h5" --train 64 --test 16 --height 16 --width 16 >/dev/null
if limited 1400000 "$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 --threads 1 \
  --workers 1 --no-eval --log-interval 0 --steps 2 --batch-size 16 --checkpoint-dir "$dir/ck"; then
  ok "ulimit -v 1400000: a tiny CPU training run passes"
else
  fail "ulimit -v 1400000: a tiny CPU training run"
fi
finish address_limit
