#!/usr/bin/env bash
# README command 2: set up, build, run the whole test suite. Where nvcc is found (and build/
# is the CPU build), the CUDA backend is compiled too, into build-cuda/: the library, the
# tessera program and the GPU test binary, to prove that it compiles; GPU tests are not run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"

nvcc=$(command -v nvcc || true)
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ -n $nvcc && ${TESSERA_CUDA:-OFF} != ON ]]; then
  start=$SECONDS
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_CUDA=ON \
        -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
  cmake --build build-cuda -j2 --target tessera tessera_gpu_tests
  echo "test.sh: the CUDA backend compiles (build-cuda: tessera, tessera_gpu_tests; $((SECONDS - start)) s; GPU tests not run here)"
fi
