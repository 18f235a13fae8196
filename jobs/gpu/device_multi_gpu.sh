#!/usr/bin/env bash
# On a host of several GPUs, from an unpacked bundle (issue 16: "any number of GPUs"): one rank
# a GPU (tessera's default mapping, node-local rank -> device), against one rank on one GPU.
# 1. Bit identity: holes 4096² with coherence on 1..G ranks (automatic grid, a row grid, 2x2),
#    in one piece and in chunks (--gpu-memory-limit), each against the CPU backend on one rank;
#    and the device of every rank, seen from nvidia-smi while a run holds them.
# 2. End to end through GDAL and HDF5 (holes with coherence, SIZES), and the NISAR-size mosaic
#    (MOSAIC=ROWSxCOLS, a VRT of 8 x 8 copies of a topo scene): wall seconds and the rank-0 stages
#    on 1, 2, ... G ranks, each rank OMP_NUM_THREADS = host cores / ranks, not bound to cores.
#   bash jobs/gpu/device_multi_gpu.sh BUNDLE_DIR "16384 32768" [MOSAIC_ROWSxCOLS]
# (MPIIO_TOO=1: each holes run on several ranks again through MPI-IO's collective writes.
#  AGAIN=VAR=VALUE: each run on several ranks, holes and mosaic, again with that variable, e.g.
#  AGAIN=TESSERA_HDF5_IN_PLACE=0 for the phase sent to rank 0 instead of written in place.)
set -u
b=$1 sizes=${2:-"16384"} mosaic=${3:-}
. "$b/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
G=$(nvidia-smi -L | wc -l) cores=$(nproc)
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
echo "GPUs $G, host cores $cores, $(free -g | awk '/Mem:/ {print $2}') GiB"
d=$(mktemp -d -p /tmp)
ranks=""; for np in 1 2 4 8; do [ "$np" -le "$G" ] && ranks="$ranks $np"; done
run() {  # run NP OPTIONS...: tessera unwrap --backend cuda on NP ranks, one GPU each
  local np=$1 x=(); shift
  [ -n "${TESSERA_TRACE:-}" ] && x=(-x TESSERA_TRACE)
  [ -n "${TESSERA_HDF5_GATHER:-}" ] && x+=(-x TESSERA_HDF5_GATHER)
  [ -n "${AGAIN_NOW:-}" ] && x+=(-x "$AGAIN_NOW")
  mpirun --oversubscribe --bind-to none -np "$np" -x OMP_NUM_THREADS=$((cores / np)) "${x[@]}" \
    tessera unwrap --backend "${BACKEND:-cuda}" "$@"
}
pass=0 fail=0
same() {
  if h5_same "$2" "$3" unwrapped_phase connected_components cycles >/dev/null; then pass=$((pass+1)); echo "$1: identical"
  else fail=$((fail+1)); echo "$1: DIFFERS"; fi
}
tessera synth --case holes --size 4096x4096 --seed 11 "$d" >/dev/null
c="-q --save-cycles --tile-size 256 --coherence $d/holes_coherence.tif --min-coherence 0.3 --reference 2000 1000 --overwrite $d/holes_wrapped.tif"
OMP_NUM_THREADS=$cores tessera unwrap --backend cpu $c "$d/cpu.h5"
for np in $ranks; do
  run "$np" $c "$d/g$np.h5" & pid=$!
  sleep 1; echo "np $np: GPUs in use: $(nvidia-smi --query-compute-apps=gpu_bus_id --format=csv,noheader | sort | uniq -c | tr -s ' \n' ' ')"
  wait $pid
  same "4096² holes cpu vs cuda np $np" "$d/cpu.h5" "$d/g$np.h5"
  run "$np" --rank-grid ${np}x1 --gpu-memory-limit 64M $c "$d/r$np.h5"
  same "4096² holes cpu vs cuda np $np rows ${np}x1, chunks of 64M" "$d/cpu.h5" "$d/r$np.h5"
done
[ "$G" -ge 4 ] && { run 4 --rank-grid 2x2 $c "$d/q.h5"; same "4096² holes cpu vs cuda np 4 grid 2x2" "$d/cpu.h5" "$d/q.h5"; }
echo "bit identity: $pass passed, $fail failed"
rm -f "$d"/*.h5 "$d"/*.tif
export TESSERA_TRACE=1
timed() {  # timed LABEL NP OPTIONS...: wall seconds and rank 0's stage lines
  local label=$1 np=$2; shift 2
  rm -f "$d/out.h5"
  local t0; t0=$(date +%s.%N)
  run "$np" "$@" "$d/out.h5" 2>&1 | grep -E "^tessera: [a-z_0-9]+ +[0-9.]+ s|^tessera: matching/|^tessera: cut_clusters|^tessera: (device|host) rule|hdf5 |in place|Mpixel|chunks/" | tr -s ' ' | tr '\n' ';'
  echo " <- $label np $np${TESSERA_HDF5_GATHER:+ TESSERA_HDF5_GATHER=$TESSERA_HDF5_GATHER}${AGAIN_NOW:+ $AGAIN_NOW}, wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}') s"
}
again() {  # again LABEL NP OPTIONS...: on several ranks, the same run with AGAIN's variable
  [ "$2" -gt 1 ] && [ -n "${AGAIN:-}" ] || return 0
  export "${AGAIN?}"; AGAIN_NOW=${AGAIN%%=*} timed "$@"; unset "${AGAIN%%=*}"
}
for n in $sizes; do
  tessera synth --overwrite --case holes --size ${n}x${n} --seed 2 "$d" >/dev/null
  for np in $ranks; do
    timed "holes $n² with coherence" "$np" --tile-size 1024 --coherence "$d/holes_coherence.tif" --min-coherence 0.3 "$d/holes_wrapped.tif"
    # MPIIO_TOO=1: the same through MPI-IO's collective writes (as across nodes)
    [ "$np" -gt 1 ] && [ -n "${MPIIO_TOO:-}" ] && TESSERA_HDF5_GATHER=0 timed "holes $n² with coherence" "$np" --tile-size 1024 \
      --coherence "$d/holes_coherence.tif" --min-coherence 0.3 "$d/holes_wrapped.tif"
    again "holes $n² with coherence" "$np" --tile-size 1024 --coherence "$d/holes_coherence.tif" --min-coherence 0.3 \
      "$d/holes_wrapped.tif"
  done
  rm -f "$d"/*.tif
done
if [ -n "$mosaic" ]; then
  . "$(dirname "$0")/mosaic_scene.sh"
  for np in $ranks; do
    [ "$np" -eq 1 ] && [ -n "${MOSAIC_SKIP_ONE:-}" ] && continue
    timed "mosaic $mosaic" "$np" --tile-size 1024 "$d/mosaic.vrt"
    again "mosaic $mosaic" "$np" --tile-size 1024 "$d/mosaic.vrt"
  done
fi
rm -rf "$d"
[ "$fail" -eq 0 ]
