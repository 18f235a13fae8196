#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle (issue 16): streamed runs of the CUDA backend.
# 1. Bit identity: cuda in one piece, cuda in chunks (--gpu-memory-limit smaller than the
#    scene), 2 ranks sharing the GPU in chunks, all against the CPU backend in one piece; the
#    same for a noisy scene through its guide (--guide-window 5).
# 2. End to end through GDAL and HDF5 (holes with coherence): in one piece (GeoTIFF blocks read
#    past GDAL's block cache, or through it) against streamed (the inputs kept from the first pass, or
#    read in every pass; MODES_EXTRA="ENV=V OPTIONS;..." adds runs; MOSAIC_MODES="ENV=V OPTIONS;..."
#    runs the mosaic once per setting, X=1 by default), seconds and Gpx/s, per stage; for the mosaic
#    the host's dirty-page limits, and Dirty/Writeback/MemAvailable and the kernel's dirty thresholds
#    (pages) every 0.5 s to $OUT/mosaic_dirty.log; MOSAIC_OUT_DIR=/dev/shm writes the mosaic's result there.
#   bash jobs/gpu/device_streamed.sh BUNDLE_DIR "16384 32768" [MOSAIC_ROWSxCOLS]   (SKIP_IDENTITY=1: no part 1)
set -u
b=$1 sizes=${2:-"16384"} mosaic=${3:-}
. "$b/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=$(nproc)
d=$(mktemp -d -p /tmp)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
pass=0 fail=0
same() {
  if h5_same "$2" "$3" unwrapped_phase connected_components cycles >/dev/null; then pass=$((pass+1)); echo "$1: identical"
  else fail=$((fail+1)); echo "$1: DIFFERS"; fi
}
if [ -z "${SKIP_IDENTITY:-}" ]; then  # SKIP_IDENTITY=1: the timed runs only
tessera synth --case holes --size 4096x4096 --seed 11 "$d" >/dev/null
c="-q --save-cycles --tile-size 256 --coherence $d/holes_coherence.tif --min-coherence 0.3 --reference 2000 1000 $d/holes_wrapped.tif --overwrite"
tessera unwrap --backend cpu $c "$d/cpu.h5"
tessera unwrap --backend cuda $c "$d/gpu.h5"
tessera unwrap --backend cuda --gpu-memory-limit 128M $c "$d/gpu_chunks.h5"
TESSERA_REREAD=1 tessera unwrap --backend cuda --gpu-memory-limit 128M $c "$d/gpu_reread.h5"
tessera unwrap --backend cuda --chunk-rows 256 $c "$d/gpu_rows.h5"
mkdir -p "$d/scr"
tessera unwrap --backend cuda --gpu-memory-limit 128M --scratch "$d/scr" $c "$d/gpu_scratch.h5"
mpirun --oversubscribe -np 2 tessera unwrap --backend cuda --share-gpus --gpu-memory-limit 96M $c "$d/gpu2.h5"
for o in gpu gpu_chunks gpu_reread gpu_rows gpu_scratch gpu2; do same "4096² holes cpu vs $o" "$d/cpu.h5" "$d/$o.h5"; done
# --guide-window (docs/ARCHITECTURE.md 2.1): the guide made on the host, the same bits on the device.
tessera synth --case noisy --size 2048x2048 --seed 12 "$d" >/dev/null
g="-q --save-cycles --tile-size 256 --guide-window 5 --reference 700 900 $d/noisy_wrapped.tif --overwrite"
tessera unwrap --backend cpu $g "$d/ncpu.h5"
tessera unwrap --backend cuda $g "$d/ngpu.h5"
tessera unwrap --backend cuda --gpu-memory-limit 48M $g "$d/ngpu_chunks.h5"
mpirun --oversubscribe -np 2 tessera unwrap --backend cuda --share-gpus --chunk-rows 512 $g "$d/ngpu2.h5"
for o in ngpu ngpu_chunks ngpu2; do same "2048² noisy --guide-window 5 cpu vs $o" "$d/ncpu.h5" "$d/$o.h5"; done
tessera plan "$d/holes_wrapped.tif" --backend cuda --gpu-memory-limit 128M --tile-size 256 | grep layout
echo "bit identity: $pass passed, $fail failed"
fi
rm -f "$d"/*.h5
for n in $sizes; do
  t0=$SECONDS; tessera synth --overwrite --case holes --size ${n}x${n} --seed 2 "$d" >/dev/null; echo "synth $n: $((SECONDS - t0)) s"
  in="--coherence $d/holes_coherence.tif --min-coherence 0.3 $d/holes_wrapped.tif"
  # env: TESSERA_READ_BLOCKS=0 reads through RasterIO and GDAL's block cache (the default: block by block);
  # TESSERA_REREAD=1 reads the inputs in every pass instead of keeping them.
  modes=("X=1 in-one-piece" "TESSERA_READ_BLOCKS=0 in-one-piece" "X=1 --gpu-memory-limit 4G" "TESSERA_REREAD=1 --gpu-memory-limit 4G")
  IFS=';' read -r -a more <<<"${MODES_EXTRA:-}"
  for mode in "${modes[@]}" "${more[@]}"; do
    [ -n "$mode" ] || continue
    env=${mode%% *} extra=${mode#* }; [ "$extra" = in-one-piece ] && extra=
    rm -f "$d/out.h5"  # a new file, as most runs write (replacing one costs ext4's flush at the rename)
    env $env TESSERA_TRACE=1 tessera unwrap --backend cuda --tile-size 1024 $extra $in "$d/out.h5" 2>&1 |
      grep -E "chunks/|^tessera: [a-z_]+ +[0-9]|Mpixel" | tr -s ' ' | tr '\n' ';'
    echo " <- $n $mode"
  done
  rm -f "$d"/*.tif "$d"/out.h5
done
if [ -n "$mosaic" ]; then
  . "$(dirname "$0")/mosaic_scene.sh"
  tessera plan "$d/mosaic.vrt" --backend cuda
  # The kernel's dirty-page limits: pass 3 writes ~23 GiB, near a 128 GB host's default thresholds.
  for k in dirty_ratio dirty_background_ratio dirty_bytes dirty_background_bytes; do
    echo "vm.$k $(cat /proc/sys/vm/$k 2>/dev/null)"
  done
  IFS=';' read -r -a mmodes <<<"${MOSAIC_MODES:-X=1}"
  for mode in "${mmodes[@]}"; do
    env=${mode%% *} extra=; [ "$env" = "$mode" ] || extra=${mode#* }
    o=${MOSAIC_OUT_DIR:-$d}; rm -f "$o/out.h5"  # MOSAIC_OUT_DIR=/dev/shm: the write without the disk
    t0=$(date +%s.%N)
    # Dirty and Writeback (kB) every half second during the run (epoch seconds), to mosaic_dirty.log.
    echo "== $mode: started $t0" >>"${OUT:-$d}/mosaic_dirty.log"
    (while sleep 0.5; do echo "$(date +%s.%N) $(grep -E '^(Dirty|Writeback|MemAvailable):' /proc/meminfo | tr -s ' ' | tr '\n' ' ') $(grep -E '^nr_dirty_(background_)?threshold ' /proc/vmstat | tr '\n' ' ')"; done \
      >>"${OUT:-$d}/mosaic_dirty.log") 2>/dev/null &
    sampler=$!
    env $env TESSERA_TRACE=1 tessera unwrap --backend cuda --tile-size 1024 $extra "$d/mosaic.vrt" "$o/out.h5" 2>&1 |
      tee -a "${OUT:-$d}/mosaic_trace.log" | grep -E "chunks/|unwrap |^tessera: [a-z_]+ +[0-9]|Mpixel|error" | tr -s ' ' | tr '\n' ';'
    pkill -P "$sampler" 2>/dev/null; kill "$sampler" 2>/dev/null
    echo " wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
    echo " <- mosaic $mosaic $mode"
    rm -f "$o/out.h5"
  done
fi
rm -rf "$d"
[ "$fail" -eq 0 ]
