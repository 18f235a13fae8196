// A region unwrapped in chunks (pipeline/chunked_stages.h) against the same region in one
// piece (unwrap_region): the same bits of u, labels and k for every chunk height and tile size,
// on scenes with decorrelated patches, masked lakes, nodata and fringes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "app/synth.h"
#include "kernels/cpu/region.h"
#include "kernels/types.h"
#include "pipeline/chunked_stages.h"
#include "pipeline/unwrap_region.h"
#include "support/open_edges.h"
#include "support/scene_input.h"

namespace tessera {
namespace {

using Input = testing::SceneInput;
inline Input input_of(const SynthScene& s, float min_coherence) { return testing::scene_input(s, min_coherence); }

struct Output {
    std::vector<float> u;
    std::vector<uint32_t> label;
    std::vector<int32_t> k;
    RegionStats stats;
};

Output in_one_piece(const Input& in, const UnwrapParams& p, int64_t tile) {
    Output out{in.phase, std::vector<uint32_t>(in.phase.size()), std::vector<int32_t>(in.phase.size()), {}};
    std::vector<uint8_t> flags = in.flags;
    RegionArrays a{in.H, in.W, Window{0, 0, in.H, in.W}, out.u.data(), flags.data(), out.label.data(), out.k.data()};
    out.stats = unwrap_image(a, tile, p);
    return out;
}

Output in_chunks(const Input& in, const UnwrapParams& p, int64_t tile, int64_t tile_rows) {
    Output out{std::vector<float>(in.phase.size(), -7.0f), std::vector<uint32_t>(in.phase.size(), 77),
               std::vector<int32_t>(in.phase.size(), 77), {}};
    RankGrid grid;
    grid.tiles = TileGrid(in.H, in.W, tile);
    Comm self(MPI_COMM_SELF);
    int fills = 0;
    const ChunkFill fill = [&](const RegionArrays& a) {
        ++fills;
        for (int64_t r = a.buf.row0; r < a.buf.row0 + a.buf.rows; ++r)
            for (int64_t c = a.buf.col0; c < a.buf.col0 + a.buf.cols; ++c) {
                a.phase[a.index(r, c)] = in.phase[static_cast<size_t>(r * in.W + c)];
                a.flags[a.index(r, c)] = in.flags[static_cast<size_t>(r * in.W + c)];
            }
    };
    const ChunkSink sink = [&](const RegionArrays& a, const Window& own, int) {
        EXPECT_EQ(own.cols, in.W);
        for (int64_t r = own.row0; r < own.row0 + own.rows; ++r)
            for (int64_t c = own.col0; c < own.col0 + own.cols; ++c) {
                const size_t i = static_cast<size_t>(r * in.W + c);
                out.u[i] = a.phase[a.index(r, c)];
                out.label[i] = static_cast<const uint32_t*>(a.label)[a.index(r, c)];
                out.k[i] = a.cycles[a.index(r, c)];
            }
    };
    out.stats = unwrap_chunked<cpu::Region>(grid, self, p, tile_rows, true, ChunkRun{fill, sink});
    EXPECT_EQ(fills, 3 * static_cast<int>(chunk_windows(grid.own(0), grid.tiles, tile_rows).size()));
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ChunkedCase : public ::testing::TestWithParam<std::string> {};

TEST_P(ChunkedCase, BitIdenticalToOnePieceForAnyChunkHeight) {
    const SynthScene s = make_scene(GetParam(), 301, 263, 11);
    for (float min_coh : {0.0f, 0.3f}) {
        const Input in = input_of(s, min_coh);
        UnwrapParams p;
        p.min_component_size = 20;
        for (int64_t tile : {3, 32, 64}) {  // 3: chunks of 3 and 6 rows, the last of 1 (section 4.1 reads two rows on)
            const Output ref = in_one_piece(in, p, tile);
            for (int64_t tile_rows : {1, 2, 3, 100}) {
                const Output got = in_chunks(in, p, tile, tile_rows);
                const std::string what = GetParam() + " coherence " + std::to_string(min_coh) + " tile " +
                                         std::to_string(tile) + " chunk " + std::to_string(tile_rows);
                EXPECT_TRUE(same_bits(got.u, ref.u)) << what;
                EXPECT_EQ(got.label, ref.label) << what;
                EXPECT_EQ(got.k, ref.k) << what;
                EXPECT_EQ(got.stats.residues, ref.stats.residues) << what;
                EXPECT_EQ(got.stats.components, ref.stats.components) << what;
                EXPECT_EQ(got.stats.conflicts, 0) << what;
            }
        }
    }
}

// Checked from input and output alone (tests/support/open_edges.h), not against the other path.
TEST_P(ChunkedCase, EveryOpenEdgeAgreesWithItsWrapCount) {
    const SynthScene s = make_scene(GetParam(), 200, 190, 4);
    const Input in = input_of(s, 0.3f);
    UnwrapParams p;
    p.min_component_size = 1;
    const Output got = in_chunks(in, p, 32, 2);
    // The cut bits are the region's: recompute them through the one-piece run's flags.
    std::vector<float> u = in.phase;
    std::vector<uint8_t> flags = in.flags;
    std::vector<uint32_t> label(u.size());
    RegionArrays a{in.H, in.W, Window{0, 0, in.H, in.W}, u.data(), flags.data(), label.data(), nullptr};
    (void)unwrap_image(a, 32, p);
    const testing::OpenEdgeCheck c = testing::check_open_edges(in.phase, got.u, flags, in.H, in.W);
    EXPECT_EQ(c.disagree, 0);
    EXPECT_EQ(c.incongruent, 0);
    EXPECT_GT(c.checked, in.H * in.W / 3);
    const testing::CorrectionCheck cc = testing::check_cycle_correction(in.phase, got.u, flags, got.label, in.H, in.W);
    EXPECT_EQ(cc.wrong, 0);
    EXPECT_GT(cc.checked, in.H * in.W / 3);
}

TEST(Chunked, ReferencePixelAndChunkWindows) {
    const SynthScene s = make_scene("holes", 160, 150, 2);
    const Input in = input_of(s, 0.3f);
    UnwrapParams p;
    int64_t r = 100, c = 70;
    while (in.flags[static_cast<size_t>(r * in.W + c)] != 0) ++c;  // a reliable pixel
    p.reference = std::pair<int64_t, int64_t>{r, c};
    const Output ref = in_one_piece(in, p, 32), got = in_chunks(in, p, 32, 1);
    EXPECT_TRUE(same_bits(got.u, ref.u));
    EXPECT_EQ(got.k[static_cast<size_t>(r * in.W + c)], 0);
    const std::vector<Window> w = chunk_windows(Window{0, 0, 160, 150}, TileGrid(160, 150, 32), 2);
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[0].rows, 64);
    EXPECT_EQ(w[2].row0, 128);
    EXPECT_EQ(w[2].rows, 32);
}

INSTANTIATE_TEST_SUITE_P(AllCases, ChunkedCase, ::testing::Values("holes", "topo", "fringes", "bowl"));

}  // namespace
}  // namespace tessera
