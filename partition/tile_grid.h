// The tile grid over the image (ARCHITECTURE.md section 6): square tiles of a fixed
// size in raster order; ranks own whole tiles.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/types.h"

namespace tessera {

struct TileGrid {
    int64_t H = 0, W = 0, tile = 0;
    int64_t trows = 0, tcols = 0;

    TileGrid() = default;
    TileGrid(int64_t H_, int64_t W_, int64_t tile_)
        : H(H_), W(W_), tile(std::max<int64_t>(tile_, 1)),
          trows((H_ + tile - 1) / tile), tcols((W_ + tile - 1) / tile) {}

    int64_t count() const { return trows * tcols; }
    int64_t tile_of(int64_t r, int64_t c) const { return (r / tile) * tcols + c / tile; }
    Window window(int64_t t) const {
        const int64_t ti = t / tcols, tj = t % tcols;
        const int64_t r0 = ti * tile, c0 = tj * tile;
        return {r0, c0, std::min(tile, H - r0), std::min(tile, W - c0)};
    }
};

}  // namespace tessera
