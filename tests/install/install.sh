#!/usr/bin/env bash
# `cmake --install` of this build into a temporary prefix, used as a user and as a library:
# runs the installed binary (its version, a two-step training on a tiny synthetic file writing
# checkpoints), then builds tests/install/consumer against the installed CMake package, runs it
# on the final checkpoint and checks its logits against reference_logits.py (numpy), and its
# errors for a missing checkpoint and for a truncated one.
#   tests/install/install.sh CMAKE BUILD_DIR [configure arguments for the consumer...]
set -eu
cmake=$1
build=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
prefix=$dir/prefix
fail() { echo "install: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" >"$dir/install.log"
for f in bin/ringtrain bin/ringtrain-plot-runs include/ringtrain/core/version.hpp \
  include/ringtrain/nn/resnet.hpp include/ringtrain/backend/cpu/cpu_backend.hpp \
  share/doc/ringtrain/README.md share/doc/ringtrain/ARCHITECTURE.md \
  share/ringtrain/jobs/job_common.sh; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
[ -x "$prefix/share/ringtrain/jobs/quickstart.sh" ] || fail "the job scripts lost their x bit"
config=$(find "$prefix" -name ringtrainConfig.cmake)
[ -n "$config" ] || fail "no ringtrainConfig.cmake under $prefix"
for f in ringtrainConfigVersion.cmake ringtrainTargets.cmake; do
  [ -e "$(dirname "$config")/$f" ] || fail "$f is not installed beside $config"
done
! grep -rq "$(cd "$build" && pwd)" "$(dirname "$config")" || fail "the package refers to the build tree"

! ldd "$prefix/bin/ringtrain" | grep "not found" || fail "bin/ringtrain misses shared libraries"
runpath() { readelf -d "$1" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p' | sed 's/:$//'; }
[ "$(runpath "$prefix/bin/ringtrain")" = "$(runpath "$build/ringtrain")" ] ||
  fail "bin/ringtrain's RUNPATH '$(runpath "$prefix/bin/ringtrain")' is not the build's"
version=$(sed -n 's/^#define RINGTRAIN_VERSION "\(.*\)"$/\1/p' "$prefix/include/ringtrain/core/version.hpp")
"$prefix/bin/ringtrain" --version >"$dir/version"
case "$(head -1 "$dir/version")" in
  "ringtrain $version ("*) ;;
  *) fail "bin/ringtrain --version does not start with ringtrain $version: $(head -1 "$dir/version")" ;;
esac
"$prefix/bin/ringtrain" data synth --out "$dir/tiny.h5" --train 16 --test 8 --height 16 --width 16
"$prefix/bin/ringtrain" train --data "$dir/tiny.h5" --depth 18 --width 0.0625 --steps 2 \
  --batch-size 4 --checkpoint-dir "$dir/ckpt" --checkpoint-every 1 --log-interval 0 >"$dir/train.log" 2>&1 ||
  { cat "$dir/train.log"; fail "the installed ringtrain train failed"; }
step1=$dir/ckpt/ckpt-step00000001.h5
step2=$dir/ckpt/ckpt-step00000002.h5
{ [ -f "$step1" ] && [ -f "$step2" ]; } || fail "train wrote no checkpoints of steps 1 and 2"

"$cmake" -S "$here/consumer" -B "$dir/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@" >"$dir/consumer.log" 2>&1 ||
  { cat "$dir/consumer.log"; fail "find_package(ringtrain) failed"; }
grep -qx "ringtrain_DIR:PATH=$(dirname "$config")" "$dir/consumer/CMakeCache.txt" ||
  fail "the consumer found another ringtrain than $prefix's"
"$cmake" --build "$dir/consumer" >>"$dir/consumer.log" 2>&1 ||
  { cat "$dir/consumer.log"; fail "the consumer does not build against the installed package"; }

consumer=$dir/consumer/consumer
"$consumer" "$step2" >"$dir/out2"
"$consumer" "$step1" >"$dir/out1"
cat "$dir/out2"
class=$(sed -n 's/^class \([0-9]*\) pattern\1$/\1/p' "$dir/out2")
{ [ -n "$class" ] && [ "$class" -ge 0 ] && [ "$class" -lt 10 ]; } || fail "no class in 0..9 with its name printed"
[ "$(head -1 "$dir/out2" | wc -w)" -eq 10 ] || fail "not 10 logits"
! cmp -s "$dir/out1" "$dir/out2" || fail "the checkpoints of steps 1 and 2 give the same logits"
python=
for p in python3 /usr/bin/python3; do
  if "$p" -c "import h5py, numpy" 2>/dev/null; then python=$p; break; fi
done
if [ -z "$python" ]; then
  echo "skip reference logits: no python3 with numpy and h5py (apt install python3-h5py)"
else
  "$python" "$here/reference_logits.py" "$step2" "$dir/out2" ||
    fail "the consumer's logits differ from the reference"
fi

# Errors come through the library as one line naming the file, and exit 1.
rc=0
"$consumer" "$dir/missing.h5" 2>"$dir/err" || rc=$?
{ [ "$rc" -eq 1 ] && grep -q "missing.h5" "$dir/err"; } || { cat "$dir/err"; fail "missing checkpoint"; }
head -c 20000 "$step2" >"$dir/torn.h5"
rc=0
"$consumer" "$dir/torn.h5" 2>"$dir/err" || rc=$?
{ [ "$rc" -eq 1 ] && grep -q "torn.h5" "$dir/err"; } || { cat "$dir/err"; fail "truncated checkpoint"; }
[ "$(wc -l <"$dir/err")" -eq 1 ] || { cat "$dir/err"; fail "the error is not one line"; }
echo "install: ok"
