// Per-tile stage kernels of the CPU backend (ARCHITECTURE.md sections 2-4).
// kernels/cuda/kernels.h declares the same stages for the device.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/residue.h"
#include "kernels/types.h"

namespace tessera::cpu {

// Residues of the plaquettes whose top-left pixel lies in `tile`, appended in id order.
void find_residues(const RegionArrays& a, const Window& tile, std::vector<Residue>& out);

// Blocks the edges owned by `tile` that touch an invalid pixel (section 3), and the
// non-existent edges past the image's last row and column. Clears other cut bits first.
void block_invalid_edges(const RegionArrays& a, const Window& tile);

// Sets the cut bits of the edges owned by `tile` that the cuts' dual paths cross.
void rasterise_cuts(const RegionArrays& a, const Window& tile, std::span<const Cut> cuts,
                    std::span<const int32_t> which);

// Weighted union-find over the tile's unblocked edges; nodes (tile.size() words, row-major
// in the tile) end flattened: every pixel -> (tile-local root, k relative to it), and
// counts[root] = the root's reliable pixels (tile.size() entries, others 0).
// Returns the number of conflicts (must be 0).
int64_t tile_union_find(const RegionArrays& a, const Window& tile, uint64_t* nodes, uint32_t* counts);

// Final pixel pass: root_rec maps a tile-local root to (offset K, label); writes cycles
// (if present), label (label_bytes wide) and u = phi + 2 pi k into phase (NaN at invalid pixels).
struct RootRecord {
    int32_t offset = 0;
    uint32_t label = 0;
};
void apply_offsets(const RegionArrays& a, const Window& tile, const uint64_t* nodes,
                   const RootRecord* root_rec, int label_bytes);

}  // namespace tessera::cpu
