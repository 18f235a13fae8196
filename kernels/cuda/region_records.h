// The small records a Region's stages pass between host and device: plaquette charges into
// residues (find_residues), cuts onto the device (place_cuts), component offsets and labels
// onto the device in bounded chunks (apply).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <span>
#include <vector>

#include "kernels/cuda/kernels.h"
#include "kernels/region.h"
#include "kernels/residue.h"
#include "kernels/types.h"

namespace tessera::cuda {

// The own-local index of a component root (a global pixel index, W: the image's width) and back.
inline int64_t local_of_root(int64_t root, const Window& own, int64_t W) {
    const int64_t r = root / W, c = root % W;
    if (!own.contains(r, c)) throw std::logic_error("cuda::Region: component root outside the own window");
    return (r - own.row0) * own.cols + (c - own.col0);
}
inline int64_t global_of_local(int64_t l, const Window& own, int64_t W) {
    return (own.row0 + l / own.cols) * W + own.col0 + l % own.cols;
}

// The n charges compact_charges left in `words` on the device, on the host (s synchronised).
UntouchedVector<PlaquetteCharge> download_charges(const uint64_t* words, int64_t n, cudaStream_t s);
// The residues of the plaquette charges compact_charges found over own (W: the image's width),
// one per unit of charge, sorted by id as the CPU's sort gives them.
ResidueList residues_of(std::span<const PlaquetteCharge> charges, const Window& own, int64_t W);

// Rasterises the host's cuts into d's cut bits over own (after block_invalid_edges), in s's
// order; synchronises s.
void rasterise_host_cuts(const DeviceArrays& d, const Window& own, std::span<const Cut> cuts, cudaStream_t s);

// mark_roots for every record of `as` (roots of own in an image W wide), uploaded through one
// device buffer of at most 16 MiB, chunk by chunk; synchronises s.
void mark_assigned_roots(const DeviceArrays& d, const Window& own, int64_t W, uint64_t* nodes,
                         const ComponentAssignment& as, cudaStream_t s);

}  // namespace tessera::cuda
