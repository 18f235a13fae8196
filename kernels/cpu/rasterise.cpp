#include <algorithm>
#include <cstdlib>

#include "kernels/cpu/kernels.h"

namespace tessera::cpu {

void block_invalid_edges(const RegionArrays& a, const Window& tile) {
    for (int64_t r = tile.row0; r < tile.row0 + tile.rows; ++r) {
        uint8_t* f = a.flags + a.index(r, tile.col0);
        const uint8_t* below = r + 1 < a.H ? a.flags + a.index(r + 1, tile.col0) : nullptr;
        for (int64_t j = 0; j < tile.cols; ++j) {
            const int64_t c = tile.col0 + j;
            uint8_t v = f[j] & kUnreliable;
            const bool bad = v != 0;
            if (c + 1 >= a.W || bad || (f[j + 1] & kUnreliable)) v |= kBlockRight;
            if (!below || bad || (below[j] & kUnreliable)) v |= kBlockDown;
            f[j] = v;
        }
    }
}

namespace {

// Section 3: a horizontal dual step from P(r,c) in direction s crosses the down-edge of
// pixel (r, c + (s > 0)); a vertical step crosses the right-edge of pixel (r + (s > 0), c).
inline void block(const RegionArrays& a, const Window& tile, int64_t r, int64_t c, uint8_t bit) {
    if (tile.contains(r, c)) a.flags[a.index(r, c)] |= bit;
}

void rasterise_pair(const RegionArrays& a, const Window& tile, const Cut& cut) {
    const int64_t dr = int64_t{cut.rb} - cut.ra, dc = int64_t{cut.cb} - cut.ca;
    const int64_t adr = std::abs(dr), adc = std::abs(dc);
    const int64_t sr = dr > 0 ? 1 : -1, sc = dc > 0 ? 1 : -1;
    int64_t r = cut.ra, c = cut.ca, h = 0, v = 0;
    while (h < adc || v < adr) {
        // Canonical digital line: horizontal iff (2h+1)|dr| <= (2v+1)|dc| (ties horizontal).
        if ((2 * h + 1) * adr <= (2 * v + 1) * adc) {
            block(a, tile, r, c + (sc > 0), kBlockDown);
            c += sc;
            ++h;
        } else {
            block(a, tile, r + (sr > 0), c, kBlockRight);
            r += sr;
            ++v;
        }
    }
}

void rasterise_ground(const RegionArrays& a, const Window& tile, const Cut& cut) {
    const int64_t r = cut.ra, c = cut.ca;
    const int64_t tr0 = tile.row0, tr1 = tile.row0 + tile.rows, tc0 = tile.col0, tc1 = tile.col0 + tile.cols;
    switch (cut.side) {
        case kTop:  // right-edges of pixels (0..r, c)
            if (c >= tc0 && c < tc1)
                for (int64_t y = std::max<int64_t>(0, tr0); y <= std::min(r, tr1 - 1); ++y)
                    a.flags[a.index(y, c)] |= kBlockRight;
            break;
        case kBottom:  // right-edges of pixels (r+1..H-1, c)
            if (c >= tc0 && c < tc1)
                for (int64_t y = std::max(r + 1, tr0); y < std::min(a.H, tr1); ++y)
                    a.flags[a.index(y, c)] |= kBlockRight;
            break;
        case kLeft:  // down-edges of pixels (r, 0..c)
            if (r >= tr0 && r < tr1)
                for (int64_t x = std::max<int64_t>(0, tc0); x <= std::min(c, tc1 - 1); ++x)
                    a.flags[a.index(r, x)] |= kBlockDown;
            break;
        case kRight:  // down-edges of pixels (r, c+1..W-1)
            if (r >= tr0 && r < tr1)
                for (int64_t x = std::max(c + 1, tc0); x < std::min(a.W, tc1); ++x)
                    a.flags[a.index(r, x)] |= kBlockDown;
            break;
        case kNotGround:
            break;
    }
}

}  // namespace

void rasterise_cuts(const RegionArrays& a, const Window& tile, std::span<const Cut> cuts,
                    std::span<const int32_t> which) {
    for (int32_t i : which) {
        const Cut& cut = cuts[static_cast<size_t>(i)];
        if (cut.side == kNotGround)
            rasterise_pair(a, tile, cut);
        else
            rasterise_ground(a, tile, cut);
    }
}

}  // namespace tessera::cpu
