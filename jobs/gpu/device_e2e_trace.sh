#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: one scene end to end with TESSERA_TRACE, once per
# setting (SETTINGS="ENV=V OPTIONS;..."), keeping the stage lines and the device rule's split.
#   bash jobs/gpu/device_e2e_trace.sh BUNDLE_DIR CASE SIZE [SETTINGS]
set -u
b=$1 case_=$2 n=$3 settings=${4:-X=1}
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
d=$(mktemp -d -p /tmp)
tessera synth --case "$case_" --size ${n}x${n} --seed 2 "$d" >/dev/null
coh=; [ -f "$d/${case_}_coherence.tif" ] && coh="--coherence $d/${case_}_coherence.tif --min-coherence 0.3"
IFS=';' read -r -a list <<<"$settings"
for s in "${list[@]}"; do
  env=${s%% *} extra=; [ "$env" = "$s" ] || extra=${s#* }
  rm -f "$d/out.h5"
  echo "== $case_ $n² $s"
  env $env TESSERA_TRACE=1 tessera unwrap --backend cuda --tile-size 1024 $extra $coh "$d/${case_}_wrapped.tif" "$d/out.h5" 2>&1 |
    grep -E "^tessera: [a-z_/]+ +[0-9]|device rule|one-block rounds|Mpixel|error" | grep -v "to round [0-9]*:.*parked -1" 
done
rm -rf "$d"
