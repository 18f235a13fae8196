#!/usr/bin/env bash
# The job scripts under the single-node SLURM of tests/slurm/slurm_cluster.sh (CTest label slurm).
#   slurm_jobs.sh CASE CLUSTER_DIR TESSERA H5_SAME MPIRUN
# CASE: same_as_mpirun | lookup | bad_input | scancel | scaling. Jobs are submitted from a
# temporary directory outside the repository. Exit 77 (skip) only when SLURM is not installed.
set -u
case_=$1 cluster=$2 tessera=$(realpath "$3") h5_same=$(realpath -m "$4") mpirun=$5
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
if [ ! -s "$cluster/slurm.conf" ]; then
  bash "$here/slurm_cluster.sh" check || { echo "SKIP: SLURM is not installed"; exit 77; }
  echo "FAIL: SLURM is installed but the test cluster in $cluster is not up (fixture slurm_cluster_start)"
  exit 1
fi
export SLURM_CONF=$cluster/slurm.conf
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset TESSERA SLURM_JOB_ID SLURM_JOBID
gpus=$(sed -n 's/.*gpus=\([0-9]*\).*/\1/p' "$cluster/node")
d=$(mktemp -d)
jobs=()
cleanup() {
  ((${#jobs[@]})) && scancel "${jobs[@]}" 2>/dev/null
  rm -rf "$d"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

submit() {  # sbatch args...: prints the job id (the jobs are cancelled when the test ends)
  local id
  id=$(sbatch --parsable "$@") || return 1
  id=${id%%;*}
  jobs+=("$id")
  echo "$id"
}
field() { scontrol show job -o "$1" 2>/dev/null | grep -o "$2=[^ ]*" | head -n 1 | cut -d= -f2-; }
wait_job() {  # job, seconds: waits for it to end; prints STATE EXITCODE
  local s
  for _ in $(seq $((${2:-60} * 10))); do
    s=$(field "$1" JobState)
    case "$s" in PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | "") sleep 0.1 ;; *) break ;; esac
  done
  echo "$s $(field "$1" ExitCode)"
}
# 2 ranks of the CPU script, nothing else asked for (the node has 2 cores at least).
cpu_job=(--ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 --time=5 "$repo/jobs/slurm/unwrap_cpu.sbatch")

"$tessera" synth --case topo --size 256x256 --seed 1 "$d" >/dev/null || fail "synth"
in=$d/topo_wrapped.tif
mkdir "$d/sub" && cd "$d/sub" || exit 1

case "$case_" in
same_as_mpirun)
  # The reference: mpirun -np 2, outside SLURM.
  "$mpirun" --oversubscribe -np 2 -x OMP_NUM_THREADS=1 "$tessera" unwrap --tile-size 64 --save-cycles \
    "$in" "$d/mpirun.h5" >"$d/mpirun.log" 2>&1 || { cat "$d/mpirun.log"; fail "mpirun -np 2"; }
  grep -q "2 rank(s) as" "$d/mpirun.log" || { cat "$d/mpirun.log"; fail "mpirun did not run 2 ranks"; }
  job=$(TESSERA=$tessera submit "${cpu_job[@]}" "$in" out.h5 --tile-size 64 --save-cycles) || fail "sbatch refused the CPU script"
  read -r state code < <(wait_job "$job" 120)
  echo "job $job: $state $code"; cat "tessera-$job.out"
  [ "$state" = COMPLETED ] && [ "$code" = 0:0 ] || fail "job $job: $state $code"
  grep -q "2 rank(s) as" "tessera-$job.out" || fail "the job did not run as one 2-rank MPI job (PMIx)"
  "$h5_same" "$d/mpirun.h5" out.h5 /unwrapped_phase /connected_components /cycles || fail "SLURM result differs from mpirun -np 2"
  if ((gpus > 0)); then  # the GPU script, one rank per GPU (at most 2), against the same reference
    n=$((gpus < 2 ? gpus : 2))
    job=$(TESSERA=$tessera submit --ntasks=$n --ntasks-per-node=$n --cpus-per-task=1 --time=5 \
          "$repo/jobs/slurm/unwrap.sbatch" "$in" gpu.h5 --tile-size 64 --save-cycles --backend cuda) || fail "sbatch refused the GPU script"
    read -r state code < <(wait_job "$job" 120)
    echo "GPU job $job ($n ranks): $state $code"; cat "tessera-$job.out"
    [ "$state" = COMPLETED ] || fail "GPU job $job: $state $code"
    "$h5_same" "$d/mpirun.h5" gpu.h5 /unwrapped_phase /connected_components /cycles || fail "GPU result differs"
  else  # no GPUs: no GRES, and the GPU script is refused (that is what unwrap_cpu.sbatch is for)
    if TESSERA=$tessera sbatch --parsable "$repo/jobs/slurm/unwrap.sbatch" "$in" gpu.h5 >"$d/id" 2>"$d/err"; then
      jobs+=("$(cat "$d/id")"); fail "a node without GPUs accepted --gpus-per-task=1"
    fi
    echo "GPU script on a node without GPUs: $(cat "$d/err")"
    grep -qi gres "$d/err" || fail "unexpected refusal"
  fi ;;
lookup)
  # The program found from the submit directory or PATH by a copy of the script that has no
  # build beside it, and a clear line when none is found. Small scene, 2 ranks.
  mkdir -p "$d/x/y/scripts" "$d/bin" "$d/with_build/build" "$d/empty"   # no build two levels above the copy
  cp "$repo/jobs/slurm/unwrap_cpu.sbatch" "$d/x/y/scripts/"
  ln -s "$tessera" "$d/with_build/build/tessera"
  ln -s "$tessera" "$d/bin/tessera"
  script=$d/x/y/scripts/unwrap_cpu.sbatch
  one() {  # name, dir, expect (COMPLETED, or FAILED with a line containing msg), msg, env...
    local name=$1 dir=$2 want=$3 msg=$4 job state code
    shift 4
    cd "$dir" || exit 1
    job=$(env "$@" sbatch --parsable "${cpu_job[@]:0:4}" "$script" "$in" "$dir/o.h5" --tile-size 64) || fail "$name: sbatch"
    jobs+=("$job")
    read -r state code < <(wait_job "$job" 60)
    echo "$name: job $job $state $code: $(tr '\n' ' ' <"tessera-$job.out" | head -c 300)"
    [ "$state" = "$want" ] || fail "$name: $state, want $want"
    if [ "$want" = COMPLETED ]; then
      [ -s "$dir/o.h5" ] || fail "$name: no result"
      rm -f "$dir/o.h5"
    else
      [ "$code" != 0:0 ] || fail "$name: exit code 0"
      [ "$(grep -c 'tessera: error' "tessera-$job.out")" -eq 1 ] || fail "$name: want one error line"
      grep -q "$msg" "tessera-$job.out" || fail "$name: the line lacks '$msg'"
      [ ! -e "$dir/o.h5" ] || fail "$name: a result"
    fi
  }
  # PATH without any tessera for the cases that must not find one there.
  nopath=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  PATH=$nopath command -v tessera >/dev/null && { echo "SKIP: a tessera is installed in $nopath"; exit 77; }
  one "submit directory build/tessera" "$d/with_build" COMPLETED - PATH=$nopath
  one "tessera on PATH" "$d/empty" COMPLETED - PATH="$d/bin:$nopath"
  one "TESSERA" "$d/empty" COMPLETED - TESSERA="$tessera" PATH=$nopath
  one "not found" "$d/empty" FAILED "no tessera program" PATH=$nopath
  one "TESSERA not a program" "$d/empty" FAILED "TESSERA=$d/nope is not" TESSERA="$d/nope" PATH=$nopath
  # The repository's own script, submitted from elsewhere: the build beside it.
  if [ "$tessera" -ef "$repo/build/tessera" ]; then
    script=$repo/jobs/slurm/unwrap_cpu.sbatch
    one "the build beside the script" "$d/empty" COMPLETED - PATH=$nopath
  fi ;;
