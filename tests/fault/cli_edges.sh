#!/usr/bin/env bash
# Every numeric flag at its edges (0, negative, past its limit, inf, nan, 1e308, INT64_MAX, not a
# whole number) is a usage error: exit 2 and one `ringtrain: error:` line naming the flag, never
# a signal, an overflow (the ASan/UBSan build runs this too) or a hang. Values at the limits run.
# So are a control character in a text flag, a warmup longer than the run, --accum-steps beyond
# an epoch, and an empty or folder image argument to predict.
source "$(dirname "$0")/common.sh"
fail_log=$dir/err

# refused FLAG VALUE [SUBCOMMAND...]: exit 2 and the flag named in one error line.
refused() {
  local flag=$1 value=$2
  shift 2
  local cmd=("$@")
  [ ${#cmd[@]} -gt 0 ] || cmd=(train --synth-path "$dir/never.h5" --depth 18 --threads 1)
  local rc=0
  timeout 20 "$bin" "${cmd[@]}" "$flag" "$value" >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -ne 2 ]; then
    fail "$flag $value: exit status $rc (want 2, a usage error)"
  elif [ "$(grep -cE "^ringtrain: error: $flag: (must be|'.*' is not a number)" "$dir/err")" -ne 1 ]; then
    fail "$flag $value: no one 'ringtrain: error: $flag: must be ...' line"
  else
    echo "ok   $flag $value: $(head -n 1 "$dir/err")"
  fi
}

int64_max=9223372036854775807
for v in 0 -1 inf nan 1e308 1e-6 17; do refused --width "$v"; done
for v in 0 -1 1.5 1000001 1e308 inf nan $int64_max; do refused --epochs "$v"; done
for v in -1 1e308 nan $int64_max 1000000000001; do refused --steps "$v"; done
for v in 0 -4 65537 2147483648 1e308 nan; do refused --batch-size "$v"; done
for v in 0 $int64_max; do refused --global-batch-size "$v"; done
for v in 0 -0.1 1e308 inf nan; do refused --lr "$v"; done
for v in -1 2 nan; do refused --momentum "$v"; done
for v in -1 inf; do refused --weight-decay "$v"; done
for v in -1 $int64_max; do refused --warmup-steps "$v"; done
for v in -0.1 1 nan; do refused --label-smoothing "$v"; done
for v in -1 257 1e308 nan; do refused --workers "$v"; done
for v in 0 65; do refused --prefetch-factor "$v"; done
for v in 0 -1 inf nan 1e308; do refused --memory-budget-mb "$v"; done
for v in 0 65; do refused --devices "$v"; done
for v in 0 $int64_max; do refused --accum-steps "$v"; done
for v in 0 inf nan; do refused --bucket-cap-mb "$v"; done
for v in 0 inf 1e308; do refused --comm-timeout "$v"; done
for v in -1 1025 $int64_max; do refused --threads "$v"; done
for v in -1 $int64_max; do refused --checkpoint-every "$v"; done
for v in -1 nan; do refused --checkpoint-minutes "$v"; done
for v in 0 1e308; do refused --keep "$v"; done
for v in -1 inf; do refused --peak-tflops "$v"; done
for v in -1 nan 1e308; do refused --log-interval "$v"; done
for v in -1 nan 1e308 18446744073709551616; do refused --seed "$v"; done

synth=(data synth --out "$dir/never.h5" --train 8 --test 8 --height 8 --width 8)
for v in 0 -1 100000001 $int64_max 1e308; do refused --train "$v" "${synth[@]}"; done
for v in 0 4097 100000 inf; do refused --height "$v" "${synth[@]}"; done
for v in 0 nan; do refused --width "$v" "${synth[@]}"; done

# --steps 0 says how to train by epochs.
refused --steps 0
grep -qF -- "--steps: must be >= 1 (omit --steps to train --epochs), got 0" "$dir/err" ||
  fail "--steps 0: the message does not say to omit --steps"

# Within the limits but larger than memory: refused before any allocation.
rc=0
timeout 20 "$bin" data synth --out "$dir/huge.h5" --train 100000000 --height 4096 --width 4096 \
  >"$dir/out" 2>"$dir/err" || rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "^ringtrain: error: synth: .* GB, more than this machine's" "$dir/err"; then
  fail "synth larger than memory: exit status $rc (want 1 and the sizes named)"
else
  echo "ok   synth larger than memory: $(head -n 1 "$dir/err")"
fi

# The limits themselves are accepted: the narrowest model, the most epochs (one step of them).
if timeout 20 "$bin" data synth --out "$dir/small.h5" --train 32 --test 16 --height 16 --width 16 \
  >"$dir/out" 2>"$dir/err" &&
  timeout 40 "$bin" train --data "$dir/small.h5" --depth 18 --width 0.015625 --epochs 1000000 \
    --steps 1 --batch-size 8 --threads 1 --workers 1 >"$dir/out" 2>"$dir/err"; then
  echo "ok   --width 0.015625 --epochs 1000000 --steps 1 trains"
else
  fail "limits: a run at --width 0.015625 --epochs 1000000 --steps 1 failed"
fi

# usage_error NAME EXPECTED ARGS...: exit 2 and EXPECTED in the one error line.
usage_error() {
  local name=$1 expected=$2
  shift 2
  local rc=0
  timeout 40 "$bin" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -ne 2 ]; then
    fail "$name: exit status $rc (want 2, a usage error)"
  elif ! grep -q "^ringtrain: error: .*$expected" "$dir/err"; then
    fail "$name: no 'ringtrain: error: ...$expected' line"
  else
    echo "ok   $name: $(head -n 1 "$dir/err")"
  fi
}

