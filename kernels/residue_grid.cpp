#include "kernels/residue_grid.h"

#include <algorithm>
#include <cstdlib>

namespace tessera {

void ResidueGrid::build(std::span<const Residue> res, std::span<const int32_t> subset,
                        const Window& area_, int64_t cell_) {
    area = area_;
    cell = std::max<int64_t>(cell_, 1);
    crows = (area.rows + cell - 1) / cell;
    ccols = (area.cols + cell - 1) / cell;
    start.assign(static_cast<size_t>(crows * ccols + 1), 0);
    auto cell_of = [&](const Residue& x) {
        return ((x.r - area.row0) / cell) * ccols + (x.c - area.col0) / cell;
    };
    const bool all = subset.empty();
    const size_t n = all ? res.size() : subset.size();
    auto at = [&](size_t k) { return all ? static_cast<int32_t>(k) : subset[k]; };
    for (size_t k = 0; k < n; ++k) {
        const Residue& x = res[static_cast<size_t>(at(k))];
        if (area.contains(x.r, x.c)) ++start[static_cast<size_t>(cell_of(x)) + 1];
    }
    for (size_t c = 1; c < start.size(); ++c) start[c] += start[c - 1];
    items.assign(static_cast<size_t>(start.back()), 0);
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    // Input is in ascending id order, so each cell's items stay ascending.
    for (size_t k = 0; k < n; ++k) {
        const int32_t i = at(k);
        const Residue& x = res[static_cast<size_t>(i)];
        if (area.contains(x.r, x.c)) items[static_cast<size_t>(fill[static_cast<size_t>(cell_of(x))]++)] = i;
    }
}

}  // namespace tessera
