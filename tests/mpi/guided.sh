#!/usr/bin/env bash
# --guide-window under mpirun (docs/ARCHITECTURE.md section 2.1): each rank reads the phase half a
# window beyond its own, so the guide, the cuts and the result are the one-rank in-core run's bit
# for bit on every rank grid of 2 and 3 ranks, in one piece and in chunks (the inputs kept, read
# in every pass, or the third pass from --scratch), and an input read through the HDF5 library.
set -u
mpirun=$1 tessera=$2 h5same=$3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$tessera" synth --case noisy --size 520x430 --seed 5 "$d" >/dev/null || exit 1
opts="--tile-size 32 --guide-window 5 --coherence $d/noisy_coherence.tif --min-coherence 0.3 --save-cycles --save-residues --save-cuts --reference 300 200"
"$tessera" unwrap -q $opts "$d/noisy_wrapped.tif" "$d/one.h5" || { echo "FAIL: one rank"; exit 1; }
mkdir "$d/scratch"
for run in "2 2x1 - 0" "2 1x2 64 0" "3 3x1 96 1" "3 1x3 - 0" "2 2x1 64 scratch"; do
  set -- $run
  np=$1 grid=$2 rows=$3 reread=$4
  chunks=; [ "$rows" != - ] && chunks="--chunk-rows $rows"
  [ "$reread" = scratch ] && chunks="$chunks --scratch $d/scratch" && reread=0
  out="$d/g$np-$grid-$4.h5"
  timeout 120 "$mpirun" --oversubscribe -np "$np" -x OMP_NUM_THREADS=1 -x TESSERA_REREAD=$reread "$tessera" unwrap -q $opts --rank-grid "$grid" $chunks \
    "$d/noisy_wrapped.tif" "$out" 2>"$d/err" >/dev/null || { echo "FAIL: np $np grid $grid: $(head -c 300 "$d/err")"; exit 1; }
  "$h5same" "$d/one.h5" "$out" unwrapped_phase connected_components cycles residues branch_cuts >/dev/null ||
    { echo "FAIL: np $np grid $grid ($chunks) differs"; exit 1; }
  echo "np $np grid $grid ${chunks:-in one piece} (inputs re-read: $4): identical"
done
# --guide-window auto, the default (section 2.2): the census is summed over the ranks' own windows, so
# every grid takes the guide the one-rank run takes; a tall scene (sampled rows) and the noisy one.
"$tessera" synth --case noisy --size 8400x40 --seed 6 "$d/tall" >/dev/null || exit 1
for scene in "$d/noisy_wrapped.tif 5" "$d/tall/noisy_wrapped.tif 5"; do
  set -- $scene
  in=$1 n=$2
  "$tessera" unwrap -q --tile-size 32 --save-cycles --guide-window "$n" "$in" "$d/auto_one.h5" --overwrite ||
    { echo "FAIL: auto reference run"; exit 1; }
  "$tessera" unwrap -q --tile-size 32 --save-cycles --guide-window 0 "$in" "$d/auto_none.h5" --overwrite ||
    { echo "FAIL: auto plain run"; exit 1; }
  "$h5same" "$d/auto_one.h5" "$d/auto_none.h5" unwrapped_phase >/dev/null 2>&1 &&
    { echo "FAIL: $in: the guide changed nothing, so this check could not fail"; exit 1; }
  for run in "2 2x1 -" "3 3x1 64" "2 1x2 -"; do
    set -- $run
    chunks=; [ "$3" != - ] && chunks="--chunk-rows $3"
    rm -f "$d/auto.h5"
    timeout 120 "$mpirun" --oversubscribe -np "$1" -x OMP_NUM_THREADS=1 "$tessera" unwrap -q --tile-size 32 --save-cycles \
      --rank-grid "$2" $chunks "$in" "$d/auto.h5" 2>"$d/err" >/dev/null || { echo "FAIL: auto np $1 grid $2: $(head -c 300 "$d/err")"; exit 1; }
    "$h5same" "$d/auto_one.h5" "$d/auto.h5" unwrapped_phase connected_components cycles >/dev/null ||
      { echo "FAIL: auto np $1 grid $2 ($in) is not the --guide-window $n run"; exit 1; }
  done
  echo "auto on $(basename "$(dirname "$in")")/$(basename "$in"): np 2 and 3, in one piece and chunks: the --guide-window $n bits"
done
# An input read through the HDF5 library (netCDF-4): the streamed guide reads the phase again inside the
# result sink, which must not run beside another read of it (section 5.1); kept and re-read, 1 and 2 ranks.
if gdal_translate -q -of netCDF -co FORMAT=NC4 "$d/noisy_wrapped.tif" "$d/w.nc" 2>/dev/null; then
  "$tessera" unwrap -q --tile-size 32 --guide-window 5 --save-cycles "$d/noisy_wrapped.tif" "$d/nc_one.h5" || { echo "FAIL: netCDF reference run"; exit 1; }
  for run in "1 0" "1 1" "2 0"; do
    set -- $run
    rm -f "$d/nc.h5"
    timeout 120 "$mpirun" --oversubscribe -np "$1" -x OMP_NUM_THREADS=1 -x TESSERA_REREAD=$2 "$tessera" unwrap -q \
      --tile-size 32 --guide-window 5 --save-cycles --chunk-rows 64 "$d/w.nc" "$d/nc.h5" 2>"$d/err" >/dev/null ||
      { echo "FAIL: netCDF input np $1 reread $2: $(head -c 300 "$d/err")"; exit 1; }
    "$h5same" "$d/nc_one.h5" "$d/nc.h5" unwrapped_phase connected_components cycles >/dev/null ||
      { echo "FAIL: netCDF input np $1 reread $2 differs"; exit 1; }
  done
  echo "netCDF-4 input through the guide, streamed, kept and re-read, 1 and 2 ranks: identical"
else
  echo "netCDF-4 input: GDAL here cannot write netCDF-4 (skipped)"
fi
