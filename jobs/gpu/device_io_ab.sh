#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle holding `tessera` and `tessera_before` (two builds):
# end-to-end read and write times of one scene, the two builds alternating, and their outputs
# compared bit for bit (h5_same).
#   bash jobs/gpu/device_io_ab.sh BUNDLE_DIR 32768
set -u
b=$1 n=${2:-32768}
. "$(dirname "$0")/holes_scene.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for exe in tessera_before tessera; do
    for mode in "in-one-piece" "--gpu-memory-limit 4G"; do
      extra=$mode; [ "$mode" = in-one-piece ] && extra=
      rm -f "$d/$exe.h5"  # a new file each run (replacing one costs ext4's flush at the rename)
      TESSERA_TRACE=1 $exe unwrap --backend cuda --tile-size 1024 $extra $in "$d/$exe.h5" 2>&1 |
        grep -E "^tessera: (read|residues|matching|union_find|apply|write) +[0-9]|chunks/|Mpixel" | tr -s ' ' | tr '\n' ';'
      echo " <- $exe $mode round $round"
    done
  done
  h5_same "$d/tessera_before.h5" "$d/tessera.h5" unwrapped_phase connected_components >/dev/null &&
    echo "round $round: outputs identical" || echo "round $round: outputs DIFFER"
done
rm -rf "$d"
