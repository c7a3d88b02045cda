#!/usr/bin/env bash
# `data import-images` and `data import-cifar` on folders and paths a user can get wrong: links
# to folders inside a class folder (one to the folder itself stored each image ~40 times; two
# made the walk exponential) are not followed, and the summary says so; class folders named with
# bytes that are not UTF-8, a newline, a zero-width space, a byte order mark, a right-to-left
# override or a line separator, or only white space, and two folders whose names are equal in NFC
# (composed and decomposed accents), are usage errors (exit 2) naming the folder with those
# bytes escaped; an output that is the input archive, or lies inside a split folder, is a usage error
# (exit 2) and nothing is written; an empty folder path is a usage error; a signal during the
# write leaves no temporary file.
#   RINGTRAIN=build/ringtrain bash tests/fault/import_inputs.sh
source "$(dirname "$0")/common.sh"
bin=$(realpath "$bin")
fail_log=$dir/err
export OPENBLAS_NUM_THREADS=1

# run NAME COMMAND...: COMMAND within 30 s; its exit status in `rc`, its stderr in $dir/err.
# False (after counting a failure) when it timed out.
run() {
  local name=$1
  shift
  rc=0
  (cd "$dir" && timeout 30 "$@") >"$dir/out" 2>"$dir/err" </dev/null || rc=$?
  if [ "$rc" -eq 124 ]; then fail "$name: still running after 30 s"; return 1; fi
}

# refused NAME STATUS EXPECTED COMMAND...: COMMAND ends with STATUS and EXPECTED on stderr.
refused() {
  local name=$1 status=$2 expected=$3
  shift 3
  run "$name" "$@" || return
  if [ "$rc" -ne "$status" ]; then fail "$name: exit status $rc, want $status"; return; fi
  if ! grep -qF -- "$expected" "$dir/err"; then fail "$name: stderr lacks '$expected'"; return; fi
  echo "ok   $name: $(grep -m 1 '^ringtrain: error: ' "$dir/err")"
}

# tree DIR CLASS...: DIR/train/CLASS/{0,1}.png and DIR/test/CLASS/0.png, 4x4 RGB PNGs.
tree() {
  local root=$1
  shift
  /usr/bin/python3 - "$root" "$@" <<'EOF'
import os, struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
raw = b"".join(b"\0" + bytes(range(12)) for _ in range(4))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0)) +
       chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
root = os.fsencode(sys.argv[1])
for name in map(os.fsencode, sys.argv[2:]):
    for split, count in ((b"train", 2), (b"test", 1)):
        os.makedirs(os.path.join(root, split, name), exist_ok=True)
        for i in range(count):
            with open(os.path.join(root, split, name, b"%d.png" % i), "wb") as f:
                f.write(png)
EOF
}

# Links to folders inside a class folder: one to the folder itself, then a second beside it.
tree "$dir/links" a b
ln -s . "$dir/links/train/a/self"
for links in 1 2; do
  if [ "$links" -eq 2 ]; then ln -s . "$dir/links/train/a/again"; fi
  run "links_$links" "$bin" data import-images "$dir/links" "$dir/links.h5" --force || continue
  if [ "$rc" -ne 0 ]; then
    fail "links_$links: exit status $rc"
  elif ! grep -qF "wrote $dir/links.h5: 4 train and 2 test images" "$dir/err"; then
    fail "links_$links: not each image once: $(grep wrote "$dir/err")"
  elif ! grep -qF "warning: did not follow $links links to folders inside class folders (the first: $dir/links/train/a/" "$dir/err"; then
    fail "links_$links: the links passed over are not said"
  else
    echo "ok   links_$links: $(grep 'did not follow' "$dir/err")"
  fi
done

# Class folder names: bytes 0xFF 0xFE (not UTF-8), a newline.
tree "$dir/bytes" "$(printf 'c\xff\xfe')"
refused class_not_utf8 2 \
  "data import-images: $dir/bytes/train: class folder 'c\\xff\\xfe' is not valid UTF-8 (byte \\xff at offset 1): class names are stored as UTF-8 text: rename the folder" \
  "$bin" data import-images "$dir/bytes" "$dir/bytes.h5"
tree "$dir/newline" "$(printf 'do\ng')"
refused class_with_newline 2 \
  "class folder 'do\\x0ag' holds a control character (U+000A at offset 2), which would hide or break the name where it is shown: rename the folder" \
  "$bin" data import-images "$dir/newline" "$dir/newline.h5"
