#!/usr/bin/env bash
# On the GPU host (issue 16): where the lease's I/O bounds lie. dd's rates on the disk under
# /tmp and on tmpfs (/dev/shm), then `tessera unwrap` at SIZE² (holes with coherence) with its
# files on each, in one piece and streamed, traced (TESSERA_TRACE: the passes' loads, Regions
# and writes).
#   bash jobs/gpu/device_io_bounds.sh BUNDLE_DIR [SIZE]
set -u
b=$1 n=${2:-32768}
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "host: $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GiB memory"
df -hT /tmp /dev/shm | tail -n +2
d=$(mktemp -d -p /tmp) s=$(mktemp -d -p /dev/shm)
now() { date +%s.%N; }
rate() { python3 -c "print('%.2f' % ($1 / ($3 - $2)))"; }
for where in "$d" "$s"; do
  t0=$(now); dd if=/dev/zero of="$where/x" bs=16M count=256 2>/dev/null; t1=$(now)
  dd if=/dev/zero of="$where/y" bs=16M count=256 conv=fdatasync 2>/dev/null; t2=$(now)
  dd if="$where/x" of=/dev/null bs=16M 2>/dev/null; t3=$(now)
  echo "dd $where: write 4.3 GB $(rate 4.295 $t0 $t1) GB/s (no sync), $(rate 4.295 $t1 $t2) GB/s (fdatasync); read back $(rate 4.295 $t2 $t3) GB/s"
  rm -f "$where/x" "$where/y"
done
t0=$SECONDS; tessera synth --overwrite --case holes --size ${n}x${n} --seed 2 "$d" >/dev/null; echo "synth $n: $((SECONDS - t0)) s"
cp "$d"/holes_wrapped.tif "$d"/holes_coherence.tif "$s"/
ls -la "$d"/*.tif
trace() {
  TESSERA_TRACE=1 tessera unwrap --backend cuda --tile-size 1024 "$@" --overwrite 2>&1 |
    grep -E "chunks/|^tessera: [a-z_]+ +[0-9]|Mpixel|error" | tr -s ' ' | tr '\n' ';'
}
for round in 1 2; do
  for where in "$d" "$s"; do
    in="--coherence $where/holes_coherence.tif --min-coherence 0.3 $where/holes_wrapped.tif"
    trace $in "$where/out.h5"; echo " <- round $round, in one piece, files in $where"
    rm -f "$where/out.h5"
  done
done
for where in "$d" "$s"; do
  in="--coherence $where/holes_coherence.tif --min-coherence 0.3 $where/holes_wrapped.tif"
  trace --gpu-memory-limit 4G $in "$where/out.h5"; echo " <- streamed 4G, files in $where"
  rm -f "$where/out.h5"
done
if sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
  in="--coherence $d/holes_coherence.tif --min-coherence 0.3 $d/holes_wrapped.tif"
  trace $in "$d/out.h5"; echo " <- in one piece, files in $d, page cache dropped first"
else
  echo "page cache: cannot drop it here"
fi
rm -rf "$d" "$s"
