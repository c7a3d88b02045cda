#!/usr/bin/env bash
# Numbers on the command line are decimal, whole ones also with leading zeros: `--epochs 010` is
# 10 (C's base-0 reading made it octal 8, and `08` an error), in every command; "0x" numbers are
# refused (exit 2) naming the flag, whole or not, as a nonzero number its setting holds as 0.
#   tests/e2e/decimal_numbers.sh build/ringtrain
bin=$1
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"

# `train`'s settings, each through the effective configuration: FLAG VALUE, then the line. The
# decimal forms C reads are taken, and -0 is 0 (the run and --print-config agree).
while read -r flag value line; do
  "$bin" train "$flag" "$value" --print-config >"$dir/train.toml" 2>"$dir/train.err" ||
    { fail "train $flag $value: exit status $?" "$dir/train.err"; continue; }
  if grep -qxF "$line" "$dir/train.toml"; then
    ok "train $flag $value: $line"
  else
    fail "train $flag $value: no '$line' but '$(grep "^${flag#--} = " "$dir/train.toml")'"
  fi
done <<'LIST'
--epochs 010 epochs = 10
--batch-size 08 batch-size = 8
--seed 0009 seed = 9
--workers 03 workers = 3
--keep 05 keep = 5
--depth 018 depth = 18
--checkpoint-every 0100 checkpoint-every = 100
--threads 00 threads = 0
--lr .5 lr = 0.5
--lr 2.E-1 lr = 0.2
--weight-decay -0 weight-decay = 0
--momentum -0.0e3 momentum = 0
--lr 1e-300 lr = 1e-300
LIST

# `data synth`, as its file says.
"$bin" data synth --out "$dir/s.h5" --train 010 --test 08 --height 08 --width 011 --classes 012 \
  --seed 010 >"$dir/synth.log" 2>&1 || fail "data synth exited $?" "$dir/synth.log"
"$bin" data inspect "$dir/s.h5" >"$dir/inspect.txt" 2>&1 || fail "data inspect" "$dir/inspect.txt"
for text in "10 train and 8 test images 8x11x3, 12 classes" "seed: 10"; do
  if grep -qF "$text" "$dir/inspect.txt"; then
    ok "data synth: $text"
  else
    fail "data synth: the file lacks '$text'" "$dir/inspect.txt"
  fi
done

# Other bases are refused, naming the flag, before anything runs.
for args in "train --epochs 0x10 --print-config" "train --seed 0x10 --print-config" \
  "data synth --out $dir/x.h5 --train 0b11"; do
  rc=0
  # shellcheck disable=SC2086  # the words of $args are the arguments
  "$bin" $args >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -eq 2 ] && grep -qF "is not a decimal number" "$dir/err"; then
    ok "refused: $args"
  else
    fail "$args: exit status $rc, want 2 and 'is not a decimal number'" "$dir/err"
  fi
done
[ ! -e "$dir/x.h5" ] || fail "data synth --train 0b11 wrote a file"

# Real numbers too: C reads "0x10" as 16 and "0x1p-4" as 1/16; refused, as "1e-50" for a setting
# that would hold it as 0 (a 32-bit float; 1e-400 for a 64-bit one); the message shows the text
# as given.
while read -r flag value expected; do
  rc=0
  "$bin" train "$flag" "$value" --print-config >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -eq 2 ] && grep -qF -- "ringtrain: error: $flag: '$value' $expected" "$dir/err"; then
    ok "refused: $flag $value"
  else
    fail "$flag $value: exit status $rc, want 2 and '$flag: '$value' $expected'" "$dir/err"
  fi
done <<'LIST'
--lr 0x10 is not a decimal number
--momentum 0x1p-4 is not a decimal number
--width 0X1 is not a decimal number
--lars-eta 1e-50 is too close to 0
--weight-decay -1e-50 is too close to 0
--lr 1e-400 is too close to 0
LIST

echo "decimal_numbers: $failures failed"
[ "$failures" -eq 0 ]
