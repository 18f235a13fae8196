#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: the device rule's rounds on the cooperative grid (the
# default) against one kernel a step (TESSERA_GRID_ROUNDS=0) and other settings (VARIANTS="K=V;K=V"),
# in one process, every run's cuts checked against the host rule's (tessera_bench_cut_rule --variants). Mosaics: K x K copies of a
# scene, whose seams make long tails of many open clusters (the NISAR-size VRT mosaic's matching).
#   bash jobs/gpu/device_grid_rounds.sh BUNDLE_DIR ["topo 2048 8;holes 16384 1;..."]
set -u
b=$1 cases=${2:-"topo 2048 8;holes 16384 1;topo 16384 1;topo 4096 8"}
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
rc=0
IFS=';' read -r -a list <<<"$cases"
for c in "${list[@]}"; do
  read -r name size k <<<"$c"
  echo "== $name $size mosaic $k"
  tessera_bench_cut_rule --case "$name" --size "$size" --mosaic "$k" --repeat 2 --variants "${VARIANTS:-TESSERA_GRID_ROUNDS=0}" || rc=1
done
exit $rc
