#!/usr/bin/env bash
# On a GPU host, from an unpacked bundle holding `tessera` and `tessera_before` (two builds): the
# holes N² scene with coherence on NP ranks, one GPU each (OMP_NUM_THREADS = host cores / NP), the
# two builds alternating ROUNDS times (default 2): rank 0's stages and matching steps
# (TESSERA_TRACE), wall seconds, and the two outputs compared bit for bit (h5_same).
#   NP=2 bash jobs/gpu/device_ranks_ab.sh BUNDLE_DIR [N]
set -u
b=$1 n=${2:-32768} np=${NP:-2}
. "$(dirname "$0")/holes_scene.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
echo "GPUs $(nvidia-smi -L | wc -l), host cores $(nproc), $np ranks"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for exe in tessera_before tessera; do
    rm -f "$d/$exe.h5"
    t0=$(date +%s.%N)
    mpirun --oversubscribe --bind-to none -np "$np" -x OMP_NUM_THREADS=$(($(nproc) / np)) -x TESSERA_TRACE=1 \
      "$b/bin/$exe" unwrap --backend cuda $in "$d/$exe.h5" 2>&1 |
      grep -E "^tessera: [a-z_0-9]+ +[0-9.]+ s|^tessera: matching/|^tessera: (device|host) rule|Mpixel" | tr -s ' ' | tr '\n' ';'
    echo " <- $exe np $np round $round, wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}') s"
  done
  h5_same "$d/tessera_before.h5" "$d/tessera.h5" unwrapped_phase connected_components >/dev/null &&
    echo "round $round: outputs identical" || echo "round $round: outputs DIFFER"
done
rm -rf "$d"
