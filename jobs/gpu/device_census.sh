#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: what the residue census of --guide-window auto (the
# default; docs/ARCHITECTURE.md 2.2) costs end to end. The holes scene with coherence at each N²
# (16384: every row counted; 32768: rows 0-63 of every 1024) on the CUDA backend, the default
# against --guide-window 0, alternating, each twice; the same bits either way (the census guides
# none of these scenes).
#   bash jobs/gpu/device_census.sh BUNDLE_DIR [N ...]
set -u
b=$1
shift
sizes=${*:-16384 32768}
for n in $sizes; do
  . "$(dirname "$0")/holes_scene.sh"
  for round in 1 2; do
    for g in auto 0; do
      rm -f "$d/o_$g.h5"
      s=$(date +%s%N)
      tessera unwrap --backend cuda --guide-window $g $in "$d/o_$g.h5" >"$d/out" 2>"$d/err" ||
        { echo "FAIL: $n guide $g: $(head -c 300 "$d/err")"; continue; }
      e=$(date +%s%N)
      echo "$n² round $round guide $g: $(awk -v a=$s -v b=$e 'BEGIN{printf "%.2f", (b - a) / 1e9}') s wall; $(grep -o 'residue census: [0-9.]* %' "$d/out")"
    done
    h5_same "$d/o_auto.h5" "$d/o_0.h5" unwrapped_phase connected_components >/dev/null && echo "$n² round $round: auto = 0, bit for bit" ||
      echo "FAIL: $n² round $round: auto differs from --guide-window 0"
  done
  rm -rf "$d"
done
