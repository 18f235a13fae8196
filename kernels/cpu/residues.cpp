#include <algorithm>
#include <cstdlib>

#include "kernels/cpu/kernels.h"

namespace tessera::cpu {

void find_residues(const RegionArrays& a, const Window& tile, std::vector<Residue>& out) {
    const int64_t rend = std::min(tile.row0 + tile.rows, a.H - 1);
    const int64_t n = std::min(tile.col0 + tile.cols, a.W - 1) - tile.col0;
    for (int64_t r = tile.row0; r < rend; ++r) {
        const float* p0 = a.phase + a.index(r, tile.col0);
        const float* p1 = a.phase + a.index(r + 1, tile.col0);
        for (int64_t j = 0; j < n; ++j) {
            // q = nv(r,c) + nh(r+1,c) - nh(r,c) - nv(r,c+1), section 2.
            int32_t q = wrap_count(p0[j], p1[j]) + wrap_count(p1[j], p1[j + 1]) -
                        wrap_count(p0[j], p0[j + 1]) - wrap_count(p0[j + 1], p1[j + 1]);
            if (q == 0) [[likely]]
                continue;
            const int64_t c = tile.col0 + j;
            const int32_t m = std::abs(q), sign = q > 0 ? 1 : -1;
            for (int32_t s = 0; s < m; ++s)
                out.push_back({residue_id(r, c, a.W, s), static_cast<int32_t>(r),
                               static_cast<int32_t>(c), sign});
        }
    }
}

}  // namespace tessera::cpu