bad_input)
  for bad in "missing input:$d/nope.tif:out.h5:nope.tif" "missing output directory:$in:$d/no/out.h5:$d/no"; do
    IFS=: read -r name src dst want <<<"$bad"
    job=$(TESSERA=$tessera submit "${cpu_job[@]}" "$src" "$dst" --tile-size 64) || fail "sbatch"
    read -r state code < <(wait_job "$job" 60)
    echo "$name: job $job $state $code; log:"; cat "tessera-$job.out"
    [ "$state" = FAILED ] || fail "$name: job state $state, want FAILED"
    [ "${code%%:*}" -ne 0 ] || fail "$name: exit code $code"
    [ "$(grep -c 'tessera: error' "tessera-$job.out")" -eq 1 ] || fail "$name: want exactly one tessera error line"
    grep 'tessera: error' "tessera-$job.out" | grep -q "$want" || fail "$name: the line lacks '$want'"
    [ -z "$(find "$d" -name '*.h5*')" ] || fail "$name: output left: $(find "$d" -name '*.h5*')"
  done ;;
scancel)
  # A run of several seconds; cancelled once it has created its temporary (OUT.h5.tmp.XXXXXX)
  # and is past its read.
  "$tessera" synth --case topo --size 6144x6144 --seed 2 "$d/big" >/dev/null || fail "synth"
  job=$(TESSERA=$tessera submit "${cpu_job[@]}" "$d/big/topo_wrapped.tif" out.h5) || fail "sbatch"
  for _ in $(seq 600); do
    compgen -G 'out.h5.tmp*' >/dev/null && grep -q "tessera: read" "tessera-$job.out" 2>/dev/null && break
    case "$(field "$job" JobState)" in  # wait through PENDING, CONFIGURING, RUNNING; stop when it ended
      COMPLETED | FAILED | CANCELLED | TIMEOUT | OUT_OF_MEMORY | NODE_FAIL | BOOT_FAIL | DEADLINE | PREEMPTED) break ;;
    esac
    sleep 0.1
  done
  state=$(field "$job" JobState)
  [ "$state" = RUNNING ] && compgen -G 'out.h5.tmp*' >/dev/null || { cat "tessera-$job.out"; fail "job $job is $state before scancel (scene too small?)"; }
  pids=$(scontrol listpids "$job" 2>/dev/null | awk 'NR > 1 {print $1}')
  t0=$(date +%s%N)
  scancel "$job" || fail "scancel"
  read -r state code < <(wait_job "$job" 60)
  echo "scancel: job $job $state $code after $((($(date +%s%N) - t0) / 1000000)) ms; log:"; cat "tessera-$job.out"
  [ "$state" = CANCELLED ] || fail "job state $state, want CANCELLED"
  for p in $pids; do  # SLURM sends SIGKILL KillWait (10 s here) after SIGTERM
    for _ in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$p" 2>/dev/null || fail "process $p of job $job still runs"
  done
  # Never a partial output: no temporary, and out.h5 only when the run had committed it before the
  # signal came (its write's time printed; seen on a loaded 2-core host): then whole.
  left=$(find "$d" -name '*.tmp*')
  [ -z "$left" ] || fail "left after scancel: $left"
  if [ -e "$d/sub/out.h5" ]; then
    grep -q "^tessera: write " "tessera-$job.out" || fail "out.h5 left by a run cancelled before its write ended"
    "$tessera" info "$d/sub/out.h5" >/dev/null || fail "out.h5 left after scancel is not whole"
    echo "scancel: the run had committed out.h5 before the signal (whole)"
  fi ;;
