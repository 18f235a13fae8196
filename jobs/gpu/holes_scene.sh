# Sourced by the device scripts with $b (the unpacked bundle) and $n set: the bundle's environment,
# every host core for OpenMP, and a holes n² scene with coherence in a new $d; $in: its unwrap inputs.
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
d=$(mktemp -d -p /tmp)
tessera synth --overwrite --case holes --size ${n}x${n} --seed 2 "$d" >/dev/null
in="--coherence $d/holes_coherence.tif --min-coherence 0.3 $d/holes_wrapped.tif"
