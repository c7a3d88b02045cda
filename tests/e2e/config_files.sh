#!/usr/bin/env bash
# Configuration files: `train --config FILE` takes any flag from TOML and the command line
# overrides it; a bad file (not TOML, or a value of the wrong type for its flag) is a usage error
# (exit 2) naming the file, the line and the key; --print-config
# writes the effective configuration (the CPU quick configuration and the device chosen
# included), which reads back to the same text; the checkpoints and the run summary keep it,
# and a run started from the summary's or the checkpoint's copy ends with the same loss, bit
# for bit, as the run that wrote it.
#   tests/e2e/config_files.sh build/ringtrain
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
cd "$dir" || exit 1  # whatever a run writes by default lands here

# print NAME ARGS...: `ringtrain ARGS --print-config` into $dir/NAME.toml (exit 0 wanted).
print() {
  local name=$1
  shift
  "$bin" "$@" --print-config >"$dir/$name.toml" 2>"$dir/$name.err" ||
    fail "$name: --print-config exited $?" "$dir/$name.err"
}
# has NAME LINE: the printed configuration NAME holds LINE.
has() { grep -qxF -- "$2" "$dir/$1.toml" || fail "$1 lacks '$2'" "$dir/$1.toml"; }
# usage_error NAME EXPECTED... -- ARGS...: exit 2 and one short stderr holding every EXPECTED.
usage_error() {
  local name=$1 expected=()
  shift
  while [ "$1" != "--" ]; do expected+=("$1"); shift; done
  shift
  local rc=0
  "$bin" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
  [ "$rc" -eq 2 ] || { fail "$name: exit status $rc, want 2" "$dir/err"; return; }
  for text in "${expected[@]}"; do
    grep -qF -- "$text" "$dir/err" || { fail "$name: stderr lacks '$text'" "$dir/err"; return; }
  done
  [ "$(grep -c . "$dir/err")" -le 2 ] || fail "$name: more than a short error" "$dir/err"
  ok "$name: $(head -n 1 "$dir/err")"
}
# summary_field FILE KEY: a field of a run summary, numbers as Python's repr (exact).
summary_field() {
  python3 -c 'import json, sys
sys.stdout.write(str(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2"
}

# The data under a UTF-8 name with a space and a comma, as a user's folders may be called.
mkdir -p "$dir/données été"
data="$dir/données été/tiny, ü.h5"
"$bin" data synth --out "$data" --train 64 --test 32 --height 8 --width 8 >/dev/null

# 1. The file's values are applied, every kind of flag: numbers, names, switches on and off.
cat >"$dir/run.toml" <<EOF
# a comment
data = "$data"
depth = 18
width = 0.0625
batch-size = 16
steps = 3
lr = 0.03
momentum = 0.8
label-smoothing = 0.1
schedule = "constant"
nesterov = true
no-augment = true
no-bn-decay = true
seed = 7
device = "cpu"
threads = 1
workers = 1
EOF
print file train --config "$dir/run.toml"
for line in "data = \"$data\"" "width = 0.0625" "batch-size = 16" "steps = 3" "lr = 0.03" \
  "momentum = 0.8" "label-smoothing = 0.1" 'schedule = "constant"' "nesterov = true" \
  "no-augment = true" "decay-bn-and-bias = false" "seed = 7" 'device = "cpu"'; do
  has file "$line"
done

# A file saved by a Windows editor: a UTF-8 byte-order mark and CRLF line ends.
printf '\xef\xbb\xbflr = 0.02\r\nnesterov = true\r\n' >"$dir/crlf_bom.toml"
print windows train --config "$dir/crlf_bom.toml"
has windows "lr = 0.02"
has windows "nesterov = true"

# 2. The command line overrides the file, also for --model against the file's depth.
print override train --config "$dir/run.toml" --lr 0.07 --model resnet34 --no-eval
has override "lr = 0.07"
has override "depth = 34"
has override "no-eval = true"
has override "momentum = 0.8"
printf 'model = "ResNet50"\nworkers = "auto"\n' >"$dir/model.toml"
print model_key train --config "$dir/model.toml"
has model_key "depth = 50"
has model_key 'workers = "auto"'
print model_over train --config "$dir/model.toml" --depth 34
has model_over "depth = 34"

# 3. --print-config round trip: print, read it back, print again: the same text.
print again train --config "$dir/file.toml"
cmp -s "$dir/file.toml" "$dir/again.toml" || fail "print -> --config -> print changed the text"
# The same for the values written specially: --workers auto, a hidden test flag that was given,
# a setting left at 0 (--steps), numbers CLI11 would round to 6 digits, a seed beyond TOML's
# integers (a string) and a path with TOML's special characters (escaped).
print special train --workers auto --debug-fail-rank 3 --lr 0.123456789012345 \
  --weight-decay 1e-7 --epochs 3 --seed 18446744073709551615 --data "$dir/a#b 'c' \"d\".h5"
has special 'workers = "auto"'
has special "debug-fail-rank = 3"
has special "lr = 0.123456789012345"
has special "weight-decay = 1e-07"
has special 'seed = "18446744073709551615"'
has special "data = \"$dir/a#b 'c' \\\"d\\\".h5\""
grep -q "^steps = " "$dir/special.toml" && fail "--steps 0 (unset) was written"
grep -qE "^debug-(fail|hang|startup|loader|comm|eval)" "$dir/again.toml" && fail "hidden flags not given were written"
print special_again train --config "$dir/special.toml"
cmp -s "$dir/special.toml" "$dir/special_again.toml" ||
  fail "print -> --config -> print changed the text of the special values"
# diagnose takes the same flags and the same files.
print diagnose diagnose --config "$dir/run.toml"
diff <(tail -n +2 "$dir/file.toml") <(tail -n +2 "$dir/diagnose.toml") >/dev/null ||
  fail "diagnose --print-config differs from train's"

# 4. Without a GPU and without a chosen model or length, the CPU quick configuration is what
# runs, and what the effective configuration says; --device auto is shown as resolved.
print quick train
if nvidia-smi -L >/dev/null 2>&1; then
  has quick 'device = "cuda"'
else
  for line in 'device = "cpu"' "depth = 18" "width = 0.25" "batch-size = 64" "epochs = 2" \
    "lr = 0.05"; do
    has quick "$line"
  done
  print chosen train --depth 34
  has chosen "width = 1"
  has chosen "batch-size = 256"
fi

# 5. Errors: exit 2 naming the file and the key (and the value where it is at fault), before
# anything runs (--print-config keeps a broken check from starting a training run).
printf 'lr = 0.1\nlrr = 0.2\n' >"$dir/unknown.toml"
usage_error unknown_key "$dir/unknown.toml" "unknown key 'lrr'" -- \
  train --config "$dir/unknown.toml" --print-config
printf 'lr = -1\n' >"$dir/bad_lr.toml"
usage_error bad_number "$dir/bad_lr.toml" "lr = -1" "must be > 0" -- \
  train --config "$dir/bad_lr.toml" --print-config
printf 'schedule = "linear"\n' >"$dir/bad_name.toml"
usage_error bad_choice "$dir/bad_name.toml:1: schedule = \"linear\"" -- \
  train --config "$dir/bad_name.toml" --print-config
printf 'nesterov = maybe\n' >"$dir/bad_switch.toml"
usage_error bad_switch "$dir/bad_switch.toml:1: nesterov = maybe" -- \
  train --config "$dir/bad_switch.toml" --print-config
printf 'lr = 0.1\nmomentum = 0.5\nlr = 0.3\n' >"$dir/twice.toml"
usage_error key_twice "$dir/twice.toml:3: lr = 0.3" "redefine existing floating-point 'lr'" -- \
  train --config "$dir/twice.toml" --print-config
printf 'no-bn-decay = true\ndecay-bn-and-bias = true\n' >"$dir/alias_twice.toml"
usage_error alias_twice "$dir/alias_twice.toml:2" \
  "keys 'no-bn-decay' (line 1) and 'decay-bn-and-bias' (line 2) set the same setting" -- \
  train --config "$dir/alias_twice.toml" --print-config
printf 'model = "resnet50"\nlr = 0.1\ndepth = 18\n' >"$dir/model_and_depth.toml"
usage_error model_and_depth "$dir/model_and_depth.toml:3" \
  "keys 'model' (line 1) and 'depth' (line 3) set the same setting" -- \
  train --config "$dir/model_and_depth.toml" --print-config
usage_error model_and_depth_flags "--model excludes --depth" -- \
  train --model resnet50 --depth 18 --print-config
printf '[train]\nlr = 0.1\n' >"$dir/section.toml"
usage_error section "$dir/section.toml:1" "key 'train.lr'" "sections and dotted keys" -- \
  train --config "$dir/section.toml" --print-config
printf 'train.lr = 0.1\n' >"$dir/dotted.toml"
usage_error dotted "$dir/dotted.toml" "key 'train.lr'" -- \
  train --config "$dir/dotted.toml" --print-config
printf 'config = "other.toml"\n' >"$dir/nested.toml"
usage_error not_configurable "$dir/nested.toml" "key 'config'" -- \
  train --config "$dir/nested.toml" --print-config
usage_error missing_file "$dir/absent ü.toml" "no such file" -- \
  train --config "$dir/absent ü.toml"
usage_error folder "not a regular file" -- train --config "$dir"
head -c 4096 "$data" >"$dir/binary.toml"
usage_error binary_file "$dir/binary.toml:1" "(the file is TOML" -- \
  train --config "$dir/binary.toml" --print-config
usage_error unwritable_value "--print-config: cannot write --data" -- \
  train --data "$(printf 'a\377.h5')" --print-config

# refused NAME EXPECTED...: `train --config $dir/NAME.toml` exits 2 naming the file and EXPECTED.
refused() {
  local name=$1
  shift
  usage_error "$name" "$dir/$name.toml" "$@" -- train --config "$dir/$name.toml" --print-config
}
# A name nested past any setting's (a dotted key or a [section] of tens of thousands of parts
# overflowed the parser's stack: a crash without a message) is refused before parsing, naming
# the line; so are the deep dotted keys of an inline table. Arrays and inline tables nested past
# 256 the parser refuses itself.
python3 -c 'print("lr = 0.1\n" + "a." * 40000 + "a = 1")' >"$dir/deep_key.toml"
refused deep_key "deep_key.toml:2: " "more than 8 dotted parts"
python3 -c 'print("[" + "a." * 100000 + "a]")' >"$dir/deep_section.toml"
refused deep_section "deep_section.toml:1: " "more than 8 dotted parts"
printf 'lr = 0.1\nx = [{b.b.b.b.b.b.b.b.b = 1}]\n' >"$dir/deep_inline_key.toml"
refused deep_inline_key "deep_inline_key.toml:2: " "more than 8 dotted parts"
python3 -c 'print("x = " + "[" * 100000 + "]" * 100000)' >"$dir/deep_array.toml"
refused deep_array "maximum nested value depth"
python3 -c 'print("x = " + "{b=" * 100000 + "1" + "}" * 100000)' >"$dir/deep_inline_table.toml"
refused deep_inline_table "maximum nested value depth"
# Dots in strings, comments, numbers and multi-line strings are no names' parts.
printf 'data = "a.b.c.d.e.f.g.h.i.j.h5" # a.b.c.d.e.f.g.h.i.j\nlr = 1.5\nsynth-path = """a.b.c.d.\\\n  e.f.g.h.i.j.h5"""\n' \
  >"$dir/dots_in.toml"
print dots train --config "$dir/dots_in.toml"
has dots 'data = "a.b.c.d.e.f.g.h.i.j.h5"'
has dots 'synth-path = "a.b.c.d.e.f.g.h.i.j.h5"'
# A control character in a string (a NUL would cut the path short) is refused naming the key.
printf 'lr = 0.1\ndata = "data.h5\\u0000x"\n' >"$dir/nul_in_string.toml"
refused nul_in_string "nul_in_string.toml:2: " "--data: holds a control character (byte 0x00"
printf 'checkpoint-dir = "runs\\nx"\n' >"$dir/newline_in_string.toml"
refused newline_in_string "--checkpoint-dir: holds a control character (byte 0x0a"
# Numbers in decimal only; none that the setting holds as 0; -0 is 0, as on the command line.
printf 'lr = 0x10\n' >"$dir/hex_number.toml"
refused hex_number "hex_number.toml:1: lr = 0x10" "not written in decimal digits"
printf 'epochs = 0o17\n' >"$dir/octal_number.toml"
refused octal_number "octal_number.toml:1: epochs = 0o17" "not written in decimal digits"
printf 'lars-eta = 1e-50\n' >"$dir/underflow.toml"
refused underflow "underflow.toml:1: lars-eta = 1e-50" "'1e-50' is too close to 0"
printf 'weight-decay = -0.0\n' >"$dir/minus_zero_in.toml"
print minus_zero train --config "$dir/minus_zero_in.toml"
has minus_zero "weight-decay = 0"
print minus_zero_flag train --weight-decay -0
has minus_zero_flag "weight-decay = 0"
# A link loop is named as one, not as a missing file.
ln -s loop_b.toml "$dir/loop_a.toml"
ln -s loop_a.toml "$dir/loop_b.toml"
usage_error link_loop "$dir/loop_a.toml" "Too many levels of symbolic links" -- \
  train --config "$dir/loop_a.toml"

# TOML as its specification has it: what is not TOML, and a value of a type its flag does not
# take, are refused naming the file, the line and the key (and the type the flag takes).
# not_toml NAME TEXT EXPECTED...: a file holding TEXT, then `momentum = 0.5`, is refused.
not_toml() {
  local name=$1 text=$2
  shift 2
  printf '%s\nmomentum = 0.5\n' "$text" >"$dir/$name.toml"
  usage_error "$name" "$dir/$name.toml:1: $text" "$@" -- \
    train --config "$dir/$name.toml" --print-config
}
not_toml unterminated_string 'data = "tiny.h5' "Error while parsing string"
not_toml unquoted_string 'schedule = cosine' "Error while parsing"
not_toml upper_case_true 'nesterov = TRUE' "Error while parsing boolean"
not_toml leading_zero 'epochs = 010' "leading zeroes are prohibited"
not_toml bool_as_string 'nesterov = "yes"' "key 'nesterov' takes a boolean (true or false), not a TOML string"
not_toml bool_as_number 'no-eval = 1' "key 'no-eval' takes a boolean (true or false), not a TOML integer"
not_toml string_as_number 'schedule = 1' "key 'schedule' takes a string (in double quotes), not a TOML integer"
not_toml whole_as_float 'epochs = 2.5' "key 'epochs' takes a whole number, not a TOML floating-point"
not_toml number_as_bool 'lr = true' "key 'lr' takes a number, not a TOML boolean"
# A flag on the command line overrides the key, not its check.
usage_error overridden_bool_as_string "$dir/bool_as_string.toml:1" "key 'nesterov' takes a boolean" -- \
  train --config "$dir/bool_as_string.toml" --nesterov --print-config
# A '#' inside a string is part of it (TOML), not a comment.
printf 'data = "a#b.h5" # the data\n' >"$dir/comment.toml"
print hash train --config "$dir/comment.toml"
has hash 'data = "a#b.h5"'
usage_error inspect_dataset "is not a checkpoint" -- inspect "$data" --print-config
: >"$dir/empty.toml"
print empty train --config "$dir/empty.toml"
cmp -s "$dir/empty.toml" "$dir/quick.toml" || fail "an empty file is not the defaults"

# 6. A run keeps its configuration in its checkpoint and its summary, with the version, the
# host and the devices; both copies repeat the run to the same final loss, bit for bit.
"$bin" train --config "$dir/run.toml" --checkpoint-dir "$dir/ck" --checkpoint-every 3 \
  --summary "$dir/a.json" --log-interval 0 >"$dir/a.log" 2>&1 || fail "run a" "$dir/a.log"
grep -q "ran: ringtrain .* on host $(hostname)" "$dir/a.log" ||
  fail "no provenance line" "$dir/a.log"
summary_field "$dir/a.json" config >"$dir/from_summary.toml"
"$bin" inspect "$dir/ck/ckpt-step00000003.h5" --print-config >"$dir/from_checkpoint.toml" ||
  fail "inspect --print-config"
cmp -s "$dir/from_summary.toml" "$dir/from_checkpoint.toml" ||
  fail "the checkpoint and the summary hold different configurations"
grep -qxF "summary = \"$dir/a.json\"" "$dir/from_summary.toml" ||
  fail "the stored configuration lacks the run's own --summary" "$dir/from_summary.toml"
[ "$(summary_field "$dir/a.json" host)" = "$(hostname)" ] || fail "summary host"
[ -n "$(summary_field "$dir/a.json" version)" ] || fail "summary version"
summary_field "$dir/a.json" devices | grep -q . || fail "summary devices"
a=$(summary_field "$dir/a.json" final_loss)
for source in summary checkpoint; do
  grep -qxF "steps = 3" "$dir/from_$source.toml" ||
    { fail "the $source's configuration lacks steps = 3" "$dir/from_$source.toml"; continue; }
  "$bin" train --config "$dir/from_$source.toml" --checkpoint-dir "$dir/ck_$source" \
    --summary "$dir/$source.json" --log-interval 0 >"$dir/$source.log" 2>&1 ||
    fail "run from the $source's configuration" "$dir/$source.log"
  b=$(summary_field "$dir/$source.json" final_loss)
  [ "$a" = "$b" ] || fail "from the $source's configuration: final loss $b, the run's $a"
  ok "from the $source: final loss $b = $a"
done
# The same run with one setting changed ends elsewhere: the comparison above can tell.
"$bin" train --config "$dir/from_summary.toml" --momentum 0.9 --checkpoint-dir "$dir/ck_other" \
  --summary "$dir/other.json" --log-interval 0 >"$dir/other.log" 2>&1 || fail "run other"
[ "$(summary_field "$dir/other.json" final_loss)" != "$a" ] ||
  fail "another momentum gave the same final loss"

if [ "$failures" -ne 0 ]; then
  echo "config_files: $failures failure(s)"
  exit 1
fi
echo "config_files: ok"
