#!/usr/bin/env bash
# `ringtrain eval` and `ringtrain predict` on a tiny trained model: eval's loss is the final
# test loss training reported for the same checkpoint; two ranks under mpirun print exactly what
# one process prints (the same counts and confusion matrix in the JSON); predict on PNG files
# cut out of the test split gives the classes eval confirms on an HDF5 file of the same images
# labelled with them; and the error paths give one clear line and the right exit status.
#   tests/e2e/eval_predict.sh MPIEXEC build/ringtrain
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
# passed MESSAGE: says ok when no check failed since `before=$failures`.
passed() { [ "$failures" -eq "$before" ] && echo "ok   $1"; }
py=/usr/bin/python3 # with Debian's python3-numpy and python3-h5py (env/install_deps.sh)
"$py" -c "import numpy, h5py" 2>/dev/null || {
  echo "SKIP: $py with numpy and h5py is needed to write the test images"
  exit 77
}

"$bin" data synth --out "$dir/d.h5" --train 256 --test 100 --height 12 --width 12 --classes 6 \
  >/dev/null
"$bin" train --data "$dir/d.h5" --depth 18 --width 0.125 --batch-size 32 --epochs 1 \
  --device cpu --threads 1 --workers 1 --checkpoint-dir "$dir/ck" --checkpoint-every 8 \
  --metrics "$dir/metrics.jsonl" >"$dir/train.log" 2>&1 || fail "train: exit status $?" "$dir/train.log"
ck="$dir/ck/ckpt-step00000008.h5"
ev=(eval --checkpoint "$ck" --data "$dir/d.h5" --device cpu --threads 1 --workers 1)

# eval's loss is the test loss of the last epoch: to the 4 decimals both print, and to 1e-9
# relative in full (the same batches of 32, the training's, through the same weights; only the
# sum's order may differ). eval's own default batch of 256 gives results that differ from
# those of batches of 32 by about one f32 rounding of the logits (1e-9 of the loss here).
before=$failures
if "$bin" "${ev[@]}" --batch-size 32 --out "$dir/same.json" >"$dir/same.txt" 2>"$dir/eval.err" &&
  "$bin" "${ev[@]}" --out "$dir/one.json" >"$dir/one.txt" 2>>"$dir/eval.err"; then
  printed=$(sed -n 's/.*epoch 1 done:.* test loss \([0-9.]*\) acc.*/\1/p' "$dir/train.log")
  grep -q "^loss $printed " "$dir/same.txt" || fail "eval loss is not the training's $printed" "$dir/same.txt"
  "$py" - "$dir/metrics.jsonl" "$dir/same.json" <<'PY' || fail "eval loss differs from metrics test_loss"
import json, sys
want = json.loads(open(sys.argv[1]).readlines()[-1])["test_loss"]
got = json.load(open(sys.argv[2]))
assert abs(got["loss"] - want) <= 1e-9 * abs(want), (got["loss"], want)
assert got["count"] == 100 and len(got["confusion"]) == 6, got
assert sum(map(sum, got["confusion"])) == 100
PY
  passed "eval loss equals training's final test loss ($printed)"
else
  fail "eval: exit status $?" "$dir/eval.err"
fi

# Two ranks each take half of the test split; the reduced result is the one-process one.
before=$failures
if timeout 120 "$mpiexec" -n 2 --oversubscribe "$bin" "${ev[@]}" --out "$dir/two.json" \
  >"$dir/two.txt" 2>"$dir/two.err"; then
  cmp -s "$dir/one.txt" "$dir/two.txt" || { fail "two ranks print another result"; diff "$dir/one.txt" "$dir/two.txt"; }
  "$py" - "$dir/one.json" "$dir/two.json" <<'PY' || fail "two ranks: JSON differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert abs(a.pop("loss") - b.pop("loss")) <= 1e-9 * 5, "loss"
assert a == b, (a, b)
PY
  passed "mpirun -np 2 eval equals the one-process eval"
else
  fail "two ranks: exit status $?" "$dir/two.err"
fi

