#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle holding tessera_bench_stages and an earlier build of
# it as tessera_bench_stages_before: per-stage timings of both, same cases, same call, CUDA
# (the new one with --check: bit-identical to the CPU backend) and the CPU backend for scale.
# A third build in the bundle as tessera_bench_stages_between, if there, runs once per case.
#   bash jobs/gpu/device_compare.sh BUNDLE_DIR "16384" "topo holes"
set -u
b=$1 sizes=${2:-16384} cases=${3:-"topo holes"}
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
echo "| case | size | backend | threads | total s | without copies s | upload | residues | matching | rasterise | union_find | offset_solve | apply | download | Gpx/s host-to-host | Gpx/s device-resident |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
  for c in $cases; do
    for round in 1 2; do  # interleaved, twice: the lent host's speed drifts within a call
      echo "<!-- $c $n before, round $round -->"
      tessera_bench_stages_before --case "$c" --size "$n" --backend cuda --repeat 5 | tail -1
      echo "<!-- $c $n after, round $round -->"
      check=; [ "$round" = 1 ] && check=--check
      tessera_bench_stages --case "$c" --size "$n" --backend cuda --repeat 5 $check | tail -2
    done
    if command -v tessera_bench_stages_between >/dev/null; then
      echo "<!-- $c $n between -->"
      tessera_bench_stages_between --case "$c" --size "$n" --backend cuda --repeat 5 | tail -1
    fi
    echo "<!-- $c $n cpu before / after -->"
    tessera_bench_stages_before --case "$c" --size "$n" --backend cpu --repeat 2 | tail -1
    tessera_bench_stages --case "$c" --size "$n" --backend cpu --repeat 2 | tail -1
  done
done
