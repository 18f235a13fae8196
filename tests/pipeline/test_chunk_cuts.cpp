// ChunkCuts (pipeline/chunk_cuts.h): a chunk's cuts, rasterised over the chunk's rows, block the
// same edges as every cut of the rank does there; and they come in the rank's order.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/region.h"
#include "kernels/residue.h"
#include "pipeline/chunk_cuts.h"
#include "pipeline/chunked_stages.h"

namespace tessera {
namespace {

// The cut bits `cuts` set in `band`'s rows of an H x W image (every other bit 0).
std::vector<uint8_t> bits_in(int64_t H, int64_t W, const Window& band, std::span<const Cut> cuts) {
    std::vector<float> phase(static_cast<size_t>(H * W), 0.0f);
    std::vector<uint8_t> flags(phase.size(), 0);
    const RegionArrays a{H, W, Window{0, 0, H, W}, phase.data(), flags.data(), nullptr, nullptr};
    std::vector<int32_t> which(cuts.size());
    std::iota(which.begin(), which.end(), 0);
    cpu::rasterise_cuts(a, band, cuts, which);
    return flags;
}

TEST(ChunkCuts, EachChunkBlocksWhatEveryCutBlocksInItsRowsInTheRanksOrder) {
    std::mt19937 rng(29);
    const int64_t H = 151, W = 67;
    for (int trial = 0; trial < 12; ++trial) {
        // The own window: rows [r0, r1) of the image (the rank's cuts also reach rows outside it).
        const int64_t r0 = std::uniform_int_distribution<int64_t>(0, 40)(rng);
        const int64_t r1 = std::uniform_int_distribution<int64_t>(r0 + 20, H)(rng);
        const int64_t tile = std::uniform_int_distribution<int64_t>(4, 16)(rng);
        const TileGrid tiles(H, W, tile);
        const Window own{r0 - r0 % tile, 0, r1 - (r0 - r0 % tile), W};
        const std::vector<Window> chunks = chunk_windows(own, tiles, std::uniform_int_distribution<int64_t>(1, 3)(rng));
        std::vector<Cut> cuts;
        std::uniform_int_distribution<int32_t> row(0, static_cast<int32_t>(H - 2)), col(0, static_cast<int32_t>(W - 2)),
            step(-30, 30), side(-1, 3);
        for (int k = 0; k < 400; ++k) {
            const int32_t ra = row(rng), ca = col(rng);
            const int s = side(rng);
            Cut c{k, kGroundId, ra, ca, ra, ca, static_cast<GroundSide>(s)};
            if (s < 0) {
                c.id_b = k + 1000;
                c.rb = std::clamp<int32_t>(ra + step(rng), 0, static_cast<int32_t>(H - 2));
                c.cb = std::clamp<int32_t>(ca + step(rng), 0, static_cast<int32_t>(W - 2));
            }
            cuts.push_back(c);
        }
        ChunkCuts by_chunk(cuts, chunks, H, W);
        size_t reached = 0;
        for (size_t i = 0; i < chunks.size(); ++i) {
            const std::span<const Cut> mine = by_chunk.of(i);
            reached += mine.size();
            EXPECT_EQ(bits_in(H, W, chunks[i], mine), bits_in(H, W, chunks[i], cuts)) << "trial " << trial << " chunk " << i;
            for (size_t j = 1; j < mine.size(); ++j) EXPECT_LT(mine[j - 1].id_a, mine[j].id_a);
        }
        EXPECT_EQ(reached, by_chunk.entries());
        EXPECT_LT(reached, cuts.size() * chunks.size());  // not every cut for every chunk
    }
}

}  // namespace
}  // namespace tessera
