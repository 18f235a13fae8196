#!/usr/bin/env bash
# Runs the CUDA backend's tests on a GPU host from an unpacked gpu-bundle (see
# ../shared/tools/README.md), then compute-sanitizer's memcheck, racecheck and initcheck on
# a small filter of them, and prints one summary. Exit status 0 only if everything passed.
#
# Here (build machine):
#   cmake -S . -B build-gpu -G Ninja -DTESSERA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_STANDARD=17
#   cmake --build build-gpu -j2 --target tessera_gpu_tests
#   ../shared/tools/gpu-bundle -o gpubundle/tessera build-gpu/tests/tessera_gpu_tests
#   cp tests/gpu/run_on_device.sh gpubundle/tessera/
#   tar -C gpubundle -cJf gpubundle.tar.xz tessera
# On the GPU host:
#   mkdir -p /tmp/b && tar -C /tmp/b -xJf gpubundle.tar.xz && bash /tmp/b/tessera/run_on_device.sh /tmp/b/tessera
#
# usage: run_on_device.sh [BUNDLE_DIR] [LOG_DIR]
#   BUNDLE_DIR  the unpacked bundle (default: this script's folder)
#   LOG_DIR     where the full logs go (default: $OUT if set, else /tmp/tessera_gpu_logs)
# Environment: SANITIZE=0 skips the compute-sanitizer runs; NP="2 3 4" sets the rank counts
# of the distributed test (default "2 3").
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=$(cd "${1:-$here}" && pwd) || { echo "run_on_device: no bundle dir ${1:-}" >&2; exit 2; }
logs=${2:-${OUT:-/tmp/tessera_gpu_logs}}
mkdir -p "$logs"
[ -f "$bundle/env.sh" ] || { echo "run_on_device: $bundle/env.sh missing (not a gpu-bundle dir)" >&2; exit 2; }
# shellcheck disable=SC1091
. "$bundle/env.sh"
bin=$bundle/bin/tessera_gpu_tests
export TESSERA_EXE=$bundle/bin/tessera  # tests that run the program (tests/support/cli.h)
[ -x "$bin" ] || { echo "run_on_device: $bin missing" >&2; exit 2; }

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
summary=()
failed=0
note() { summary+=("$1"); echo "== $1"; }

echo "== device"
nvidia-smi -L 2>&1 || echo "(no nvidia-smi)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null

# gtest summary of a log: passed / failed / skipped counts and the failing tests.
gtest_summary() {
    local log=$1 p f s
    p=$(grep -c '^\[       OK \]' "$log")
    f=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$log")
    s=$(grep -c '^\[  SKIPPED \] [A-Za-z].*(' "$log")
    echo "ok $p, failed $f, skipped $s"
}

run_gtest() {  # name, log, command...
    local name=$1 log=$2
    shift 2
    echo "== $name: $*"
    local t0=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    grep -E '^\[ +(FAILED|SKIPPED) +\]|^\[ (timing|memory|info) +\]|Failure|error' "$log" | head -60
    note "$name: rc $rc, $(gtest_summary "$log"), $((SECONDS - t0)) s (log $log)"
    [ $rc -eq 0 ] || failed=1
}

# 1. The whole suite, one process.
run_gtest "gpu tests" "$logs/gpu_tests.log" "$bin" --gtest_color=no

# 2. Across ranks (every rank on the same GPU).
for np in ${NP:-2 3}; do
    run_gtest "distributed np=$np" "$logs/distributed_np$np.log" \
        mpirun --oversubscribe -np "$np" -x OMP_NUM_THREADS=2 "$bin" --gtest_color=no \
        --gtest_filter='CudaDistributed.*'
done

# 3. compute-sanitizer on small cases (kernels run 10-100x slower under it).
if [ "${SANITIZE:-1}" != 0 ]; then
    cs=$(command -v compute-sanitizer || true)
    for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
             /usr/local/cuda-*/bin/compute-sanitizer; do
        [ -z "$cs" ] && [ -x "$c" ] && cs=$c
    done
    if [ -z "$cs" ]; then
        note "compute-sanitizer: not found on this host, skipped"
    else
        small='CudaRegion.StagesMatchCpuOnOwnWindowsWithHalo:CudaRegion.MultiChargeResiduesExpandLikeTheCpu:CudaVsCpuRandom.*:Synth/CudaVsCpu.UnwrapImageIsBitIdentical/holes_300x263'
        tiny='CudaRegion.StagesMatchCpuOnOwnWindowsWithHalo:CudaVsCpuRandom.*'
        for tool in memcheck racecheck initcheck synccheck; do
            filter=$small
            extra=()
            case $tool in
                memcheck) extra=(--leak-check full) ;;
                racecheck) filter=$tiny; extra=(--racecheck-report analysis) ;;
                initcheck | synccheck) filter=$tiny ;;
            esac
            log=$logs/sanitizer_$tool.log
            echo "== compute-sanitizer --tool $tool, filter $filter"
            t0=$SECONDS
            "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 99 --print-limit 50 "$bin" --gtest_color=no \
                --gtest_filter="$filter" >"$log" 2>&1
            rc=$?
            grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Invalid|Uninitialized|Race|Barrier|^\[  FAILED' "$log" | head -30
            errs=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -1)
            note "compute-sanitizer $tool: rc $rc, ${errs:-no summary line}, $(gtest_summary "$log"), $((SECONDS - t0)) s"
            [ $rc -eq 0 ] || failed=1
        done
    fi
fi

echo
echo "================ summary ================"
for line in "${summary[@]}"; do echo "  $line"; done
[ $failed -eq 0 ] && echo "  ALL PASSED" || echo "  SOMETHING FAILED (logs in $logs)"
exit $failed
