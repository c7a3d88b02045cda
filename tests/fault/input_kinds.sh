#!/usr/bin/env bash
# Every file a command reads is checked to be a regular file before it is opened: a FIFO (whose
# open would block forever, deaf to SIGTERM) or a folder where a checkpoint or weights file
# belongs ends the command at once with one error naming it. A FIFO under a checkpoint's name
# in the --checkpoint-dir is skipped by --resume auto.
source "$(dirname "$0")/checkpoint_common.sh"
bin=$(realpath "$bin")
fail_log=$dir/err

fifo=$dir/ck.h5
mkfifo "$fifo"
is_fifo="ck.h5: is a FIFO (named pipe), not a checkpoint"
expect_error inspect "ck.h5: is a FIFO (named pipe), not a checkpoint or an HDF5 dataset" \
  "$bin" inspect "$fifo"
expect_error print_config "is a FIFO (named pipe)" "$bin" inspect --print-config "$fifo"
expect_error eval "$is_fifo" "$bin" eval --checkpoint "$fifo" --data "$data" --device cpu
expect_error export "$is_fifo" "$bin" export --checkpoint "$fifo" "$dir/out.safetensors"
expect_error predict "$is_fifo" "$bin" predict --checkpoint "$fifo" "$dir/absent.png"
expect_error init_from "--init-from $fifo: is a FIFO (named pipe), not a checkpoint or a" \
  "$bin" train --data "$data" "${model[@]}" --steps 1 --init-from "$fifo"
expect_error resume_file "$is_fifo" \
  "$bin" train --data "$data" "${model[@]}" --steps 1 --resume "$fifo" --checkpoint-dir "$dir/c1"
mkdir "$dir/weights"
expect_error init_from_folder "--init-from $dir/weights: is a directory" \
  "$bin" train --data "$data" "${model[@]}" --steps 1 --init-from "$dir/weights"
# A 4 GiB file of zeros is refused at its first bytes: under a 3 GB address-space limit (where
# AddressSanitizer allows one), reading it whole would fail.
truncate -s 4G "$dir/sparse.safetensors"
limit=(prlimit --as=3000000000)
under_asan && limit=()
expect_error init_from_sparse "sparse.safetensors: the header does not start with '{'" \
  "${limit[@]}" "$bin" train --data "$data" "${model[@]}" --steps 1 --init-from "$dir/sparse.safetensors"
# A 4 GiB file starting with a valid empty header ({}): its layout is checked before its data
# is read, so it is refused under the same limit instead of ending in std::bad_alloc.
printf '\002\0\0\0\0\0\0\0{}' >"$dir/empty_header.safetensors"
truncate -s 4G "$dir/empty_header.safetensors"
expect_error init_from_empty_header "empty_header.safetensors: the tensors end at byte 0 of the 4294967286-byte data" \
  "${limit[@]}" "$bin" train --data "$data" "${model[@]}" --steps 1 --init-from "$dir/empty_header.safetensors"
expect_error init_from_dataset "--init-from $data: an HDF5 file without /params, so not a checkpoint" \
  "$bin" train --data "$data" "${model[@]}" --steps 1 --init-from "$data"
mkdir "$dir/bin"
mkfifo "$dir/bin/data_batch_1.bin"
expect_error convert "data_batch_1.bin: is a FIFO (named pipe)" \
  "$bin" data convert "$dir/bin" --out "$dir/converted.h5"

expect_error dataset_as_checkpoint "data.h5: is a dataset file (it has /train, not /params), not a checkpoint" \
  "$bin" eval --checkpoint "$data" --data "$data" --device cpu

mkdir "$dir/ckpts"
mkfifo "$dir/ckpts/ckpt-step00000005.h5"
if run_train --steps 2 --checkpoint-dir "$dir/ckpts" --resume auto >"$dir/auto.log" 2>&1 &&
  grep -q "skipped .*ckpt-step00000005.h5: is a FIFO" "$dir/auto.log" &&
  [ -p "$dir/ckpts/ckpt-step00000005.h5" ] && [ -f "$dir/ckpts/ckpt-step00000002.h5" ]; then
  ok "--resume auto skips a FIFO under a checkpoint's name and leaves it"
else
  fail "--resume auto with a FIFO in the folder" "$dir/auto.log"
fi
finish input_kinds