scaling)
  # jobs/scaling.py outside a job, SLURM answering: each point is its own srun job.
  before=$(scontrol show jobs -o 2>/dev/null | grep -c JobId=)
  python3 "$repo/jobs/scaling.py" --mode strong --size 128 --ranks 1 2 --tile-size 64 --tessera "$tessera" \
    --out "$d/strong" >"$d/out" 2>"$d/err" || { cat "$d/out" "$d/err"; fail "scaling.py"; }
  cat "$d/err" "$d/out"
  after=$(scontrol show jobs -o 2>/dev/null | grep -c JobId=)
  grep -q "^launcher: srun (one job per point)" "$d/err" || fail "scaling.py did not pick srun"
  [ $((after - before)) -eq 2 ] || fail "want 2 SLURM jobs, the controller saw $((after - before))"
  grep -q "^| 1 | " "$d/strong.md" && grep -q "^| 2 | " "$d/strong.md" || fail "the table lacks a rank count"
  [ -z "$(ls -d tessera_scaling_* 2>/dev/null)" ] || fail "the work directory was left"
  # The batch version (8 GPUs by default): 2 ranks, and no GPU where the node has fewer than 2.
  nogpu=()
  ((gpus >= 2)) || nogpu=(--gpus-per-task=0)
  job=$(TESSERA=$tessera submit --ntasks-per-node=2 --cpus-per-task=1 --time=5 "${nogpu[@]}" \
        "$repo/jobs/slurm/strong_scaling.sbatch" --size 128 --ranks 1 2 --tile-size 64 --backend cpu) || fail "sbatch"
  read -r state code < <(wait_job "$job" 100)
  echo "strong_scaling.sbatch: job $job $state $code; log:"; cat "tessera-strong-$job.out"
  [ "$state" = COMPLETED ] || fail "strong_scaling.sbatch: $state $code"
  grep -q "^launcher: srun (steps of job $job)" "tessera-strong-$job.out" || fail "not steps of the job"
  t=bench/results/strong_slurm.md   # under the submit directory
  grep -q "^| 1 | " "$t" && grep -q "^| 2 | 1x2 | " "$t" || fail "$t lacks a rank count"
  [ -z "$(ls -d tessera_scaling_* 2>/dev/null)" ] || fail "the work directory was left" ;;
*)
  echo "unknown case $case_"; exit 2 ;;
esac
echo "1 passed, 0 failed"
