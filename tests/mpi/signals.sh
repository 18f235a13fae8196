#!/usr/bin/env bash
# SIGTERM / SIGINT to mpirun while the ranks work (issue 14): every rank ends within seconds
# and no temporary is left; a previous result is unchanged.
set -u
mpirun=$1 tessera=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$tessera" synth --case topo --size 200x200 --seed 1 "$d" >/dev/null || exit 1
"$tessera" unwrap -q --tile-size 32 "$d/topo_wrapped.tif" "$d/out.h5" || exit 1
before=$(md5sum <"$d/out.h5")
for sig in TERM INT; do
  # Rank 1 waits at its matching stage: the temporary exists, the others wait in a collective.
  "$mpirun" --oversubscribe -np 3 -x TESSERA_INJECT_ERROR="1:matching:sleep" \
    "$tessera" unwrap -q --overwrite --tile-size 32 --geotiff "$d/out.tif" "$d/topo_wrapped.tif" "$d/out.h5" \
    >/dev/null 2>"$d/err" &
  pid=$!
  for _ in $(seq 100); do ls "$d" | grep -q '\.tmp' && break; sleep 0.1; done
  ls "$d" | grep -q '\.tmp' || { echo "FAIL: no temporary appeared"; kill -KILL $pid; exit 1; }
  start=$(date +%s)
  kill -$sig $pid
  for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then echo "FAIL: SIG$sig: mpirun still running after 30 s"; kill -KILL $pid; exit 1; fi
  wait $pid
  rc=$?
  took=$(( $(date +%s) - start ))
  sleep 1; pgrep -f "$d/topo_wrapped.tif" >/dev/null && { echo "FAIL: a rank survived"; exit 1; }
  echo "SIG$sig: exit $rc after ${took}s; left: $(ls "$d" | tr '\n' ' ')"
  [ "$rc" -ne 0 ] || { echo "FAIL: exit 0"; exit 1; }
  ! ls "$d" | grep -q '\.tmp' || { echo "FAIL: a temporary was left"; exit 1; }
  [ "$(md5sum <"$d/out.h5")" = "$before" ] || { echo "FAIL: the previous result changed"; exit 1; }
  [ ! -e "$d/out.tif" ] || { echo "FAIL: a GeoTIFF appeared"; exit 1; }
done
echo "1 passed, 0 failed"
