#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle (issue 16): the 32768² holes scene on one rank
# and on two ranks sharing the GPU, their result written by rank 0 (gathered, the default on one
# node) or through MPI-IO (TESSERA_HDF5_GATHER=0), alternating, twice; the bits compared.
#   bash jobs/gpu/device_writes_two_ranks.sh BUNDLE_DIR
set -u
B=${1:-/tmp/b/tessera}; . "$B/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TESSERA_TRACE=1
d=$(mktemp -d -p /tmp)
tessera synth --case holes --size 32768x32768 --seed 2 $d >/dev/null
in="--tile-size 1024 --coherence $d/holes_coherence.tif --min-coherence 0.3 $d/holes_wrapped.tif"
run() { local tag=$1 np=$2; shift 2; rm -f $d/$tag.h5
  mpirun --oversubscribe --bind-to none -np $np -x OMP_NUM_THREADS=$((16 / np)) -x TESSERA_TRACE -x TESSERA_HDF5_GATHER "$@" tessera unwrap --backend cuda --share-gpus $in $d/$tag.h5 2>&1 |
   grep -E "^tessera: (read|matching|write) |hdf5 |Mpixel" | grep -v "by rank 0" | sort -u | tr -s ' ' | tr '\n' ';'; echo " <- $tag"; }
for round in 1 2; do
  TESSERA_HDF5_GATHER=1 run one 1
  TESSERA_HDF5_GATHER=1 run gathered 2
  TESSERA_HDF5_GATHER=0 run mpiio 2
done
h5_same $d/one.h5 $d/gathered.h5 unwrapped_phase connected_components && echo "gathered = one rank"
h5_same $d/one.h5 $d/mpiio.h5 unwrapped_phase connected_components && echo "mpiio = one rank"
rm -rf $d
