#!/usr/bin/env bash
# Repeats one filter of the GPU tests under several environments and counts the failing runs
# (a race's rate; bench/results/gpu_h100_cold_pool.md). On the GPU host, from an unpacked bundle:
#   VARIANTS="label|K=V K2=V2|runs;..." bash jobs/gpu/device_repeat.sh BUNDLE FILTER [BIN]
#   BIN: the test binary (default BUNDLE/bin/tessera_gpu_tests; another build's, for A/B)
# Each failing run's first lines naming the failure go to the output (the whole log to $OUT/repeat).
set -u
bundle=$(cd "$1" && pwd) || exit 2
filter=$2
bin=${3:-$bundle/bin/tessera_gpu_tests}
# shellcheck disable=SC1091
. "$bundle/env.sh"
IFS=';' read -ra variants <<<"${VARIANTS:?VARIANTS=\"label|K=V ...|runs;...\"}"
for v in "${variants[@]}"; do
    IFS='|' read -r label envs runs <<<"$v"
    fails=0 start=$(date +%s)
    for ((r = 1; r <= runs; ++r)); do
        out=$(env $envs "$bin" --gtest_filter="$filter" 2>&1)
        if ! grep -q "^\[  PASSED  \] 1 test" <<<"$out"; then
            fails=$((fails + 1))
            [ -n "${OUT:-}" ] && mkdir -p "$OUT/repeat" && printf '%s\n' "$out" >"$OUT/repeat/${label// /_}_$r.log"
            echo "   $label run $r: $(grep -m2 -E 'exception|Failure|Which is|cut [0-9]+ R' <<<"$out" | tr '\n' ' ' | cut -c1-400)"
        fi
    done
    echo "== $label ($envs): $fails of $runs runs failed, $(($(date +%s) - start)) s"
done
