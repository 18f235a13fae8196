#!/usr/bin/env bash
# Installs the Debian 12 packages tessera builds against (when missing) and builds it
# into ./build. Idempotent; run as root on a fresh machine. TESSERA_CUDA=ON|OFF|AUTO.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake ninja-build g++ make pkg-config python3 zlib1g-dev libisal-dev
          libgdal-dev gdal-bin libhdf5-openmpi-dev hdf5-tools libopenmpi-dev openmpi-bin
          libcli11-dev libgtest-dev libfftw3-dev python3-matplotlib
          pybind11-dev python3-dev python3-numpy python3-h5py python3-gdal python3-mpi4py
          python3-xarray python3-h5netcdf python3-rioxarray  # the CF/netCDF-4 result read as users read it (tests/io/cf_outputs.sh)
          slurm-wlm munge libpmix-dev)  # slurm-wlm munge libpmix-dev: the slurm test label (mpi_pmix_v4)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_CUDA="${TESSERA_CUDA:-OFF}" >/dev/null
cmake --build build -j"$(nproc)"
