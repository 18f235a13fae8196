#!/usr/bin/env bash
# On a GPU host, from an unpacked bundle holding `tessera` and `tessera_before` (two builds): the
# holes N² scene with coherence on NP ranks, one GPU each (OMP_NUM_THREADS = host cores / NP), the
# two builds alternating ROUNDS times (default 2): rank 0's stages and matching steps
# (TESSERA_TRACE), wall seconds, and the two outputs compared bit for bit (h5_same).
# MOSAIC=ROWSxCOLS: then the NISAR-size topo mosaic (jobs/gpu/mosaic_scene.sh) once each.
# ORDER="tessera tessera_before": the new build first in each pair (default: the old one first);
# ROUNDS=0: the mosaic alone. OPTS="...": more unwrap options for the holes scene's runs (e.g.
# "--gpu-memory-limit 4G" for a streamed run).
#   NP=2 [MOSAIC=69696x70560] bash jobs/gpu/device_ranks_ab.sh BUNDLE_DIR [N]
set -u
b=$1 n=${2:-32768} np=${NP:-2}
. "$(dirname "$0")/holes_scene.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
echo "GPUs $(nvidia-smi -L | wc -l), host cores $(nproc), $np ranks"
ab() {  # ab LABEL OPTIONS...: each build once, then the outputs compared
  local label=$1; shift
  for exe in ${ORDER:-tessera_before tessera}; do
    rm -f "$d/$exe.h5"
    t0=$(date +%s.%N)
    mpirun --oversubscribe --bind-to none -np "$np" -x OMP_NUM_THREADS=$(($(nproc) / np)) -x TESSERA_TRACE=1 \
      "$b/bin/$exe" unwrap --backend cuda "$@" "$d/$exe.h5" 2>&1 |
      grep -E "^tessera: [a-z_0-9]+ +[0-9.]+ s|^tessera: matching/|^tessera: (device|host) rule:|^tessera: chunks/|Mpixel" | tr -s ' ' | tr '\n' ';'
    echo " <- $exe np $np $label, wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}') s"
  done
  h5_same "$d/tessera_before.h5" "$d/tessera.h5" unwrapped_phase connected_components >/dev/null &&
    echo "$label: outputs identical" || echo "$label: outputs DIFFER"
}
for round in $(seq 1 "${ROUNDS:-2}"); do ab "holes ${n}² ${OPTS:-} round $round" ${OPTS:-} $in; done
[ "${ROUNDS:-2}" -gt 0 ] || echo "(no rounds of the holes scene)"
rm -f "$d"/*
if [ -n "${MOSAIC:-}" ]; then
  mosaic=$MOSAIC
  . "$(dirname "$0")/mosaic_scene.sh"
  ab "mosaic $mosaic" --tile-size 1024 "$d/mosaic.vrt"
fi
rm -rf "$d"
