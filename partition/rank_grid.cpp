#include "partition/rank_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "io/input_error.h"

namespace tessera {

Window RankGrid::own(int rank) const {
    const int i = rank / Q, j = rank % Q;
    const int64_t r0 = row_tile(i) * tiles.tile, r1 = std::min(row_tile(i + 1) * tiles.tile, tiles.H);
    const int64_t c0 = col_tile(j) * tiles.tile, c1 = std::min(col_tile(j + 1) * tiles.tile, tiles.W);
    return {r0, c0, r1 - r0, c1 - c0};
}

Window RankGrid::buffer(int rank) const {
    Window w = own(rank);
    if (w.row0 + w.rows < tiles.H) ++w.rows;
    if (w.col0 + w.cols < tiles.W) ++w.cols;
    return w;
}

int RankGrid::rank_of(int64_t r, int64_t c) const {
    const int64_t ti = r / tiles.tile, tj = c / tiles.tile;
    // The rank row i holds tile rows [trows*i/P, trows*(i+1)/P).
    int i = static_cast<int>(std::min<int64_t>(P - 1, (ti * P) / std::max<int64_t>(tiles.trows, 1)));
    while (i > 0 && row_tile(i) > ti) --i;
    while (i + 1 < P && row_tile(i + 1) <= ti) ++i;
    int j = static_cast<int>(std::min<int64_t>(Q - 1, (tj * Q) / std::max<int64_t>(tiles.tcols, 1)));
    while (j > 0 && col_tile(j) > tj) --j;
    while (j + 1 < Q && col_tile(j + 1) <= tj) ++j;
    return i * Q + j;
}

void RankGrid::ranks_meeting(int64_t r0, int64_t r1, int64_t c0, int64_t c1, int self, std::vector<int>& out) const {
    out.clear();
    r0 = std::max<int64_t>(r0, 0), c0 = std::max<int64_t>(c0, 0);
    r1 = std::min(r1, tiles.H - 1), c1 = std::min(c1, tiles.W - 1);
    if (r0 > r1 || c0 > c1) return;
    const int a = rank_of(r0, c0), b = rank_of(r1, c1);
    for (int i = a / Q; i <= b / Q; ++i)
        for (int j = a % Q; j <= b % Q; ++j)
            if (i * Q + j != self) out.push_back(i * Q + j);
}

namespace {

// "PxQ" as rank rows and columns; nullopt when `spec` is not of that form with both at least 1.
std::optional<std::pair<int, int>> parse_rank_grid(const std::string& spec) {
    const auto x = spec.find('x');
    if (x == std::string::npos) return std::nullopt;
    int p = 0, q = 0;
    try {
        p = std::stoi(spec.substr(0, x)), q = std::stoi(spec.substr(x + 1));
    } catch (...) {
        return std::nullopt;
    }
    if (p < 1 || q < 1) return std::nullopt;
    return std::pair{p, q};
}

// Whether p x q ranks each get at least one tile row and one tile column.
bool grid_fits(const TileGrid& tiles, int p, int q) { return p <= tiles.trows && q <= tiles.tcols; }

}  // namespace

RankGrid make_rank_grid(const TileGrid& tiles, int ranks, const std::string& spec, const std::string& input) {
    RankGrid g;
    g.tiles = tiles;
    const std::string hint = " (image " + std::to_string(tiles.W) + "x" + std::to_string(tiles.H) + " in " +
                             std::to_string(tiles.tcols) + "x" + std::to_string(tiles.trows) + " tiles of " +
                             std::to_string(tiles.tile) + "; use a smaller --tile-size or fewer ranks)";
    if (!spec.empty()) {
        const auto pq = parse_rank_grid(spec);
        if (!pq) throw InputError(input, "--rank-grid '" + spec + "' is not PxQ (rank rows x rank columns)");
        const auto [p, q] = *pq;
        if (p * q != ranks)
            throw InputError(input, "--rank-grid " + spec + " needs " + std::to_string(p * q) + " ranks, the job has " +
                                        std::to_string(ranks));
        if (!grid_fits(tiles, p, q))
            throw InputError(input, "--rank-grid " + spec + " has more ranks than tiles in a direction" + hint);
        g.P = p, g.Q = q;
        return g;
    }
    if (ranks > tiles.count())
        throw InputError(input, "more ranks (" + std::to_string(ranks) + ") than tiles (" +
                                    std::to_string(tiles.count()) + ")" + hint);
    double best = std::numeric_limits<double>::infinity();
    for (int p = 1; p <= ranks; ++p) {
        if (ranks % p) continue;
        const int q = ranks / p;
        if (!grid_fits(tiles, p, q)) continue;
        // The largest region's half-perimeter, in tiles.
        const double cost = std::ceil(double(tiles.trows) / p) * tiles.tile + std::ceil(double(tiles.tcols) / q) * tiles.tile;
        if (cost < best) best = cost, g.P = p, g.Q = q;
    }
    if (!std::isfinite(best))
        throw InputError(input, "no rank grid of " + std::to_string(ranks) + " ranks fits the tile grid" + hint);
    return g;
}

int64_t tile_for_ranks(int64_t H, int64_t W, int64_t tile, int ranks, const std::string& spec) {
    const auto pq = parse_rank_grid(spec);
    if (!spec.empty() && !pq) return tile;  // make_rank_grid names the problem
    auto fits = [&](const TileGrid& g) {
        if (pq) return grid_fits(g, pq->first, pq->second);
        for (int a = 1; a <= ranks; ++a)
            if (ranks % a == 0 && grid_fits(g, a, ranks / a)) return true;
        return false;
    };
    for (int64_t t = tile; t >= kSmallestAutoTile; t /= 2)
        if (fits(TileGrid(H, W, t))) return t;
    return tile;
}

}  // namespace tessera
