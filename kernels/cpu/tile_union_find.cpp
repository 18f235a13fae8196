#include <cmath>
#include <limits>

#include "kernels/cpu/kernels.h"
#include "kernels/union_find.h"

namespace tessera::cpu {

int64_t tile_union_find(const RegionArrays& a, const Window& tile, uint64_t* nodes) {
    int64_t conflicts = 0;
    const int64_t cols = tile.cols;
    for (int64_t i = 0; i < tile.rows; ++i) {
        const int64_t r = tile.row0 + i;
        const float* ph = a.phase + a.index(r, tile.col0);
        const uint8_t* f = a.flags + a.index(r, tile.col0);
        const float* ph_up = i > 0 ? a.phase + a.index(r - 1, tile.col0) : nullptr;
        const uint8_t* f_up = i > 0 ? a.flags + a.index(r - 1, tile.col0) : nullptr;
        uint64_t* row = nodes + i * cols;
        for (int64_t j = 0; j < cols; ++j) {
            const uint32_t p = static_cast<uint32_t>(i * cols + j);
            // Scan order: attach p under its left neighbour's root, then merge with the one above.
            // Along a -> b, k(b) - k(a) = -n(a -> b) (section 2).
            if (j > 0 && !(f[j - 1] & kBlockRight)) {
                int32_t kl;
                const uint32_t rl = uf::find(nodes, p - 1, kl);
                row[j] = uf::pack(rl, kl - wrap_count(ph[j - 1], ph[j]));
            } else {
                row[j] = uf::pack(p, 0);
            }
            if (i > 0 && !(f_up[j] & kBlockDown)) {
                if (!uf::unite(nodes, p - static_cast<uint32_t>(cols), p, -wrap_count(ph_up[j], ph[j])))
                    ++conflicts;
            }
        }
    }
    uf::flatten(nodes, static_cast<uint32_t>(tile.size()));
    return conflicts;
}

void apply_offsets(const RegionArrays& a, const Window& tile, const uint64_t* nodes,
                   const RootRecord* root_rec) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < tile.rows; ++i) {
        const int64_t base = a.index(tile.row0 + i, tile.col0);
        float* ph = a.phase + base;
        const uint8_t* f = a.flags + base;
        uint32_t* lab = a.label + base;
        int32_t* cyc = a.cycles ? a.cycles + base : nullptr;
        const uint64_t* row = nodes + i * tile.cols;
        for (int64_t j = 0; j < tile.cols; ++j) {
            if (f[j] & kInvalid) {
                ph[j] = nan;
                lab[j] = 0;
                if (cyc) cyc[j] = 0;
                continue;
            }
            const RootRecord& rec = root_rec[uf::parent(row[j])];
            const int32_t k = uf::potential(row[j]) + rec.offset;
            // Section 4: u = phi + 6.2831855f * k, float32, no contraction.
            const float twopik = kTwoPiF * static_cast<float>(k);
            ph[j] = ph[j] + twopik;
            lab[j] = (f[j] & kLowCoherence) ? 0u : rec.label;
            if (cyc) cyc[j] = k;
        }
    }
}

}  // namespace tessera::cpu
