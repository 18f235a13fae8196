#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: what --guide-window costs end to end (docs/ARCHITECTURE.md
# 2.1). `tessera synth --case noisy` at N², then `tessera unwrap` on the CUDA and CPU backends with
# and without --guide-window 5, traced (TESSERA_TRACE=1: read includes the guide, "guide" the
# projection), each run twice.
#   bash jobs/gpu/device_guide.sh BUNDLE_DIR [N]
set -u
b=$1 n=${2:-8192}
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
d=$(mktemp -d -p /tmp)
trap 'rm -rf "$d"' EXIT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t0=$SECONDS; tessera synth --case noisy --size ${n}x${n} --seed 41 "$d" >/dev/null; echo "synth noisy $n²: $((SECONDS - t0)) s"
for round in 1 2; do
  for backend in cuda cpu; do
    for g in 0 5 auto; do
      rm -f "$d/o.h5"
      s=$(date +%s%N)
      TESSERA_TRACE=1 tessera unwrap --backend $backend --guide-window $g --tile-size 1024 "$d/noisy_wrapped.tif" "$d/o.h5" >"$d/out" 2>"$d/err" ||
        { echo "FAIL: $backend guide $g: $(head -c 300 "$d/err")"; continue; }
      e=$(date +%s%N)
      stages=$(grep -E "^tessera: (read|residues|matching|union_find|correct|guide|write) " "$d/err" | awk '{printf "%s %s, ", $2, $3}')
      [ $round = 1 ] && cp "$d/o.h5" "$d/$backend-$g.h5"
      echo "round $round $backend guide $g: $(awk -v a=$s -v b=$e 'BEGIN{printf "%.2f", (b - a) / 1e9}') s wall; $(grep -o 'residues [0-9]*' "$d/out" | head -1); $stages"
    done
  done
done
for pair in "cuda-0 cpu-0" "cuda-5 cpu-5" "cuda-auto cpu-auto" "cuda-auto cuda-5"; do
  set -- $pair
  h5_same "$d/$1.h5" "$d/$2.h5" unwrapped_phase connected_components >/dev/null && echo "$1 = $2, bit for bit" || echo "FAIL: $1 differs from $2"
done
