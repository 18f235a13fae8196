#include <algorithm>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace tessera::cpu {

void find_residues(const RegionArrays& a, const Window& tile, std::vector<Residue>& out) {
    const int64_t rend = std::min(tile.row0 + tile.rows, a.H - 1);
    const int64_t n = std::min(tile.col0 + tile.cols, a.W - 1) - tile.col0;
    if (rend <= tile.row0 || n <= 0) return;
    // Each wrap count once: nh of rows r and r+1 (the latter reused as the next row's r), nv of row r.
    std::vector<int32_t> nh0(static_cast<size_t>(n)), nh1(static_cast<size_t>(n)), nv(static_cast<size_t>(n) + 1);
    auto horizontal = [&](int64_t r, std::vector<int32_t>& nh) {
        const float* p = a.phase + a.index(r, tile.col0);
        for (int64_t j = 0; j < n; ++j) nh[static_cast<size_t>(j)] = wrap_count(p[j], p[j + 1]);
    };
    horizontal(tile.row0, nh0);
    for (int64_t r = tile.row0; r < rend; ++r) {
        const float* p0 = a.phase + a.index(r, tile.col0);
        const float* p1 = a.phase + a.index(r + 1, tile.col0);
        for (int64_t j = 0; j <= n; ++j) nv[static_cast<size_t>(j)] = wrap_count(p0[j], p1[j]);
        horizontal(r + 1, nh1);
        for (int64_t j = 0; j < n; ++j) {
            // q = nv(r,c) + nh(r+1,c) - nh(r,c) - nv(r,c+1), section 2.
            const int32_t q = nv[static_cast<size_t>(j)] + nh1[static_cast<size_t>(j)] - nh0[static_cast<size_t>(j)] -
                              nv[static_cast<size_t>(j) + 1];
            if (q == 0) [[likely]]
                continue;
            const int64_t c = tile.col0 + j;
            const int32_t m = std::abs(q), sign = q > 0 ? 1 : -1;
            for (int32_t s = 0; s < m; ++s)
                out.push_back({residue_id(r, c, a.W, s), static_cast<int32_t>(r), static_cast<int32_t>(c), sign});
        }
        nh0.swap(nh1);
    }
}

}  // namespace tessera::cpu
