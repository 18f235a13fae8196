// The rank grid over the tile grid (ARCHITECTURE.md sections 1 and 5): P x Q ranks,
// each owning a rectangle of whole tiles, row-major rank order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/types.h"
#include "partition/tile_grid.h"

namespace tessera {

struct RankGrid {
    TileGrid tiles;
    int P = 1, Q = 1;  // rank rows x rank cols

    int size() const { return P * Q; }
    // Tile rows [row_tile(i), row_tile(i+1)) belong to rank row i (as even as possible).
    int64_t row_tile(int i) const { return tiles.trows * i / P; }
    int64_t col_tile(int j) const { return tiles.tcols * j / Q; }
    Window own(int rank) const;
    // The own window plus the one-pixel halo below and to the right, where the image continues.
    Window buffer(int rank) const;
    int rank_of(int64_t r, int64_t c) const;
    // Ranks other than `self` whose own window meets rows [r0, r1] x cols [c0, c1] (clipped).
    void ranks_meeting(int64_t r0, int64_t r1, int64_t c0, int64_t c1, int self, std::vector<int>& out) const;
};

// P x Q for `ranks` ranks: the given "PxQ" or, when empty, the factorisation with the
// smallest region perimeter. Throws InputError(`input`, ...) when the ranks outnumber
// the tiles in either direction.
RankGrid make_rank_grid(const TileGrid& tiles, int ranks, const std::string& spec, const std::string& input);

// The tile side of a run that was given none (section 6): `tile`, halved while `ranks` (as `spec`'s
// PxQ when given) would outnumber the tiles, down to kSmallestAutoTile; `tile` when even that is
// too large (make_rank_grid then says why). The result does not depend on the tile side.
inline constexpr int64_t kSmallestAutoTile = 16;
int64_t tile_for_ranks(int64_t H, int64_t W, int64_t tile, int ranks, const std::string& spec);

}  // namespace tessera
