#!/usr/bin/env bash
# One rank fails mid-run: the job must end non-zero within seconds and leave no result.
set -u
mpirun=$1 tessera=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$tessera" synth --case topo --size 200x200 --seed 1 "$d" >/dev/null || exit 1
for stage in read matching union_find; do
  start=$(date +%s)
  timeout 30 "$mpirun" --oversubscribe -np 3 -x TESSERA_INJECT_ERROR="1:$stage" \
    "$tessera" unwrap -q --tile-size 32 "$d/topo_wrapped.tif" "$d/out.h5" 2>"$d/err"
  rc=$?
  took=$(( $(date +%s) - start ))
  echo "stage $stage: exit $rc after ${took}s: $(head -c 300 "$d/err" | tr '\n' ' ')"
  [ "$rc" -ne 0 ] || { echo "FAIL: exit code 0"; exit 1; }
  [ "$rc" -ne 124 ] || { echo "FAIL: the job hung"; exit 1; }
  [ "$took" -le 20 ] || { echo "FAIL: took ${took}s"; exit 1; }
  grep -q "rank 1" "$d/err" || { echo "FAIL: the message does not name rank 1"; exit 1; }
  [ ! -e "$d/out.h5" ] || { echo "FAIL: a result file was left"; exit 1; }
  ! ls "$d" | grep -q '\.tmp' || { echo "FAIL: a temporary was left: $(ls "$d")"; exit 1; }
done
# A broken internal invariant on one rank: exit 3, the line names the rank and what broke.
timeout 30 "$mpirun" --oversubscribe -np 3 -x TESSERA_INJECT_ERROR="1:matching:invariant" \
  "$tessera" unwrap -q --tile-size 32 "$d/topo_wrapped.tif" "$d/out.h5" 2>"$d/err"
rc=$?
echo "invariant: exit $rc: $(head -c 300 "$d/err" | tr '\n' ' ')"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: exit code $rc"; exit 1; }
grep -q "tessera: error (rank 1): internal error: injected broken invariant at stage matching (" "$d/err" \
  || { echo "FAIL: the line does not name rank 1 and the invariant"; exit 1; }
[ ! -e "$d/out.h5" ] || { echo "FAIL: a result file was left"; exit 1; }
echo "1 passed, 0 failed"
