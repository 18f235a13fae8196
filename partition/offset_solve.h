// Cross-tile (and cross-rank) constraint solve (ARCHITECTURE.md section 4): the
// components of tiles become nodes, unblocked edges between tiles become constraints
// K(b) - K(a) = delta, and the same weighted union-find gives each component its
// global root, its offset, and the global labels.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/region.h"

namespace tessera {

struct OffsetSolution {
    // Parallel to the records (sorted by root): global root, offset K, global label.
    std::vector<int64_t> global_root;
    std::vector<int32_t> offset;
    std::vector<uint32_t> label;
    int64_t conflicts = 0;
    int64_t components = 0;  // global components with at least one valid pixel
    int64_t labelled = 0;    // components that got a label (size >= min_size)
    int64_t largest = 0;     // size of label 1
};

// `records` must be sorted by root and unique; every constraint end must be a record's root.
// Labels 1..N by (size descending, root ascending); components smaller than min_size get 0.
OffsetSolution solve_offsets(std::span<const ComponentRecord> records, std::span<const Constraint> constraints,
                             int64_t min_size);

}  // namespace tessera
