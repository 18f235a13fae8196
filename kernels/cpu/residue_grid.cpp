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

Candidate best_candidate(const ResidueGrid& g, std::span<const Residue> res, const uint8_t* matched,
                         int32_t i, int64_t limit, int64_t H, int64_t W) {
    const Residue& a = res[static_cast<size_t>(i)];
    Candidate best;
    const GroundChoice gc = ground_choice(a.r, a.c, H, W);
    if (gc.weight <= limit) best = {EdgeKey{gc.weight, a.id, kGroundId}, kPartnerGround};
    const int64_t ci = (a.r - g.area.row0) / g.cell, cj = (a.c - g.area.col0) / g.cell;
    auto scan_cell = [&](int64_t y, int64_t x) {
        if (y < 0 || y >= g.crows || x < 0 || x >= g.ccols) return;
        const int64_t cidx = y * g.ccols + x;
        for (int64_t t = g.start[static_cast<size_t>(cidx)]; t < g.start[static_cast<size_t>(cidx) + 1]; ++t) {
            const int32_t j = g.items[static_cast<size_t>(t)];
            const Residue& b = res[static_cast<size_t>(j)];
            if (b.sign == a.sign || matched[j]) continue;
            const int64_t w = std::abs(int64_t{b.r} - a.r) + std::abs(int64_t{b.c} - a.c);
            if (w > limit || w > best.key.w) continue;
            const EdgeKey k = pair_key(w, a.id, b.id);
            if (k < best.key) best = {k, j};
        }
    };
    const int64_t max_ring = std::max({ci, cj, g.crows - 1 - ci, g.ccols - 1 - cj});
    for (int64_t ring = 0; ring <= max_ring; ++ring) {
        // Any pixel in ring `ring` is at least (ring-1)*cell+1 away in one coordinate.
        const int64_t lower = ring == 0 ? 0 : (ring - 1) * g.cell + 1;
        if (lower > limit || lower > best.key.w) break;
        if (ring == 0) {
            scan_cell(ci, cj);
            continue;
        }
        for (int64_t x = cj - ring; x <= cj + ring; ++x) {
            scan_cell(ci - ring, x);
            scan_cell(ci + ring, x);
        }
        for (int64_t y = ci - ring + 1; y <= ci + ring - 1; ++y) {
            scan_cell(y, cj - ring);
            scan_cell(y, cj + ring);
        }
    }
    return best;
}

}  // namespace tessera
