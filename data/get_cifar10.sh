#!/usr/bin/env bash
# Downloads the CIFAR-10 binary distribution and imports it to data/cifar10.h5.
# Needs internet access and a built build/ringtrain. Never called by the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
url=https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz
md5=c32a1d4ab5d03f1284b67883e8d87530
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fL --retry 3 -o "$tmp/cifar.tar.gz" "$url"
echo "$md5  $tmp/cifar.tar.gz" | md5sum -c -
build/ringtrain data import-cifar "$tmp/cifar.tar.gz" data/cifar10.h5 --gzip 1
build/ringtrain data inspect data/cifar10.h5
