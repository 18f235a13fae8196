// cpu::Region::find_residues: the own window's residues, tile by tile on threads and put in id
// order band by band, against a plain scan of every plaquette (section 2's charge, written out).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/region.h"
#include "kernels/types.h"
#include "partition/tile_grid.h"

namespace {

using tessera::Residue;
using tessera::Window;

std::vector<Residue> scan(const std::vector<float>& ph, int64_t H, int64_t W, const Window& own) {
    auto n = [&](int64_t r0, int64_t c0, int64_t r1, int64_t c1) {
        return tessera::wrap_count(ph[static_cast<size_t>(r0 * W + c0)], ph[static_cast<size_t>(r1 * W + c1)]);
    };
    std::vector<Residue> out;
    for (int64_t r = own.row0; r < std::min(own.row0 + own.rows, H - 1); ++r)
        for (int64_t c = own.col0; c < std::min(own.col0 + own.cols, W - 1); ++c) {
            // Around the plaquette: down the left side, right along the bottom, less the top, less the right side.
            const int32_t q = n(r, c, r + 1, c) + n(r + 1, c, r + 1, c + 1) - n(r, c, r, c + 1) - n(r, c + 1, r + 1, c + 1);
            for (int32_t s = 0; s < std::abs(q); ++s)
                out.push_back({tessera::residue_id(r, c, W, s), static_cast<int32_t>(r), static_cast<int32_t>(c), q > 0 ? 1 : -1});
        }
    return out;
}

}  // namespace

TEST(CpuResidues, EveryPlaquettesResiduesInIdOrderForAnyTiles) {
    const int64_t H = 301, W = 437;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-3.14159f, 3.14159f);
    std::vector<float> ph(static_cast<size_t>(H * W));
    for (float& v : ph) v = u(rng);  // pure noise: residues on most plaquettes, some of charge 2
    std::vector<uint8_t> flags(ph.size(), 0);
    for (int64_t tile : {16, 50, 64, 1000}) {
        SCOPED_TRACE(tile);
        const tessera::TileGrid tiles(H, W, tile);
        // The whole image, and a window of whole tiles inside it (with the halo row and column).
        const int64_t t = tiles.tile;
        for (const Window own : {Window{0, 0, H, W}, Window{t, t, std::min(H - t, 2 * t), std::min(W - t, 3 * t)}}) {
            if (own.rows <= 0 || own.cols <= 0) continue;
            const Window buf{own.row0, own.col0, std::min(H - own.row0, own.rows + 1), std::min(W - own.col0, own.cols + 1)};
            std::vector<float> bph(static_cast<size_t>(buf.size()));
            for (int64_t r = 0; r < buf.rows; ++r)
                for (int64_t c = 0; c < buf.cols; ++c)
                    bph[static_cast<size_t>(r * buf.cols + c)] = ph[static_cast<size_t>((buf.row0 + r) * W + buf.col0 + c)];
            const tessera::RegionArrays a{H, W, buf, bph.data(), flags.data(), nullptr, nullptr};
            tessera::cpu::Region region(a, own, tiles);
            const auto got = region.find_residues();
            const std::vector<Residue> want = scan(ph, H, W, own);
            ASSERT_EQ(got.size(), want.size());
            int64_t wrong = 0;
            for (size_t i = 0; i < want.size(); ++i)
                wrong += got[i].id != want[i].id || got[i].r != want[i].r || got[i].c != want[i].c || got[i].sign != want[i].sign;
            EXPECT_EQ(wrong, 0);
        }
    }
}
