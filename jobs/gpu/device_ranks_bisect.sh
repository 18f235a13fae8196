#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: the two-rank runs of the CUDA backend that failed in
# session 34 (Open MPI's MPI_ERR_ROOT, or a hang), each under the A/B switches of the work that
# runs on threads beside MPI, with a time limit: rc, the last lines of stderr, and the bits
# against one CPU rank.
#   bash jobs/gpu/device_ranks_bisect.sh BUNDLE_DIR [SECONDS_EACH]
# SWITCHES="ENV=V;ENV=V ENV2=W;..." replaces the default list ("X=1" = none).
set -u
B=${1:-/tmp/b/tessera} limit=${2:-20}; . "$B/env.sh"
backend=${BACKEND_OPTS:-"--backend cuda --share-gpus"}  # BACKEND_OPTS="--backend cpu": the script checked without a GPU
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
d=$(mktemp -d -p /tmp)
tessera synth --case noisy --size 2048x2048 --seed 12 "$d" >/dev/null
tessera synth --case holes --size 4096x4096 --seed 11 "$d" >/dev/null
noisy="--save-cycles --tile-size 256 --guide-window 5 --reference 700 900 $d/noisy_wrapped.tif --overwrite"
holes="--save-cycles --tile-size 256 --coherence $d/holes_coherence.tif --min-coherence 0.3 --reference 2000 1000 $d/holes_wrapped.tif --overwrite"
tessera unwrap -q --backend cpu $noisy "$d/noisy_cpu.h5"
tessera unwrap -q --backend cpu $holes "$d/holes_cpu.h5"
IFS=';' read -r -a switches <<<"${SWITCHES:-X=1;TESSERA_WRITE_BEHIND=0;TESSERA_HDF5_GATHER=0;TESSERA_COPY_BESIDE=0;TESSERA_SHARED_BESIDE=0;TESSERA_READ_AHEAD=0;TESSERA_LAKES_BESIDE=0}"
run() {  # run TAG SCENE OPTIONS...: two ranks sharing the GPU, under each switch
  local tag=$1 scene=$2; shift 2
  for sw in "${switches[@]}"; do
    local xs=()
    for kv in $sw; do export "$kv"; xs+=(-x "${kv%%=*}"); done
    rm -f "$d/out.h5"
    timeout -s KILL "$limit" mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=8 "${xs[@]}" \
      tessera unwrap -q $backend "$@" "$d/out.h5" >"$d/log.txt" 2>&1
    local rc=$? same=no
    h5_same "$d/${scene}_cpu.h5" "$d/out.h5" unwrapped_phase connected_components cycles >/dev/null 2>&1 && same=yes
    echo "$tag [$sw]: rc $rc, same as one cpu rank: $same"
    [ "$rc" -eq 0 ] && [ "$same" = yes ] || grep -v '^\s*$' "$d/log.txt" | grep -v '^\[.*\] \*\*\*    ' | tail -4 | cut -c1-240 | sed 's/^/    /'
    for kv in $sw; do unset "${kv%%=*}"; done
  done
}
run "noisy 2048², --chunk-rows 512" noisy --chunk-rows 512 $noisy
run "noisy 2048², in one piece" noisy $noisy
run "holes 4096², --gpu-memory-limit 96M" holes --gpu-memory-limit 96M $holes
run "holes 4096², in one piece" holes $holes
rm -rf "$d"
