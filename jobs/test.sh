#!/usr/bin/env bash
# README command 2: set up, build, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
