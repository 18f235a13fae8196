#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: per-stage and end-to-end timings of the CUDA
# backend against the CPU backend on the host's cores (README "Performance: GPU").
#   bash jobs/gpu/device_bench.sh BUNDLE_DIR "4096 8192 16384 32768" "8192 16384"
set -u
b=$1 sizes=${2:-"4096 8192 16384 32768"} e2e_sizes=${3:-"8192 16384"}
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
echo "| case | size | backend | threads | total s | without copies s | upload | residues | matching | rasterise | union_find | offset_solve | apply | download | Gpx/s host-to-host | Gpx/s device-resident |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
  check=--check; [ "$n" -gt 16384 ] && check=
  tessera_bench_stages --case topo --size $n --backend cuda --repeat 5 $check
  tessera_bench_stages --case topo --size $n --backend cpu --repeat $([ "$n" -gt 16384 ] && echo 1 || echo 3)
done
echo
echo "end to end (GDAL read of phase, HDF5 write), topo:"
d=$(mktemp -d -p /tmp)
for n in $e2e_sizes; do
  tessera synth --case topo --size ${n}x${n} --seed 1 $d >/dev/null
  for be in cuda cpu; do
    tessera unwrap --overwrite --backend $be --tile-size 1024 $d/topo_wrapped.tif $d/out.h5 2>&1 | grep -E "^tessera:|Mpixel" | tr '\n' ' '
    echo " <- $n $be"
    rm -f $d/out.h5
  done
done
rm -rf $d
