#!/usr/bin/env bash
# Installs every system package that ringtrain's build, tests and jobs/ need on
# Debian 12 / Ubuntu 22.04+ (Slurm for the `slurm` tests, which start their own daemons; PyYAML
# and jsonschema for tests/recipes/check_recipes.py). env/ringtrain.def runs it on Ubuntu 24.04.
# Idempotent: does nothing when all are present.
set -euo pipefail

# libjpeg-turbo's development files (the libjpeg API): Debian and Ubuntu name them differently.
jpeg_dev=libjpeg62-turbo-dev
if grep -qs '^ID=ubuntu' /etc/os-release; then jpeg_dev=libjpeg-turbo8-dev; fi

packages=(
  build-essential cmake ninja-build pkg-config xz-utils
  libopenmpi-dev openmpi-bin
  libhdf5-dev hdf5-tools libxxhash-dev
  "$jpeg_dev" libpng-dev
  libarchive-dev libssl-dev libicu-dev
  libopenblas-dev libdnnl-dev
  libcli11-dev libspdlog-dev nlohmann-json3-dev libtomlplusplus-dev
  libgtest-dev
  python3 python3-matplotlib python3-h5py python3-yaml python3-jsonschema
  graphviz shellcheck
  slurmctld slurmd slurm-client
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "env: all ${#packages[@]} packages present"
  exit 0
fi

echo "env: installing ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
