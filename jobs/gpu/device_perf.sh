#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle holding `tessera` and `perf`: where a run's host time
# goes (perf's cpu-clock samples with call graphs), holes N² with coherence, in one piece and
# streamed. Reports (top symbols, and the callers of the page clearing) into OUT_DIR.
#   bash jobs/gpu/device_perf.sh BUNDLE_DIR 32768 OUT_DIR ["--gpu-memory-limit 4G"]
set -u
b=$1 n=${2:-32768} out=${3:-/tmp/perf_out} modes=${4:-"in-one-piece;--gpu-memory-limit 4G"}
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
mkdir -p "$out"
d=$(mktemp -d -p /tmp)
tessera synth --overwrite --case holes --size ${n}x${n} --seed 2 "$d" >/dev/null
in="--coherence $d/holes_coherence.tif --min-coherence 0.3 $d/holes_wrapped.tif"
IFS=';' read -ra list <<<"$modes"
k=0
for mode in "${list[@]}"; do
  k=$((k + 1))
  extra=$mode; [ "$mode" = in-one-piece ] && extra=
  rm -f "$d/o.h5"
  TESSERA_TRACE=1 perf record -e cpu-clock -F 999 -g -o "$d/perf.data" -- \
    tessera unwrap --backend cuda --tile-size 1024 $extra $in "$d/o.h5" 2>"$out/trace_$k.txt" >/dev/null
  echo "== $mode: $(grep -E 'Mpixel|chunks/' "$out/trace_$k.txt" | tr -s ' ' | tr '\n' ';')"
  perf report -i "$d/perf.data" --no-children --sort sym -g none --percent-limit 0.3 2>/dev/null |
    grep -v '^$' | head -70 > "$out/self_$k.txt"
  perf report -i "$d/perf.data" --children --sort sym -g none --percent-limit 1 2>/dev/null |
    grep -v '^$' | head -90 > "$out/children_$k.txt"
  perf report -i "$d/perf.data" --no-children --sort sym -G -S clear_page_erms,clear_page_rep,clear_page_orig 2>/dev/null |
    grep -v '^$' | head -80 > "$out/clear_page_$k.txt"
  head -40 "$out/self_$k.txt"
done
rm -rf "$d"
