#!/usr/bin/env bash
# Streamed runs under mpirun (issue 16, docs/ARCHITECTURE.md section 5.1): every rank grid of
# 2 and 3 ranks, in chunks of one and of three tile rows (the ranks take unequal numbers of them),
# the inputs kept from the first pass or read in every pass, gives
# the one-rank in-core result bit for bit (every dataset, the GeoTIFF); a bad input found after
# the first pass (values in degrees) ends every rank in one line with no output. With --scratch DIR
# (the third pass from each rank's scratch file): the same bits at two chunk heights, DIR as it was
# after success and after a failure on one rank; a bad DIR is one line on every rank and no output.
set -u
mpirun=$1 tessera=$2 h5same=$3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$tessera" synth --case holes --size 1100x700 --seed 8 "$d" >/dev/null || exit 1
opts="--tile-size 32 --coherence $d/holes_coherence.tif --min-coherence 0.3 --save-cycles --save-residues --save-cuts --reference 500 400"
"$tessera" unwrap -q $opts "$d/holes_wrapped.tif" "$d/one.h5" --geotiff "$d/one.tif" || { echo "FAIL: in-core run"; exit 1; }
gdal_translate -q -of XYZ "$d/one.tif" "$d/one.xyz"
# reread: TESSERA_REREAD=1, the inputs read in every pass; keep: read once, kept (no limit here).
# ahead: TESSERA_READ_AHEAD (1: pass 1's fills ahead too; 0: no fill ahead; -: the default).
for run in "2 2x1 32 keep 1" "2 1x2 96 reread 0" "3 3x1 32 reread 1" "3 1x3 96 keep -" "3 3x1 96 keep -"; do
  set -- $run
  np=$1 grid=$2 rows=$3 mode=$4 ahead=$5
  [ "$ahead" = - ] && ahead=
  out="$d/s$np-$grid.h5"
  reread=0; [ "$mode" = reread ] && reread=1
  timeout 120 "$mpirun" --oversubscribe -np "$np" -x OMP_NUM_THREADS=1 -x TESSERA_REREAD=$reread -x TESSERA_READ_AHEAD=$ahead "$tessera" unwrap $opts \
    --rank-grid "$grid" --chunk-rows "$rows" "$d/holes_wrapped.tif" "$out" --geotiff "$d/s.tif" --overwrite 2>"$d/err" >/dev/null ||
    { echo "FAIL: np $np grid $grid: $(head -c 300 "$d/err")"; exit 1; }
  grep -q "chunk(s) of" "$d/err" || { echo "FAIL: np $np grid $grid did not stream: $(head -c 300 "$d/err")"; exit 1; }
  if grep -q "read once" "$d/err"; then got=keep; else got=reread; fi
  [ "$got" = "$mode" ] || { echo "FAIL: np $np grid $grid: $got, not $mode: $(head -c 300 "$d/err")"; exit 1; }
  "$h5same" "$d/one.h5" "$out" unwrapped_phase connected_components cycles residues branch_cuts >/dev/null ||
    { echo "FAIL: np $np grid $grid differs"; exit 1; }
  gdal_translate -q -of XYZ "$d/s.tif" "$d/s.xyz"
  cmp -s "$d/one.xyz" "$d/s.xyz" || { echo "FAIL: np $np grid $grid GeoTIFF differs"; exit 1; }
  echo "np $np grid $grid chunks of $rows rows, inputs $mode, read ahead '${ahead}': identical"
done
mkdir "$d/scratch" && echo mine >"$d/scratch/mine.txt"
for run in "2 2x1 32" "2 1x2 96" "3 3x1 32" "3 1x3 96"; do
  set -- $run
  np=$1 grid=$2 rows=$3
  out="$d/x$np-$grid.h5"
  timeout 120 "$mpirun" --oversubscribe -np "$np" -x OMP_NUM_THREADS=1 "$tessera" unwrap $opts --rank-grid "$grid" \
    --chunk-rows "$rows" --scratch "$d/scratch" "$d/holes_wrapped.tif" "$out" 2>"$d/err" >/dev/null ||
    { echo "FAIL: --scratch np $np grid $grid: $(head -c 300 "$d/err")"; exit 1; }
  grep -q "the third from" "$d/err" || { echo "FAIL: --scratch np $np grid $grid: no scratch: $(head -c 300 "$d/err")"; exit 1; }
  "$h5same" "$d/one.h5" "$out" unwrapped_phase connected_components cycles residues branch_cuts >/dev/null ||
    { echo "FAIL: --scratch np $np grid $grid differs"; exit 1; }
  [ "$(ls -A "$d/scratch")" = mine.txt ] && [ "$(cat "$d/scratch/mine.txt")" = mine ] ||
    { echo "FAIL: --scratch np $np grid $grid left: $(ls -A "$d/scratch")"; exit 1; }
  echo "--scratch np $np grid $grid chunks of $rows rows: identical, scratch directory as it was"
