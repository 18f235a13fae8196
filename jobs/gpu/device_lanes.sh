#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: the CLI batches on frame lanes (issue 6 item 4).
# 1. `unwrap --from-hologram` with --backend cuda: --lanes 4 and 1, and the per-frame path
#    (--save-cuts forces it), on holograms of mixed sizes: datasets byte-identical.
# 2. `hologram --backend cuda`: --lanes 4 against 1, GeoTIFFs byte-identical.
# 3. Frames per second through the CLI (GDAL read, HDF5 write): N copies of a 1024² hologram.
#   bash jobs/gpu/device_lanes.sh BUNDLE_DIR HOLO_DIR [N]
set -u
b=$1 h=$2 n=${3:-300}
. "$b/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
d=$(mktemp -d)
pass=0 fail=0
ins=$(ls "$h"/f*.tif)
for how in "--lanes 4" "--lanes 1" "--lanes 1 --save-cuts"; do
  tag=$(echo "$how" | tr -d ' -')
  mkdir -p $d/$tag
  tessera unwrap --overwrite --from-hologram --backend cuda -q $how $ins $d/$tag || { echo "unwrap $how failed"; fail=$((fail+1)); }
done
for f in $ins; do
  s=$(basename "$f" .tif)
  for tag in lanes1 lanes1savecuts; do
    if out=$(h5_same $d/lanes4/$s.h5 $d/$tag/$s.h5 unwrapped_phase connected_components); then
      pass=$((pass+1)); echo "$s: cuda lanes 4 vs $tag identical"
    else
      fail=$((fail+1)); echo "$s: cuda lanes 4 vs $tag: $out"
    fi
  done
done
mkdir -p $d/h4 $d/h1
tessera hologram --overwrite --backend cuda --lanes 4 $ins $d/h4 >/dev/null && tessera hologram --overwrite --backend cuda --lanes 1 $ins $d/h1 >/dev/null
for f in $d/h4/*; do
  if cmp -s "$f" "$d/h1/$(basename "$f")"; then pass=$((pass+1)); else fail=$((fail+1)); echo "hologram $(basename "$f") differs"; fi
done
echo "lane checks: $pass identical, $fail failed"

mkdir -p $d/many $d/o
for i in $(seq -w 1 $n); do ln -s "$h/h1024.tif" $d/many/f$i.tif; done
for be in "cuda --lanes 1" "cuda --lanes 4" "cuda --lanes 8"; do
  rm -rf $d/o/*
  tessera unwrap --overwrite --from-hologram --backend $be $d/many/*.tif $d/o | head -1
done
rm -rf $d/o/*
mkdir -p $d/few && for i in $(seq -w 1 32); do ln -s "$h/h1024.tif" $d/few/f$i.tif; done
tessera unwrap --overwrite --from-hologram --backend cpu --lanes 1 $d/few/*.tif $d/o | head -1
rm -rf "$d"
[ $fail -eq 0 ]