# A batch larger than the images a rank evaluates is clamped to them, saying so once: eval's
# --batch-size 65536 on the 100 test images takes the memory of a batch of 100 (peak RSS within
# 1.5 times that run's, where the unclamped loader's buffers alone are 113 MB), and so does
# train's --eval-batch-size.
before=$failures
# rss ERR COMMAND...: runs COMMAND (stderr to ERR) and prints its peak RSS in KiB.
rss() {
  "$py" -c 'import resource, subprocess, sys
status = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], "w")).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(status)' "$@"
}
if fitted=$(rss "$dir/fitted.err" "$bin" "${ev[@]}" --batch-size 100) &&
  huge=$(rss "$dir/huge.err" "$bin" "${ev[@]}" --batch-size 65536); then
  [ "$(grep -c "batch-size 65536 is more than the 100 images each rank evaluates: batches of 100" "$dir/huge.err")" -eq 1 ] ||
    fail "eval --batch-size 65536: the clamp to 100 is not logged once" "$dir/huge.err"
  [ "$huge" -le $((fitted * 3 / 2)) ] || fail "eval --batch-size 65536: peak RSS $huge KiB, batch of 100 $fitted KiB"
  passed "eval --batch-size 65536 on 100 images: batches of 100, peak RSS $huge KiB (batch of 100: $fitted KiB)"
else
  fail "eval with large batches: exit status $?" "$dir/huge.err"
fi
before=$failures
"$bin" train --data "$dir/d.h5" --depth 18 --width 0.125 --batch-size 32 --eval-batch-size 65536 \
  --steps 1 --device cpu --threads 1 --workers 1 >"$dir/train_eval.log" 2>&1 ||
  fail "train --eval-batch-size 65536: exit status $?" "$dir/train_eval.log"
grep -q "eval-batch-size 65536 is more than the 100 images each rank evaluates: batches of 100" "$dir/train_eval.log" ||
  fail "train --eval-batch-size 65536: the clamp to 100 is not logged" "$dir/train_eval.log"
passed "train --eval-batch-size 65536: test batches of 100"

# predict on PNG files of the first 8 test images; then eval on those images labelled with the
# predicted classes must find every one right.
"$py" - "$dir" <<'PY'
import h5py, numpy as np, struct, sys, zlib
d = sys.argv[1]
def png(path, img):  # 8-bit RGB, no filter
    h, w, _ = img.shape
    raw = b"".join(b"\0" + img[y].tobytes() for y in range(h))
    chunk = lambda t, data: struct.pack(">I", len(data)) + t + data + struct.pack(">I", zlib.crc32(t + data))
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
with h5py.File(f"{d}/d.h5") as f:
    for i in range(8):
        png(f"{d}/img{i}.png", f["test/images"][i])
PY
images=()
for i in 0 1 2 3 4 5 6 7; do images+=("$dir/img$i.png"); done
before=$failures
if "$bin" predict --checkpoint "$ck" --device cpu --json "${images[@]}" >"$dir/pred.json" 2>"$dir/pred.err"; then
  "$py" - "$dir" <<'PY' || fail "predicted classes are not eval's"
import h5py, json, numpy as np, sys
d = sys.argv[1]
pred = json.load(open(f"{d}/pred.json"))["predictions"]
assert len(pred) == 8 and all(len(p["top"]) == 5 for p in pred), pred
for p in pred:
    probs = [t["probability"] for t in p["top"]]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-9, probs
top1 = np.array([p["top"][0]["class"] for p in pred], dtype=np.int64)
with h5py.File(f"{d}/d.h5") as src, h5py.File(f"{d}/pred.h5", "w") as out:
    for k, v in src.attrs.items():
        out.attrs[k] = v
    out["train/images"] = src["train/images"][:]
    out["train/labels"] = src["train/labels"][:]
    out["test/images"] = src["test/images"][:8]
    out["test/labels"] = top1
