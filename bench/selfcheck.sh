#!/usr/bin/env bash
# Self-check (and optional timings) of the textbook Goldstein baseline.
#   bench/selfcheck.sh              build bench/, then the correctness checks on 1024^2 scenes
#   bench/selfcheck.sh --timing     also time goldstein_ref on 2048^2 and 4096^2 topography
# Environment: BUILD (build dir, default build-bench), WORK (scratch dir for the raw files;
# default a fresh temporary dir, removed at exit), REPS (timing repetitions, default 5),
# GOLDSTEIN_FLAGS (extra goldstein_ref flags for the timings, e.g. --hugepages).
# Timings are wall clock (seconds_unwrap, seconds_total) plus, from goldstein_ref's stderr
# line, the thread CPU time of the unwrap (cpu_unwrap) and the wall time of each phase.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
REPS=${REPS:-5}
TIMING=0
[[ "${1:-}" == "--timing" ]] && TIMING=1
if [[ -z "${WORK:-}" ]]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"

cmake -S bench -B "$BUILD" >/dev/null
cmake --build "$BUILD" >/dev/null
GEN=$BUILD/gen_phase GS=$BUILD/goldstein_ref SC=$BUILD/score CC=$BUILD/cut_check
fail=0
field() { sed -n "s/\(^\|.* \)$1=\([^ ]*\).*/\2/p"; }  # VALUE of a "key=VALUE" word
check() {  # check NAME CONDITION-DESCRIPTION awk-expression
  if awk "BEGIN { exit !($3) }"; then echo "  ok   $1: $2"; else echo "  FAIL $1: $2"; fail=1; fi
}

# run NAME ROWS COLS [goldstein flags...]: unwrap $WORK/NAME_w.f32, score, cut-check
run() {
  local n=$1 r=$2 c=$3; shift 3
  G=$("$GS" "$WORK/${n}_w.f32" "$r" "$c" "$WORK/${n}_u.f32" --flags-out "$WORK/${n}_f.u8" "$@" 2>/dev/null)
  S=$("$SC" "$WORK/${n}_u.f32" "$WORK/${n}_t.f32" "$r" "$c")
  C=$("$CC" "$WORK/${n}_w.f32" "$WORK/${n}_u.f32" "$WORK/${n}_f.u8" "$r" "$c" || true)
  echo "$G"; echo "$S"; echo "$C"
  FRAC=$(echo "$S" | field fraction_correct)
  RES=$(echo "$G" | field residues)
  INC=$(echo "$C" | field inconsistent)
}

echo "== clean bowl 1024^2, 30 cycles, noise 0.3 rad"
"$GEN" bowl 1024 1024 "$WORK/clean_w.f32" "$WORK/clean_t.f32" --cycles 30 --noise 0.3
run clean 1024 1024
check clean "fraction_correct == 1.000000 (got $FRAC)" "\"$FRAC\" == \"1.000000\""
check clean "no inconsistent pair off the cuts (got $INC)" "$INC == 0"

echo "== noisy bowl 1024^2, 30 cycles, noise 0.7 rad"
"$GEN" bowl 1024 1024 "$WORK/noisy_w.f32" "$WORK/noisy_t.f32" --cycles 30 --noise 0.7
run noisy 1024 1024
check noisy "thousands of residues (got $RES)" "$RES >= 1000"
check noisy "fraction_correct >= 0.99 (got $FRAC)" "$FRAC >= 0.99"
check noisy "no inconsistent pair off the cuts (got $INC)" "$INC == 0"

echo "== topography 1024^2 with 12 nodata holes: NaN input vs --mask input"
"$GEN" topo 1024 1024 "$WORK/holes_w.f32" "$WORK/holes_t.f32" --cycles 30 --noise 0.5 --holes 12
"$GEN" topo 1024 1024 "$WORK/mask_w.f32" "$WORK/mask_t.f32" --cycles 30 --noise 0.5 --holes 12 \
  --mask-out "$WORK/mask_m.u8"
run holes 1024 1024
check holes "fraction_correct >= 0.99 (got $FRAC)" "$FRAC >= 0.99"
check holes "no inconsistent pair off the cuts (got $INC)" "$INC == 0"
run mask 1024 1024 --mask "$WORK/mask_m.u8"
if cmp -s "$WORK/holes_u.f32" "$WORK/mask_u.f32"; then
  echo "  ok   mask: --mask output identical to the NaN-hole output"
else
  echo "  FAIL mask: --mask output differs from the NaN-hole output"; fail=1
fi

if [[ $TIMING == 1 ]]; then
  for spec in "2048 60" "4096 120"; do
    set -- $spec
    n=t$1
    echo "== timing: topography $1^2, $2 cycles, noise 0.5 rad (x0.4..x1.6 over the scene), $REPS runs"
    "$GEN" topo "$1" "$1" "$WORK/${n}_w.f32" "$WORK/${n}_t.f32" --cycles "$2" --noise 0.5
    : >"$WORK/${n}.times"
    for ((i = 0; i < REPS; i++)); do
      "$GS" "$WORK/${n}_w.f32" "$1" "$1" "$WORK/${n}_u.f32" ${GOLDSTEIN_FLAGS:-} 2>&1 |
        tee -a "$WORK/${n}.times"
    done
    "$SC" "$WORK/${n}_u.f32" "$WORK/${n}_t.f32" "$1" "$1"
    for key in seconds_unwrap seconds_total cpu_unwrap t_residues t_cuts t_integrate; do
      field $key <"$WORK/${n}.times" | sort -g |
        awk -v k=$key '{ v[NR] = $1 } END { printf "  %s: min=%.4f median=%.4f max=%.4f\n", k, v[1], v[int((NR + 1) / 2)], v[NR] }'
    done
  done
fi

if [[ $fail == 0 ]]; then echo "selfcheck: PASS"; else echo "selfcheck: FAIL"; fi
exit $fail
