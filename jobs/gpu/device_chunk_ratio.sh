#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle (issue 16: a streamed run against the run in one
# piece): the holes N² scene with coherence on the CUDA backend in one piece, in 2 and 4 chunks
# (--chunk-rows N/2, N/4) and under --gpu-memory-limit 4G, alternating, ROUNDS times (default 2);
# per run the wall seconds, tessera's total and the passes (TESSERA_TRACE), and whether the
# result equals the run in one piece bit for bit.
#   bash jobs/gpu/device_chunk_ratio.sh BUNDLE_DIR [N ...]
set -u
b=$1
shift
sizes=${*:-32768}
for n in $sizes; do
  . "$(dirname "$0")/holes_scene.sh"
  modes=("one-piece" "--chunk-rows $((n / 2))" "--chunk-rows $((n / 4))" "--gpu-memory-limit 4G")
  for round in $(seq 1 "${ROUNDS:-2}"); do
    i=0
    for m in "${modes[@]}"; do
      extra=$m; [ "$m" = one-piece ] && extra=
      rm -f "$d/o$i.h5"
      s=$(date +%s%N)
      TESSERA_TRACE=1 tessera unwrap --backend cuda $extra $in "$d/o$i.h5" >"$d/out" 2>"$d/err" ||
        { echo "FAIL: $n $m: $(head -c 300 "$d/err")"; i=$((i + 1)); continue; }
      e=$(date +%s%N)
      same=; [ $i -gt 0 ] && { h5_same "$d/o0.h5" "$d/o$i.h5" unwrapped_phase connected_components >/dev/null && same="= one piece" || same="DIFFERS from one piece"; }
      echo "$n² round $round $m: $(awk -v a=$s -v b=$e 'BEGIN{printf "%.2f", (b - a) / 1e9}') s wall, $(grep -o '[0-9.]* s, [0-9.]* Mpixel/s' "$d/out");" \
        "$(grep -E '^tessera: ([a-z_]+ +[0-9.]+ s$|chunks/pass [0-9]: waited)' "$d/err" | tr -s ' ' |
           sed -e 's/^tessera: //' -e 's/ (regions made.*//' | tr '\n' ';') $same"
      i=$((i + 1))
    done
  done
  rm -rf "$d"
done