# Invisible or line-breaking characters: zero-width space, byte order mark, right-to-left
# override, line separator; a name of white space only; "café" composed and decomposed.
for invisible in 'ca\xe2\x80\x8bt' '\xef\xbb\xbfcat' 'dog\xe2\x80\xaetac' 'a\xe2\x80\xa8b'; do
  tree "$dir/invisible" cat "$(printf %b "$invisible")"
  refused "class_with_$invisible" 2 "class folder '$invisible' holds " \
    "$bin" data import-images "$dir/invisible" "$dir/invisible.h5"
  rm -rf "$dir/invisible"
done
tree "$dir/blank" cat "$(printf ' \xc2\xa0')"
refused class_blank 2 "is blank (only white space): rename the folder" \
  "$bin" data import-images "$dir/blank" "$dir/blank.h5"
tree "$dir/nfc" "$(printf 'caf\xc3\xa9')" "$(printf 'cafe\xcc\x81')"
refused class_nfc_twins 2 \
  "$dir/nfc/train: class folders 0 '$(printf 'cafe\xcc\x81')' and 1 '$(printf 'caf\xc3\xa9')' are the same name (equal in Unicode's NFC form, as they show): rename one of the folders" \
  "$bin" data import-images "$dir/nfc" "$dir/nfc.h5"
for name in bytes newline invisible blank nfc; do
  if [ -e "$dir/$name.h5" ]; then fail "class names: $name.h5 was left"; fi
done

# An output that is an input: the archive itself (by another spelling and by a hard link), a
# file inside a class folder.
printf 'the archive\n' >"$dir/archive.tar.gz"
ln "$dir/archive.tar.gz" "$dir/hardlink.tar.gz"
refused output_is_archive 2 \
  "data import-cifar: ./archive.tar.gz is $dir/archive.tar.gz, which this command reads: write the output elsewhere" \
  "$bin" data import-cifar "$dir/archive.tar.gz" ./archive.tar.gz --force
refused output_is_archive_hard_link 2 "hardlink.tar.gz is $dir/archive.tar.gz, which this command" \
  "$bin" data import-cifar "$dir/archive.tar.gz" "$dir/hardlink.tar.gz" --force
[ "$(cat "$dir/archive.tar.gz")" = "the archive" ] || fail "output_is_archive: the archive changed"
tree "$dir/inside" a b
refused output_inside_class_folder 2 \
  "data import-images: $dir/inside/train/a/out.png lies inside $dir/inside/train, which this command reads" \
  "$bin" data import-images "$dir/inside" "$dir/inside/train/a/out.png"
refused output_inside_link_to_split 2 "lies inside $dir/inside/test, which this command reads" \
  bash -c "ln -s inside/test '$dir/test-link' && '$bin' data import-images '$dir/inside' '$dir/test-link/b/new/out.h5'"
if [ -n "$(find "$dir/inside" -name 'out*' -o -name new)" ]; then
  fail "output inside input: something was written: $(find "$dir/inside" -name 'out*' -o -name new)"
fi
run output_beside_splits "$bin" data import-images "$dir/inside" "$dir/inside/out.h5" &&
  if [ "$rc" -eq 0 ]; then ok "output_beside_splits: imported"; else fail "output_beside_splits: $rc"; fi

# A signal that ends an import while it writes (SIGXFSZ, which the kernel sends when the output
# outgrows `ulimit -f`; every signal whose default action ends the process is handled alike:
# unit TemporaryFile.RemovedAtEverySignalThatEndsTheProcess) removes OUT.h5.tmp-XXXXXX, and the
# command still ends by that signal (exit 153).
mkdir -p "$dir/fsize"
tree "$dir/fsize/images" a b
for import in "data import-images $dir/fsize/images $dir/fsize/images.h5" \
  "data synth --out $dir/fsize/synth.h5 --train 512 --test 64 --height 16 --width 16"; do
  # shellcheck disable=SC2086 # the command's words
  run "file_size_limit: $import" bash -c "ulimit -f 2 && exec \"\$@\"" - "$bin" $import || continue
  left=$(cd "$dir/fsize" && compgen -G "*.h5*")
  if [ "$rc" -ne 153 ]; then
    fail "file_size_limit: $import: exit status $rc, want 153 (SIGXFSZ)"
  elif [ -n "$left" ]; then
    fail "file_size_limit: $import: left $left"
  else
    ok "file_size_limit: $import: exit 153, no temporary file left"
  fi
done

refused empty_folder_path 2 "dir: an empty path: name a folder" \
  "$bin" data import-images "" "$dir/empty.h5"

finish import_inputs
