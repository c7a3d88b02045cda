# shellcheck shell=bash disable=SC2034
# Sourced by every end-to-end script: a temporary folder removed at exit, the failure count,
# ok MESSAGE and fail MESSAGE [LOG] (which shows the last 20 lines of LOG).
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; [ -f "${2:-}" ] && tail -n 20 "$2"; failures=$((failures + 1)); }
