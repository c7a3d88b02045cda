#!/usr/bin/env bash
# No command writes over what it reads: an output named as one of the command's inputs (by any
# spelling, a symbolic link or a hard link) is a usage error (exit 2) before anything is written,
# and the input is left as it was.
source "$(dirname "$0")/checkpoint_common.sh"
bin=$(realpath "$bin")
fail_log=$dir/err

run_train --steps 2 --checkpoint-dir "$dir/ck" >"$dir/first.log" 2>&1 || fail "the first run" "$dir/first.log"
ck=$dir/ck/ckpt-step00000002.h5
"$bin" export --checkpoint "$ck" "$dir/w.safetensors" >/dev/null 2>&1 || fail "export"
printf 'steps = 3\n' >"$dir/run.toml"
ln -s "$data" "$dir/data-link.h5"
ln "$data" "$dir/data-hard.h5"
mkdir -p "$dir/bin"
touch "$dir/bin/data_batch_1.bin"
sums() { md5sum "$data" "$ck" "$dir/run.toml" "$dir/w.safetensors" "$dir/bin/data_batch_1.bin"; }
before=$(sums)

# refused NAME FLAG_OF_THE_INPUT COMMAND...: exit 2 naming the input's flag.
refused() {
  local name=$1 input_flag=$2
  shift 2
  local rc=0
  (cd "$dir" && timeout -k 5 60 "$@") >"$dir/out" 2>"$dir/err" </dev/null || rc=$?
  if [ "$rc" -ne 2 ]; then
    fail "$name: exit status $rc (want 2)"
  elif ! grep -q "which this command reads as $input_flag: write the output elsewhere" "$dir/err"; then
    fail "$name: no error naming $input_flag"
  else
    ok "$name: $(grep -o 'error: .*' "$dir/err" | cut -c1-120)"
  fi
}

train=("$bin" train --data "$data" "${model[@]}" --batch-size 16 --steps 3 --checkpoint-dir "$dir/ck2")
refused "eval --out the dataset" --data "$bin" eval --checkpoint "$ck" --data "$data" --out "$data"
refused "eval --out a link to the dataset" --data "$bin" eval --checkpoint "$ck" --data "$data" --out "$dir/data-link.h5"
refused "eval --out a hard link to the dataset" --data "$bin" eval --checkpoint "$ck" --data "$data" --out "$dir/data-hard.h5"
refused "eval --out the checkpoint" --checkpoint "$bin" eval --checkpoint "$ck" --data "$data" --out "$dir/ck/../ck/ckpt-step00000002.h5"
refused "export over its checkpoint" --checkpoint "$bin" export --checkpoint "$ck" "$ck" --force
refused "train --summary the dataset" --data "${train[@]}" --summary "$data"
refused "train --metrics the checkpoint resumed" --resume "${train[@]}" --metrics "$ck" --resume "$ck"
refused "train --summary the --config file" --config "${train[@]}" --config "$dir/run.toml" --summary "$dir/run.toml"
refused "train --metrics the --init-from weights" --init-from "${train[@]}" --init-from "$dir/w.safetensors" --metrics "$dir/w.safetensors"
refused "train --conv-algo-cache the dataset" --data "${train[@]}" --conv-algo-cache "$data"
mkdir -p "$dir/t"
cp "$data" "$dir/t/trace_rank0.json" # a dataset under the name of rank 0's trace
refused "train --profile trace over the dataset" --data "$bin" train --data "$dir/t/trace_rank0.json" \
  "${model[@]}" --batch-size 16 --steps 3 --checkpoint-dir "$dir/ck3" --profile trace --trace-dir "$dir/t"
refused "diagnose --summary the dataset" --data "$bin" diagnose --data "$data" "${model[@]}" --batch-size 16 --summary "$data"
refused "data convert --out a batch file" dir "$bin" data convert "$dir/bin" --out "$dir/bin/data_batch_1.bin"
if [ "$(sums)" = "$before" ]; then
  ok "every input is unchanged"
else
  fail "an input was changed: $(diff <(echo "$before") <(sums) | tr '\n' ' ')"
fi
finish outputs_apart
