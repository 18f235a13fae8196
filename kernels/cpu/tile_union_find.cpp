#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/label_width.h"
#include "kernels/union_find.h"

namespace tessera::cpu {

int64_t tile_union_find(const RegionArrays& a, const Window& tile, uint64_t* nodes, uint32_t* counts) {
    int64_t conflicts = 0;
    const int64_t cols = tile.cols;
    // A row's wrap counts from the left and from above, first (vectorized), then the joins in order.
    std::vector<int32_t> n_left(static_cast<size_t>(cols)), n_up_row(static_cast<size_t>(cols));
    for (int64_t i = 0; i < tile.rows; ++i) {
        const int64_t r = tile.row0 + i;
        const float* ph = a.phase + a.index(r, tile.col0);
        const uint8_t* f = a.flags + a.index(r, tile.col0);
        const float* ph_up = i > 0 ? a.phase + a.index(r - 1, tile.col0) : nullptr;
        const uint8_t* f_up = i > 0 ? a.flags + a.index(r - 1, tile.col0) : nullptr;
        uint64_t* row = nodes + i * cols;
        int32_t* nl = n_left.data();
        int32_t* nu = n_up_row.data();
        for (int64_t j = 1; j < cols; ++j) nl[j] = wrap_count(ph[j - 1], ph[j]);
        if (ph_up)
            for (int64_t j = 0; j < cols; ++j) nu[j] = wrap_count(ph_up[j], ph[j]);
        // The run of pixels joined from the left shares a root, kept in registers:
        // root_p is always a root, and k_p = k(p) - k(root_p).
        uint32_t root_p = 0;
        int32_t k_p = 0;
        for (int64_t j = 0; j < cols; ++j) {
            const uint32_t p = static_cast<uint32_t>(i * cols + j);
            // Along a -> b, k(b) - k(a) = -n(a -> b) (section 2).
            if (j > 0 && !(f[j - 1] & kBlockRight)) {
                k_p -= nl[j];
            } else {
                root_p = p;
                k_p = 0;
            }
            row[j] = uf::pack(root_p, k_p);
            if (i > 0 && !(f_up[j] & kBlockDown)) {
                int32_t k_u;
                const uint32_t root_u = uf::find(nodes, p - static_cast<uint32_t>(cols), k_u);
                const int32_t n_up = nu[j];
                // k(p) - k(up) = -n_up  =>  K(root_p) - K(root_u) = k_u - n_up - k_p.
                const int32_t diff = k_u - n_up - k_p;
                if (root_u == root_p) {
                    if (diff != 0) ++conflicts;
                } else if (root_u < root_p) {  // the smaller index stays the root (section 4)
                    nodes[root_p] = uf::pack(root_u, diff);
                    root_p = root_u;
                    k_p += diff;
                } else {
                    nodes[root_u] = uf::pack(root_p, -diff);
                }
            }
        }
    }
    // Flatten (every parent index is below its child's) and count, in one pass.
    std::fill(counts, counts + tile.size(), 0u);
    for (int64_t i = 0; i < tile.rows; ++i) {
        const uint8_t* f = a.flags + a.index(tile.row0 + i, tile.col0);
        uint64_t* row = nodes + i * cols;
        for (int64_t j = 0; j < cols; ++j) {
            const uint64_t w = row[j];
            const uint32_t p = uf::parent(w);
            if (p != static_cast<uint32_t>(i * cols + j)) {
                const uint64_t pw = nodes[p];
                row[j] = uf::pack(uf::parent(pw), uf::potential(w) + uf::potential(pw));
            }
            counts[uf::parent(row[j])] += !(f[j] & kUnreliable);
        }
    }
    return conflicts;
}

namespace {

template <class L>
void apply_tile(const RegionArrays& a, const Window& tile, const uint64_t* nodes, const RootRecord* root_rec) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < tile.rows; ++i) {
        const int64_t base = a.index(tile.row0 + i, tile.col0);
        float* ph = a.phase + base;
        const uint8_t* f = a.flags + base;
        L* lab = static_cast<L*>(a.label) + base;
        int32_t* cyc = a.cycles ? a.cycles + base : nullptr;
        const uint64_t* row = nodes + i * tile.cols;
        for (int64_t j = 0; j < tile.cols; ++j) {
            if (f[j] & kUnreliable) {
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
            lab[j] = static_cast<L>(rec.label);  // the caller chose L wide enough for every label
            if (cyc) cyc[j] = k;
        }
    }
}

}  // namespace

void apply_offsets(const RegionArrays& a, const Window& tile, const uint64_t* nodes, const RootRecord* root_rec,
                   int label_bytes) {
    with_label_type(label_bytes, [&](auto l) { apply_tile<decltype(l)>(a, tile, nodes, root_rec); });
}

}  // namespace tessera::cpu
