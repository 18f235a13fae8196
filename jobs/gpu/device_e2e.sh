#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: end-to-end `--backend cuda` against
# `--backend cpu` through GDAL and HDF5, every synthetic case, several tile sizes,
# 1 and 2 ranks sharing one GPU. Prints one line per comparison and a summary.
# With GPDATA (a folder of Ghiglia & Pritt VRTs, see jobs/gpu/README.md) the book's data too.
#   bash jobs/gpu/device_e2e.sh BUNDLE_DIR [SIZE] [GPDATA]
set -u
b=$1 size=${2:-1024} gp=${3:-}
. "$b/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
d=$(mktemp -d)
pass=0 fail=0
# same WHAT A B: the three datasets of A and B byte for byte; counts and prints one line.
same() {
  local out
  if out=$(h5_same "$2" "$3" unwrapped_phase cycles connected_components); then
    pass=$((pass+1)); echo "$1: identical"
  else
    fail=$((fail+1)); echo "$1: $out"
  fi
}
for c in bowl topo holes fringes; do
  tessera synth --case $c --size ${size}x${size} --seed 3 "$d" >/dev/null || { echo "synth $c failed"; fail=$((fail+1)); continue; }
  for tile in 64 300 512; do
    common="-q --save-cycles --tile-size $tile --coherence $d/${c}_coherence.tif --min-coherence 0.2 $d/${c}_wrapped.tif"
    tessera unwrap --overwrite --backend cpu $common $d/cpu.h5 || { fail=$((fail+1)); continue; }
    tessera unwrap --overwrite --backend cuda $common $d/gpu.h5 || { fail=$((fail+1)); continue; }
    mpirun --oversubscribe -np 2 tessera unwrap --overwrite --backend cuda --share-gpus $common $d/gpu2.h5 || { fail=$((fail+1)); continue; }
    for other in gpu gpu2; do same "$c tile $tile cpu vs $other" $d/cpu.h5 $d/$other.h5; done
  done
  # No coherence and no mask: the CUDA backend uploads phase rows while GDAL reads the rest.
  plain="-q --save-cycles --tile-size 256 $d/${c}_wrapped.tif"
  tessera unwrap --overwrite --backend cpu $plain $d/cpu.h5 && tessera unwrap --overwrite --backend cuda $plain $d/gpu.h5 &&
    mpirun --oversubscribe -np 2 tessera unwrap --overwrite --backend cuda --share-gpus $plain $d/gpu2.h5 || { fail=$((fail+1)); continue; }
  for other in gpu gpu2; do same "$c streamed read cpu vs $other" $d/cpu.h5 $d/$other.h5; done
done
if [ -n "$gp" ]; then
  for v in "$gp"/*.vrt; do
    n=$(basename "$v" .vrt)
    mask=()
    [ -f "$gp/${n}_mask.raw" ] && mask=(--mask "$gp/${n}_mask.raw")
    for tile in 32 128; do
      common="-q --save-cycles --tile-size $tile ${mask[*]} $v"
      tessera unwrap --overwrite --backend cpu $common $d/cpu.h5 && tessera unwrap --overwrite --backend cuda $common $d/gpu.h5 || { fail=$((fail+1)); continue; }
      same "G&P $n tile $tile cpu vs gpu" $d/cpu.h5 $d/gpu.h5
    done
  done
fi
rm -rf "$d"
echo "end-to-end cuda vs cpu: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
