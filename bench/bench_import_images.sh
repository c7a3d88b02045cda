#!/usr/bin/env bash
# `ringtrain data import-images` on a whole folder of images in class folders, with one decoding
# thread and with all cores: images/s of each (wall time of the command, the HDF5 write
# included). The machine may be shared: run it twice and take the better figures.
#   bash bench/bench_import_images.sh [RINGTRAIN] SOURCE
# SOURCE: a folder holding train/<class>/* and test/<class>/*, or a .tar.gz of one (extracted
# into a temporary folder first, not timed). RINGTRAIN defaults to build/ringtrain.
set -euo pipefail
if [ $# -eq 1 ]; then set -- "$(dirname "$0")/../build/ringtrain" "$1"; fi
[ $# -eq 2 ] || { echo "usage: $0 [RINGTRAIN] FOLDER|TARBALL" >&2; exit 2; }
ringtrain=$1
source=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_import_images.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -d "$source" ]; then
  images=$source
else
  tar -xzf "$source" -C "$work"
  images=$work
fi
count=$(find "$images/train" "$images/test" -type f \
  \( -iname '*.png' -o -iname '*.jpg' -o -iname '*.jpeg' \) | wc -l)
for workers in 1 "$(nproc)"; do
  start=$(date +%s.%N)
  "$ringtrain" data import-images "$images" "$work/out.h5" --workers "$workers" --force
  end=$(date +%s.%N)
  awk -v n="$count" -v s="$start" -v e="$end" -v w="$workers" 'BEGIN {
    printf "bench_import_images: --workers %d: %d images in %.2f s: %.0f images/s\n",
           w, n, e - s, n / (e - s) }'
done
