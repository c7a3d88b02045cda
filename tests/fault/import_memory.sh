#!/usr/bin/env bash
# The importers under an address-space limit (prlimit --as, as `ulimit -v` sets it), on inputs
# crafted to take memory: a CIFAR archive whose small gzip holds a pickle of MEMOIZE opcodes, a
# member larger than any CIFAR file, more images than a CIFAR archive holds; PNGs that decode to
# hundreds of MB each, and --size asking for gigabytes from tiny images. Each ends in one clear
# error naming the member or the memory needed and the limit, well under the limit, or imports
# within it (the decodes in flight bounded by a share of the limit). The archive cases need
# /usr/bin/python3 with numpy (tests/support/make_cifar_archives.py) and are skipped without.
#   RINGTRAIN=build/ringtrain bash tests/fault/import_memory.sh
source "$(dirname "$0")/common.sh"
bin=$(realpath "$bin")
fail_log=$dir/err
maker=$(dirname "$0")/../support/make_cifar_archives.py
# Note: OpenBLAS reserves buffers per thread when the binary loads; one thread keeps that small,
# so the limits below measure the importers.
export OPENBLAS_NUM_THREADS=1
command -v prlimit >/dev/null || skip_all "no prlimit (util-linux)"
under_asan && skip_all "under AddressSanitizer (its shadow memory exceeds the limits)"

# Note: the binary's shared libraries take address space before the importer takes any (the
# CUDA ones alone some 800 MiB, in a build that has them), so every limit below is what the
# importer may take beside them: MB plus the size of the libraries the binary loads.
libs_mb=$(ldd "$bin" | awk '/=>/ {print $3}' | xargs stat -Lc %s |
  awk '{s += $1} END {print int(s / 1048576)}')
echo "limits: each plus the binary's $libs_mb MiB of shared libraries"

# limited MB NAME COMMAND...: COMMAND under an address-space limit of MB MiB (beside the
# libraries) and a 60 s timeout;
# its exit status in `rc`, its stderr in $dir/err. False (after counting a failure) when it timed
# out or was killed by a signal.
limited() {
  local mb=$1 name=$2
  shift 2
  rc=0
  (cd "$dir" && timeout 60 prlimit --as=$(((mb + libs_mb) << 20)) "$@") >"$dir/out" 2>"$dir/err" \
    </dev/null || rc=$?
  if [ "$rc" -eq 124 ]; then fail "$name: still running after 60 s"; return 1; fi
  if [ "$rc" -ge 128 ]; then fail "$name: killed by signal $((rc - 128))"; return 1; fi
}

# refused MB NAME EXPECTED COMMAND...: COMMAND under that limit ends with exit status 1 and
# EXPECTED on stderr.
refused() {
  local mb=$1 name=$2 expected=$3
  shift 3
  limited "$mb" "$name" "$@" || return
  if [ "$rc" -ne 1 ]; then fail "$name: exit status $rc, want 1"; return; fi
  if ! grep -qF -- "$expected" "$dir/err"; then fail "$name: stderr lacks '$expected'"; return; fi
  echo "ok   $name (under $mb MiB): $(tail -n 1 "$dir/err")"
}

if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  skip "cifar_*" "no /usr/bin/python3 with numpy to write the archives"
else
  for variant in memo huge many; do
    /usr/bin/python3 "$maker" p4 "$variant" "$dir/$variant.tar.gz" ||
      fail "cifar_$variant: the archive maker failed"
  done
  refused 1024 cifar_memo \
    "memo.tar.gz: cifar-10-batches-py/data_batch_1: pickle: byte 1048579, opcode MEMOIZE (0x94): more than 1048576 memo entries" \
    "$bin" data import-cifar "$dir/memo.tar.gz" "$dir/memo.h5"
  refused 1024 cifar_huge_member \
    "huge.tar.gz: cifar-10-batches-py/data_batch_1: a member of 253450180 bytes, more than the 166400000 bytes any CIFAR file takes" \
    "$bin" data import-cifar "$dir/huge.tar.gz" "$dir/huge.h5"
  refused 1024 cifar_too_many_images \
    "many.tar.gz: cifar-10-batches-py/test_batch: brings the archive to 72000 images, more than the 60000 a CIFAR archive holds" \
    "$bin" data import-cifar "$dir/many.tar.gz" "$dir/many.h5"
  if [ -e "$dir/memo.h5" ] || [ -e "$dir/huge.h5" ] || [ -e "$dir/many.h5" ]; then
    fail "cifar: a refused archive left an output"
  fi
fi

# png FILE SIDE: an RGB PNG of SIDE x SIDE black pixels (SIDE^2 x 3 bytes decoded, a few hundred
# KB on disk).
png() {
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
side = int(sys.argv[2])
z = zlib.compressobj(9)
idat = b"".join(z.compress(bytes(1 + 3 * side)) for _ in range(side)) + z.flush()
ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
with open(sys.argv[1], "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
EOF
}

# Four PNGs of 8192x8192, 201 MB each decoded: four workers decoding at once would need 805 MB.
# Under 700 MiB the decodes in flight share half of what the limit leaves, so they take turns.
png "$dir/big.png" 8192 || fail "png: the PNG writer failed"
for file in train/a/1.png train/a/2.png test/a/1.png test/a/2.png; do
  mkdir -p "$dir/big/$(dirname "$file")"
  cp "$dir/big.png" "$dir/big/$file"
done
if limited 700 large_sources_take_turns "$bin" data import-images "$dir/big" "$dir/big32.h5" \
  --size 32 --workers 4; then
  if [ "$rc" -eq 0 ] && grep -qF "wrote $dir/big32.h5: 2 train and 2 test images" "$dir/err"; then
    echo "ok   large_sources_take_turns (under 700 MiB): $(tail -n 1 "$dir/err")"
  else
    fail "large_sources_take_turns: exit status $rc under 700 MiB"
  fi
fi
# Stored at their own size they would take 805 MB, and three times that while the HDF5 file is
# built in memory: refused before decoding, naming the limit.
refused 1024 large_sources_stored_whole \
  "4 images of 8192x8192 RGB, with the HDF5 file built from them in memory, need 2.42 GB, more than the" \
  "$bin" data import-images "$dir/big" "$dir/big.h5"
grep -qF "under its address-space limit (ulimit -v): pass --size HxW" "$dir/err" ||
  fail "large_sources_stored_whole: the limit or the remedy is not named"

# Eight 8x8 images asked for at 16384x16384: 6.4 GB stored, refused before anything is decoded.
for file in train/a/1.png train/b/1.png test/a/1.png test/b/1.png; do
  mkdir -p "$dir/tiny/$(dirname "$file")"
  png "$dir/tiny/$file" 8
  cp "$dir/tiny/$file" "$dir/tiny/${file%1.png}2.png"
done
refused 2048 size_beyond_memory \
  "8 images of 16384x16384 RGB, with the HDF5 file built from them in memory, need 19.33 GB" \
  "$bin" data import-images "$dir/tiny" "$dir/tiny.h5" --size 16384
grep -qF "pass a smaller --size" "$dir/err" || fail "size_beyond_memory: no remedy"

finish import_memory
