#!/usr/bin/env bash
# Bad input under mpirun: one clear line, non-zero exit on every rank, no hang.
set -u
mpirun=$1 tessera=$2 h5_same=$3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$tessera" synth --case bowl --size 64x64 --seed 1 "$d" >/dev/null || exit 1
check() {  # args: expected-substring, tessera args...
  want=$1; shift
  timeout 30 "$mpirun" --oversubscribe -np 3 "$tessera" "$@" >/dev/null 2>"$d/err"
  rc=$?
  lines=$(grep -c "tessera: error" "$d/err")
  echo "exit $rc, $lines error line(s): $(head -c 200 "$d/err" | tr '\n' ' ')"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: exit $rc"; exit 1; }
  [ "$lines" -eq 1 ] || { echo "FAIL: want one error line"; exit 1; }
  grep -q "$want" "$d/err" || { echo "FAIL: message lacks '$want'"; exit 1; }
  [ ! -e "$d/o.h5" ] || { echo "FAIL: output left"; exit 1; }
  ! ls "$d" | grep -q '\.tmp' || { echo "FAIL: temporary left: $(ls "$d")"; exit 1; }
}
check nope.tif unwrap "$d/nope.tif" "$d/o.h5"
check "more ranks" unwrap --tile-size 64 "$d/bowl_wrapped.tif" "$d/o.h5"
check "rank-grid" unwrap --tile-size 64 --rank-grid 2x2 "$d/bowl_wrapped.tif" "$d/o.h5"
check missing unwrap --tile-size 16 "$d/bowl_wrapped.tif" "$d/missing/o.h5"
# Issue 14: outputs refused on every rank before any work, inputs checked for what they claim.
check "not a regular file" unwrap --overwrite --tile-size 16 "$d/bowl_wrapped.tif" /dev/null
check "same file" unwrap --overwrite --tile-size 16 --geotiff "$d/bowl_wrapped.tif" "$d/bowl_wrapped.tif" "$d/o.h5"
check "same file" unwrap --overwrite --tile-size 16 --coherence "$d/bowl_coherence.tif" "$d/bowl_wrapped.tif" "$d/bowl_coherence.tif"
check "[0, 1]" unwrap --tile-size 16 --min-coherence 2 "$d/bowl_wrapped.tif" "$d/o.h5"
touch "$d/exists.h5"
check "overwrite" unwrap --tile-size 16 --quicklook "$d/exists.h5" "$d/bowl_wrapped.tif" "$d/o.h5"
[ ! -s "$d/exists.h5" ] || { echo "FAIL: existing output changed"; exit 1; }
rm -f "$d/exists.h5"
printf '<VRTDataset rasterXSize="70000" rasterYSize="70000"><VRTRasterBand dataType="Float32" band="1"/></VRTDataset>\n' >"$d/huge.vrt"
# A scene larger than memory streams (docs/ARCHITECTURE.md 5.1): a limit that holds no row of tiles refuses it.
check "huge.vrt" unwrap --memory-limit 100M "$d/huge.vrt" "$d/o.h5"
# Without --tile-size the tile halves until the ranks fit (partition/rank_grid.h): 3 ranks (tiles of
# 16: three in a row) and a 2x2 grid (tiles of 32) over 64x64 run, each equal to one rank's result.
"$tessera" unwrap -q "$d/bowl_wrapped.tif" "$d/one.h5" || { echo "FAIL: one rank"; exit 1; }
for run in "3 16" "4 32 --rank-grid 2x2"; do
  set -- $run
  np=$1 tile=$2; shift 2
  rm -f "$d/o.h5"
  timeout 60 "$mpirun" --oversubscribe -np "$np" "$tessera" unwrap -q "$@" "$d/bowl_wrapped.tif" "$d/o.h5" ||
    { echo "FAIL: 64x64 on $np ranks $*"; exit 1; }
  "$h5_same" "$d/one.h5" "$d/o.h5" unwrapped_phase connected_components >/dev/null || { echo "FAIL: $np ranks differ from one"; exit 1; }
  "$tessera" info "$d/o.h5" | grep -q "tile_size = $tile " || { echo "FAIL: tile_size $tile not recorded: $("$tessera" info "$d/o.h5" | grep -o 'tile_size = [0-9]*')"; exit 1; }
done
echo "1 passed, 0 failed"