# Text flags hold no control character (a newline would split the logs' lines).
usage_error newline_in_path "--data: holds a control character (byte 0x0a" \
  train --data "$(printf 'a\nb.h5')" --print-config
usage_error tab_in_name "--checkpoint-dir: holds a control character (byte 0x09" \
  train --checkpoint-dir "$(printf 'runs\tx')" --print-config
# --workers takes its words in any case, and says which words it takes.
if "$bin" train --workers AUTO --print-config >"$dir/out" 2>"$dir/err" &&
  grep -qxF 'workers = "auto"' "$dir/out"; then
  ok "--workers AUTO is auto"
else
  fail "--workers AUTO: not read as auto"
fi
usage_error workers_word "--workers: 'lots' is not a number, auto or cores" \
  train --workers lots --print-config
# predict names what is wrong with an image argument.
usage_error predict_empty "images: an empty argument: name an image file" \
  predict --checkpoint "$dir/small.h5" ""
usage_error predict_folder "images: '$dir' is a folder: name its image files" \
  predict --checkpoint "$dir/small.h5" "$dir"

# A warmup the run cannot finish, onecycle's own warmup beside --warmup-steps, and more
# micro-batches per step than an epoch has are configuration errors naming the flags (the
# small data: 32 train images, 4 batches of 8).
run=(train --data "$dir/small.h5" --depth 18 --width 0.015625 --batch-size 8 --threads 1
  --workers 0 --checkpoint-dir "$dir/ck" --no-final-checkpoint)
usage_error warmup_past_steps "--warmup-steps 5 must be shorter than the run of --steps 5" \
  "${run[@]}" --steps 5 --warmup-steps 5
usage_error warmup_past_epochs "--warmup-steps 8 must be shorter than the run of 8 steps" \
  "${run[@]}" --epochs 2 --warmup-steps 8
usage_error onecycle_warmup "--schedule onecycle has its own warmup.*--warmup-steps" \
  "${run[@]}" --steps 5 --schedule onecycle --warmup-steps 1
usage_error accum_past_epoch "--accum-steps 5 is more than the 4 batches of an epoch" \
  "${run[@]}" --steps 5 --accum-steps 5

finish cli_edges