done
# A failure on rank 1 once the scratch is written (after the second pass): one line, no output, nothing left.
timeout 120 "$mpirun" --oversubscribe -np 2 -x OMP_NUM_THREADS=1 -x TESSERA_INJECT_ERROR=1:union_find "$tessera" unwrap \
  $opts --chunk-rows 32 --scratch "$d/scratch" "$d/holes_wrapped.tif" "$d/f.h5" >/dev/null 2>"$d/err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: --scratch failure: exit $rc"; exit 1; }
[ ! -e "$d/f.h5" ] && ! ls "$d" | grep -q 'f.h5.tmp' || { echo "FAIL: --scratch failure: output left"; exit 1; }
[ "$(ls -A "$d/scratch")" = mine.txt ] || { echo "FAIL: --scratch failure left: $(ls -A "$d/scratch")"; exit 1; }
echo "--scratch, a failure on rank 1: nothing left"
# A bad DIR: one line from every rank's agreement, a non-zero exit, no output.
for bad in "$d/missing" "$d/scratch/mine.txt"; do
  timeout 60 "$mpirun" --oversubscribe -np 3 -x OMP_NUM_THREADS=1 "$tessera" unwrap $opts --chunk-rows 32 --scratch "$bad" \
    "$d/holes_wrapped.tif" "$d/b.h5" >/dev/null 2>"$d/err"
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: --scratch $bad: exit $rc"; exit 1; }
  [ "$(grep -c 'tessera: error' "$d/err")" -eq 1 ] && grep -q "$bad: --scratch" "$d/err" ||
    { echo "FAIL: --scratch $bad: $(cat "$d/err")"; exit 1; }
  [ ! -e "$d/b.h5" ] && ! ls "$d" | grep -q 'b.h5.tmp' || { echo "FAIL: --scratch $bad: output left"; exit 1; }
done
[ ! -e "$d/missing" ] && [ "$(cat "$d/scratch/mine.txt")" = mine ] || { echo "FAIL: a bad --scratch changed files"; exit 1; }
echo "--scratch missing or a file: one line, no output"
# A limit that each rank measures differently (its own resident memory) still gives one plan.
timeout 120 "$mpirun" --oversubscribe -np 3 -x OMP_NUM_THREADS=1 "$tessera" unwrap $opts --memory-limit 100M \
  "$d/holes_wrapped.tif" "$d/m.h5" 2>"$d/err" >/dev/null || { echo "FAIL: --memory-limit 100M: $(head -c 300 "$d/err")"; exit 1; }
"$h5same" "$d/one.h5" "$d/m.h5" unwrapped_phase connected_components cycles >/dev/null || { echo "FAIL: 100M differs"; exit 1; }
echo "--memory-limit 100M on 3 ranks: identical"
# An input read through the HDF5 library (netCDF-4): no read-ahead beside the result's HDF5 writes,
# a re-read third pass waits for the chunk being written; the same bits kept or re-read, 1 and 2 ranks.
if gdal_translate -q -of netCDF -co FORMAT=NC4 "$d/holes_wrapped.tif" "$d/w.nc" 2>/dev/null; then
  "$tessera" unwrap -q --tile-size 32 --save-cycles "$d/holes_wrapped.tif" "$d/nc_one.h5" || { echo "FAIL: netCDF reference run"; exit 1; }
  for run in "1 1" "1 0" "2 1"; do
    set -- $run
    np=$1 reread=$2
    rm -f "$d/nc.h5"
    timeout 120 "$mpirun" --oversubscribe -np "$np" -x OMP_NUM_THREADS=1 -x TESSERA_REREAD=$reread "$tessera" unwrap -q \
      --tile-size 32 --save-cycles --chunk-rows 64 "$d/w.nc" "$d/nc.h5" 2>"$d/err" >/dev/null ||
      { echo "FAIL: netCDF input np $np reread $reread: $(head -c 300 "$d/err")"; exit 1; }
    "$h5same" "$d/nc_one.h5" "$d/nc.h5" unwrapped_phase connected_components cycles >/dev/null ||
      { echo "FAIL: netCDF input np $np reread $reread differs"; exit 1; }
  done
  echo "netCDF-4 input (the HDF5 library beside the writes), kept and re-read, 1 and 2 ranks: identical"
else
  echo "netCDF-4 input: GDAL here cannot write netCDF-4 (skipped)"
fi
# A phase in degrees is seen only once the first pass has read it: one line, every rank ends, no output.
gdal_translate -q -scale -3.1416 3.1416 -180 180 -ot Float32 "$d/holes_wrapped.tif" "$d/deg.tif"
timeout 60 "$mpirun" --oversubscribe -np 3 "$tessera" unwrap --tile-size 32 --chunk-rows 64 "$d/deg.tif" "$d/deg.h5" \
  >/dev/null 2>"$d/err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: degrees: exit $rc"; exit 1; }
[ "$(grep -c 'tessera: error' "$d/err")" -eq 1 ] && grep -q degrees "$d/err" || { echo "FAIL: degrees: $(cat "$d/err")"; exit 1; }
[ ! -e "$d/deg.h5" ] && ! ls "$d" | grep -q 'deg.h5.tmp' || { echo "FAIL: degrees: output left"; exit 1; }
echo "degrees after the first pass: one line, no output"
