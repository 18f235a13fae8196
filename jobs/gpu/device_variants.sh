#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle: one scene (holes N² with coherence) run under each of
# several settings, every output a new file, the trace's stage, pass and HDF5 lines printed, and
# each output compared with the first (h5_same).
#   bash jobs/gpu/device_variants.sh BUNDLE_DIR 32768 "ENV=V OPTS;ENV=V OPTS;..."
# (each entry: environment assignments, then unwrap options; "X=1" for none)
# PERF_OUT=DIR (a bundle holding `perf`): each run under perf's cpu-clock sampling with call graphs,
# its top symbols, their callers and the page clearing's callers in DIR/{self,children,clear_page}_K.txt.
set -u
b=$1 n=${2:-32768} variants=$3
. "$(dirname "$0")/holes_scene.sh"
perf_run() {  # perf_run K COMMAND...: COMMAND, under perf where PERF_OUT is set
  local k=$1; shift
  if [ -z "${PERF_OUT:-}" ]; then "$@"; return; fi
  mkdir -p "$PERF_OUT"
  perf record -e cpu-clock -F 999 -g -o "$d/perf.data" -- "$@"
  perf report -i "$d/perf.data" --no-children --sort sym -g none --percent-limit 0.3 2>/dev/null | grep -v '^$' | head -70 >"$PERF_OUT/self_$k.txt"
  perf report -i "$d/perf.data" --children --sort sym -g none --percent-limit 1 2>/dev/null | grep -v '^$' | head -90 >"$PERF_OUT/children_$k.txt"
  perf report -i "$d/perf.data" --no-children --sort sym -G -S clear_page_erms,clear_page_rep,clear_page_orig 2>/dev/null |
    grep -v '^$' | head -80 >"$PERF_OUT/clear_page_$k.txt"
}
IFS=';' read -ra list <<<"$variants"
k=0
for v in "${list[@]}"; do
  k=$((k + 1))
  envs=() opts=()
  for w in $v; do [[ $w == *=* && ${#opts[@]} -eq 0 ]] && envs+=("$w") || opts+=("$w"); done
  rm -f "$d/o_$k.h5"
  perf_run $k env "${envs[@]}" TESSERA_TRACE=1 tessera unwrap --backend cuda --tile-size 1024 "${opts[@]}" $in "$d/o_$k.h5" 2>&1 |
    awk '/^tessera: hdf5 / { n[$3]++; ms[$3] += $(NF-1); how[$3] = ($6 == "mapped" ? "mapped" : "library/threads"); next }
         /^tessera: (read|upload|residues|matching|union_find|offset_solve|apply|write) +[0-9]|^tessera: fill:|into the run|census of|scan and|mapped window|region gone|sinks written|committed in|pages made ready|chunks\/|Mpixel|upload beside|unlocked|the lakes|matching\/|device rule:|mapped copies|find_residues:|deflated chunks/ { print }
         END { for (d in n) printf "hdf5 %s %.0f ms in %d writes (%s)\n", d, ms[d], n[d], how[d] }' |
    tr -s ' ' | tr '\n' ';'
  echo " <- $v"
  if [ $k -gt 1 ]; then
    h5_same "$d/o_1.h5" "$d/o_$k.h5" unwrapped_phase connected_components >/dev/null && echo "   same as the first" ||
      echo "   DIFFERS from the first"
    rm -f "$d/o_$k.h5"
  fi
done
rm -rf "$d"
