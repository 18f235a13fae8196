// Offsets and labels across ranks (ARCHITECTURE.md section 4): each rank solves its
// tiles' constraints, swaps its region's border pixels with its neighbours, and sends
// the components that touch a rank border or are big enough for a label, plus the
// cross-rank constraints, to the root, which solves them with the same union-find and
// sends back every component's offset and global label.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/region.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"

namespace tessera {

struct GlobalSolution {
    // Parallel to the region's records: offset K and label.
    std::vector<int32_t> offset;
    std::vector<uint32_t> label;
    int64_t conflicts = 0;   // in the solves (tile conflicts are counted by the caller)
    int64_t components = 0, labelled = 0, largest = 0;
};

// `strip(w)` returns the backend's PixelState of an own-window strip (after union_find).
GlobalSolution solve_global(const RegionComponents& comps, const RankGrid& grid, Comm& comm, int64_t min_size,
                            const std::optional<std::pair<int64_t, int64_t>>& reference,
                            const std::function<std::vector<PixelState>(const Window&)>& strip);

}  // namespace tessera
