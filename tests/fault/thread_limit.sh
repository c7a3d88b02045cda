#!/usr/bin/env bash
# When the system refuses a loader or compute thread (ulimit -u: RLIMIT_NPROC counts every thread of the
# user), the run ends with one clear error naming the thread and a non-zero exit, never an abort
# while joining threads that never started. RLIMIT_NPROC does not bind root, so as root the run
# is made as user nobody (setpriv); the limit is raised step by step from where MPI cannot even
# start until the threads under test (the loader's, the compute pool's) are what fails.
for tool in prlimit setpriv; do
  command -v "$tool" >/dev/null || { echo "skip thread_limit: no $tool"; exit 77; }
done
source "$(dirname "$0")/common.sh"
chmod 777 "$dir"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  "${as_user[@]}" true 2>/dev/null || skip_all "setpriv cannot switch to nobody"
fi
# LeakSanitizer's tracer is one more thread the limit would refuse; OpenBLAS's own threads, which
# it cannot do without (it exits), are not the ones under test.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" TMPDIR=$dir
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

timeout 20 "$bin" data synth --out "$dir/small.h5" --train 64 --test 32 --height 16 --width 16 \
  >"$dir/out" 2>&1 || { echo "FAIL data synth"; cat "$dir/out"; exit 1; }
chmod 644 "$dir/small.h5"

# scan WHAT FLAGS...: the limit raised from where MPI cannot even start until the run fails at
# thread 2 or later of WHAT's 64: the threads already started are joined, the error is clean.
scan() {
  local what=$1 limit rc line
  shift
  for limit in $(seq 4 64); do
    # The previous run's MPI helper processes count against the limit until they are gone.
    for _ in $(seq 50); do pgrep -u 65534 >/dev/null || break; sleep 0.1; done
    rc=0
    timeout 30 "${as_user[@]}" prlimit --nproc="$limit" "$bin" train --data "$dir/small.h5" \
      --depth 18 --width 0.125 --batch-size 16 --steps 1 --checkpoint-dir "$dir/ckpt" \
      --trace-dir "$dir/trace" "$@" >"$dir/out" 2>&1 || rc=$?
    if [ "$rc" -ge 124 ]; then
      echo "FAIL $what, --nproc $limit: exit status $rc (a signal or a hang, want a clean error)"
      tail -n 5 "$dir/out"
      return 1
    fi
    [ "$rc" -ne 0 ] || { echo "FAIL $what, --nproc $limit: 64 threads started"; return 1; }
    line=$(grep "^ringtrain: error: cannot start $what thread [0-9]* of 64: .* (ulimit -u?)" "$dir/out")
    [ -n "$line" ] || continue  # MPI itself could not start
    if [ "$rc" -ne 1 ] || [ "$(grep -c "error" "$dir/out")" -ne 1 ]; then
      echo "FAIL $what, --nproc $limit: exit status $rc, or more than one error line"
      cat "$dir/out"
      return 1
    fi
    echo "ok   $what, --nproc $limit: exit status 1: $line"
    grep -q "thread 1 of 64" <<<"$line" || return 0
  done
  echo "FAIL $what: no limit up to 64 reached its threads"
  return 1
}

scan loader --threads 1 --workers 64 || failures=$((failures + 1))
scan compute --threads 65 --workers 0 || failures=$((failures + 1))
finish thread_limit
