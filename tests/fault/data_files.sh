#!/usr/bin/env bash
# --data (and `data inspect`) on what is not a readable HDF5 file: a FIFO, a folder, a device,
# an empty value, a file the user may not read; and files written by h5py (its default string
# attribute, its LZF filter). Each ends in one clear error, bounded by `timeout` (a FIFO once
# blocked the reader forever).
#   RINGTRAIN=build/ringtrain bash tests/fault/data_files.sh
source "$(dirname "$0")/common.sh"
bin=$(realpath "$bin")
fail_log=$dir/err

train=(train --steps 1 --depth 18 --width 0.125 --threads 1 --workers 1 --device cpu)

mkfifo "$dir/pipe.h5"
expect_error fifo_train "pipe.h5: is a FIFO (named pipe), not an HDF5 file" \
  "$bin" "${train[@]}" --data "$dir/pipe.h5"
expect_error fifo_inspect "pipe.h5: is a FIFO (named pipe), not an HDF5 file" \
  "$bin" data inspect "$dir/pipe.h5"
mkdir "$dir/folder.h5"
expect_error directory "folder.h5: is a directory, not an HDF5 file" \
  "$bin" "${train[@]}" --data "$dir/folder.h5"
expect_error device "/dev/null: is a character device, not an HDF5 file" \
  "$bin" "${train[@]}" --data /dev/null

# An empty --data is refused before anything runs: no synthetic dataset is written.
expect_error empty_data "--data: an empty path" "$bin" "${train[@]}" --data ""
if [ -e "$dir/data" ]; then fail "empty_data_no_synthetic: wrote $(ls -R "$dir/data")"; fi
expect_error empty_inspect "an empty path" "$bin" data inspect ""

# One-pixel images: random crops with 4 pixels of padding would be all padding (and batches of
# identical images make batch norm's gradient overflow): refused, naming --no-augment; without
# augmentation they train.
"$bin" data synth --out "$dir/pixel.h5" --train 64 --test 16 --height 1 --width 1 >/dev/null ||
  fail "pixel_synth: data synth failed"
expect_error one_pixel_augmented "these are 1x1: add --no-augment" \
  "$bin" "${train[@]}" --batch-size 8 --data "$dir/pixel.h5"
if (cd "$dir" && timeout 60 "$bin" "${train[@]}" --batch-size 8 --data "$dir/pixel.h5" \
  --no-augment) >"$dir/out" 2>"$dir/err"; then
  ok "one_pixel_not_augmented: trains"
else
  fail "one_pixel_not_augmented: exit status $?"
fi

# A file the user may not read names the system's reason. Root reads everything, so there the
# binary runs as nobody.
"$bin" data synth --out "$dir/private.h5" --train 8 --test 4 --height 8 --width 8 \
  >/dev/null 2>"$dir/err" || fail "private_synth: data synth failed"
chmod 755 "$dir"
chmod 000 "$dir/private.h5"
as_nobody=(env)
if [ "$(id -u)" -eq 0 ]; then as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
if ! "${as_nobody[@]}" "$bin" --version >/dev/null 2>&1; then
  skip permission_denied "cannot run $bin as another user here"
else
  expect_error permission_denied "private.h5: cannot be read: Permission denied" \
    "${as_nobody[@]}" "$bin" data inspect "$dir/private.h5"
  if grep -qF "not an HDF5 file" "$dir/err"; then fail "permission_denied: says not an HDF5 file"; fi
fi

# Files written by h5py, where it is installed: its default string attribute is read, and its
# LZF filter, which libhdf5 lacks, is named.
python=
for p in python3 /usr/bin/python3; do
  if "$p" -c "import h5py" 2>/dev/null; then python=$p; break; fi
done
if [ -z "$python" ]; then
  skip h5py "no python3 with h5py (apt install python3-h5py)"
else
  "$python" - "$dir" <<'EOF' || fail "h5py_write: the h5py writer failed"
import sys, h5py, numpy as np
for name, compression in (("h5py_default", None), ("h5py_lzf", "lzf")):
    with h5py.File(f"{sys.argv[1]}/{name}.h5", "w") as f:
        for split, n in (("train", 6), ("test", 3)):
            f.create_dataset(f"{split}/images", data=np.full((n, 4, 4, 3), 9, np.uint8),
                             compression=compression)
            f[f"{split}/labels"] = np.arange(n) % 3
        f.attrs["classes"] = ["cat", "dog", "caf\u00e9"]
EOF
  rc=0
  (cd "$dir" && timeout 30 "$bin" data inspect "$dir/h5py_default.h5") >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -ne 0 ] || ! grep -qF "cat=2 dog=2 café=2" "$dir/out"; then
    fail "h5py_classes: exit $rc, class names not read: $(grep 'per class' "$dir/out" | head -n 1)"
  else
    echo "ok   h5py_classes: $(grep 'per class' "$dir/out" | head -n 1)"
  fi
  expect_error h5py_lzf "dataset /train/images needs HDF5 filter 32000 (LZF), which this HDF5" \
    "$bin" data inspect "$dir/h5py_lzf.h5"
fi

finish data_files
