#!/usr/bin/env bash
# `ringtrain data import-cifar` as a user runs it: a small archive in the official python
# layout (tests/support/make_cifar_archives.py) imports, saying on stderr that its MD5 is not the
# published one and what it wrote; `data inspect` and the start of training show where the file
# came from; an existing output is refused without --force (exit 1); `data synth` and
# `data convert` record their provenance too. Exits 77 (skipped) without /usr/bin/python3 and
# numpy.
#   tests/e2e/import_cifar.sh build/ringtrain
set -eu
bin=$1
maker=$(dirname "$0")/../support/make_cifar_archives.py
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  echo "import_cifar: skipped: no /usr/bin/python3 with numpy to write the archive"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL $*"; cat "$dir/err" "$dir/out" 2>/dev/null; exit 1; }

/usr/bin/python3 "$maker" py2 ok "$dir/cifar-10-python.tar.gz" --per-batch 40
archive=$(readlink -f "$dir/cifar-10-python.tar.gz")
md5=$(md5sum "$archive" | cut -d ' ' -f 1)
"$bin" data import-cifar "$dir/cifar-10-python.tar.gz" "$dir/c.h5" 2>"$dir/err" ||
  fail "import: exit $?"
grep -qF "import-cifar: warning: $dir/cifar-10-python.tar.gz: MD5 $md5 is not the published MD5" \
  "$dir/err" || fail "import: no MD5 warning"
grep -qF "import-cifar: read cifar-10-batches-py/test_batch: 40 images" "$dir/err" ||
  fail "import: no progress line"
grep -qF "import-cifar: wrote $dir/c.h5: 200 train and 40 test images, 10 classes" "$dir/err" ||
  fail "import: no summary"

rc=0
"$bin" data import-cifar "$dir/cifar-10-python.tar.gz" "$dir/c.h5" 2>"$dir/err" || rc=$?
[ "$rc" -eq 1 ] || fail "existing output: exit $rc, want 1"
grep -qF "ringtrain: error: data import-cifar: $dir/c.h5: exists: pass --force to replace it" \
  "$dir/err" || fail "existing output: message"
"$bin" data import-cifar "$dir/cifar-10-python.tar.gz" "$dir/c.h5" --force --gzip 9 2>"$dir/err" ||
  fail "--force: exit $?"

"$bin" data inspect "$dir/c.h5" >"$dir/out"
grep -qF "  importer: ringtrain data import-cifar" "$dir/out" || fail "inspect: importer"
grep -qF "  source_md5: $md5" "$dir/out" || fail "inspect: md5"
grep -qF "  source_md5_published: no" "$dir/out" || fail "inspect: published"
grep -qF "  source_path: $archive" "$dir/out" || fail "inspect: source"

"$bin" train --data "$dir/c.h5" --depth 18 --width 0.125 --batch-size 20 --steps 1 \
  --log-interval 0 >"$dir/out" 2>&1 || fail "train: exit $?"
grep -qE "data: $dir/c.h5, imported by ringtrain data import-cifar [0-9.]+ from $archive \(md5 $md5, NOT the published one\), content xxh64 [0-9a-f]{16}$" \
  "$dir/out" || fail "train: no provenance line"

"$bin" data synth --out "$dir/s.h5" --train 64 --test 32 --seed 7 2>"$dir/err"
"$bin" data inspect "$dir/s.h5" >"$dir/out"
grep -qF "  seed: 7" "$dir/out" || fail "synth: seed"
grep -qF "  generator: make_synthetic: 64 train and 32 test images 32x32x3, 10 classes" "$dir/out" ||
  fail "synth: generator"

# The binary archive imported, and its folder converted: the same content, the same hash.
/usr/bin/python3 "$maker" bin ok "$dir/cifar-10-binary.tar.gz"
"$bin" data import-cifar "$dir/cifar-10-binary.tar.gz" "$dir/b.h5" 2>"$dir/err"
tar -xzf "$dir/cifar-10-binary.tar.gz" -C "$dir"
"$bin" data convert "$dir/cifar-10-batches-bin" --out "$dir/folder.h5" 2>"$dir/err"
"$bin" data inspect "$dir/folder.h5" >"$dir/out"
grep -qF "  importer: ringtrain data convert" "$dir/out" || fail "convert: importer"
grep -qF "  source_dir: $(readlink -f "$dir/cifar-10-batches-bin")" "$dir/out" ||
  fail "convert: source"
hash_of() { "$bin" data inspect "$1" | awk '$1 == "content_xxh64:" {print $2}'; }
imported=$(hash_of "$dir/b.h5")
if [ -z "$imported" ] || [ "$imported" != "$(hash_of "$dir/folder.h5")" ]; then
  fail "convert and import-cifar of one content: content_xxh64 differs"
fi

echo "import_cifar: ok"
