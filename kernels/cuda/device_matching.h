// The one-rank matching path of the CUDA backend (ARCHITECTURE.md section 3): residues,
// phase A and the cuts it accepts never leave the device; only the count of residues and
// phase B's leftovers cross the bus. Launchers over device memory, like kernels/cuda/kernels.h
// (C++17: compiled by nvcc and g++).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

inline constexpr int64_t kDeviceMaxCharge = 256;  // tessera::kMaxCharge (residue ids)

// The plaquettes of non-zero charge of `own` (see find_residues), compacted in raster order
// into `scratch` as PlaquetteCharge words. Returns their number (synchronises the stream).
int64_t compact_charges(const DeviceArrays& a, const Window& own, uint64_t* scratch, cudaStream_t s);

// The residues of the m charges in `charges` (compact_charges' output), as Region::find_residues
// lists them (ascending ids, |q| unit residues per plaquette), into a stream-ordered
// allocation *out that the caller frees with cudaFreeAsync. Returns their number.
int64_t expand_residues(const DeviceArrays& a, const Window& own, const uint64_t* charges, int64_t m,
                        DeviceResidue** out, cudaStream_t s);

// What rasterise_mates found; counts of residues, as MatchStats counts them.
struct MatesSummary {
    unsigned long long pairs = 0, ground = 0, leftovers = 0;
};

// After phase A on one rank: every residue's accepted cut (a pair at its lower-id end, or its
// ground cut, exactly as make_pair_cut / make_ground_cut build them) rasterised into the cut
// bits of `own` (after block_invalid_edges), and the free residues appended in any order to
// `leftovers` (room for st.n). `summary`: device memory, zeroed by the caller.
void rasterise_mates(const DeviceArrays& a, const Window& own, const DevicePhaseA& st, DeviceResidue* leftovers,
                     MatesSummary* summary, cudaStream_t s);

}  // namespace tessera::cuda