PY
  "$bin" "${ev[@]/$dir\/d.h5/$dir/pred.h5}" >"$dir/pred.txt" 2>&1 || fail "eval of the predicted labels: exit status $?" "$dir/pred.txt"
  grep -q "^loss [0-9.]*  top-1 100.00%" "$dir/pred.txt" || fail "eval disagrees with predict" "$dir/pred.txt"
  grep -q "split test, 8 images" "$dir/pred.txt" || fail "eval of the predicted labels: not 8 images" "$dir/pred.txt"
  passed "predict on PNG files gives eval's classes"
else
  fail "predict: exit status $?" "$dir/pred.err"
fi
"$bin" predict --checkpoint "$ck" --device cpu --top 2 "$dir/img0.png" >"$dir/text.txt" 2>&1
grep -q "^  2\. .*%$" "$dir/text.txt" && ! grep -q "^  3\." "$dir/text.txt" ||
  fail "predict --top 2: not two classes" "$dir/text.txt"

# expect STATUS PATTERN ARGS...: the command fails with STATUS and says PATTERN on stderr.
expect() {
  local want=$1 pattern=$2
  shift 2
  "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -q -- "$pattern" "$dir/err"; then
    fail "$* : want status $want and '$pattern', got $rc" "$dir/err"
  else
    echo "ok   status $rc: $(grep -m1 -- "$pattern" "$dir/err")"
  fi
}
"$bin" data synth --out "$dir/small.h5" --train 8 --test 8 --height 8 --width 8 --classes 6 >/dev/null
"$bin" data synth --out "$dir/three.h5" --train 8 --test 8 --height 12 --width 12 --classes 3 >/dev/null
printf 'not an image' >"$dir/corrupt.png"
"$py" - "$dir" <<'PY'  # d.h5 with its class names in the reverse order
import h5py, sys
d = sys.argv[1]
with h5py.File(f"{d}/d.h5") as src, h5py.File(f"{d}/renamed.h5", "w") as out:
    for name in ("train/images", "train/labels", "test/images", "test/labels"):
        out[name] = src[name][:]
    out.attrs["classes"] = [c.decode() if isinstance(c, bytes) else c for c in src.attrs["classes"]][::-1]
PY
expect 1 "$dir/none.h5" "$bin" eval --checkpoint "$dir/none.h5" --data "$dir/d.h5" --device cpu
expect 2 "trained on 12x12x3 images" "$bin" "${ev[@]/$dir\/d.h5/$dir/small.h5}"
expect 2 "has 3 classes, but .* was trained on 6" "$bin" "${ev[@]/$dir\/d.h5/$dir/three.h5}"
expect 2 "has 3 classes" timeout 120 "$mpiexec" -n 2 --oversubscribe "$bin" "${ev[@]/$dir\/d.h5/$dir/three.h5}"
expect 2 "class 0 of .* is 'pattern5', but in .* it is 'pattern0'" "$bin" "${ev[@]/$dir\/d.h5/$dir/renamed.h5}"
expect 2 "batch-size" "$bin" "${ev[@]}" --batch-size 0
"$bin" "${ev[@]}" --out "$dir/new/folder/out.json" >/dev/null 2>&1 && [ -s "$dir/new/folder/out.json" ] ||
  fail "eval --out into a new folder: no report written" "$dir/err"
touch "$dir/a_file"
expect 1 "eval --out: cannot create the folder $dir/a_file/sub" "$bin" "${ev[@]}" --out "$dir/a_file/sub/out.json"
expect 1 "$dir/missing.png" "$bin" predict --checkpoint "$ck" --device cpu "$dir/img0.png" "$dir/missing.png"
grep -q "^$dir/img0.png$" "$dir/out" || fail "predict stopped at a missing image" "$dir/out"
expect 1 "$dir/corrupt.png" "$bin" predict --checkpoint "$ck" --device cpu "$dir/corrupt.png"
expect 2 "top" "$bin" predict --checkpoint "$ck" --top 0 "$dir/img0.png"
expect 1 "$dir/none.h5" "$bin" predict --checkpoint "$dir/none.h5" --device cpu "$dir/img0.png"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all eval and predict checks passed"
