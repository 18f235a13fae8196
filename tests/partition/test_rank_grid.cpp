// The rank grid (partition/rank_grid.h): each rank's window from the grid's own arithmetic,
// the given and chosen P x Q, and the tile side fitted to the ranks (docs/ARCHITECTURE.md 5).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/input_error.h"
#include "partition/rank_grid.h"

namespace tessera {
namespace {

// Every pixel belongs to exactly one rank's own window, and rank_of says which.
void expect_windows_cover(const RankGrid& g) {
    std::vector<int> owner(static_cast<size_t>(g.tiles.H * g.tiles.W), -1);
    for (int k = 0; k < g.size(); ++k) {
        const Window w = g.own(k);
        EXPECT_GT(w.rows, 0);
        EXPECT_GT(w.cols, 0);
        EXPECT_EQ(w.row0 % g.tiles.tile, 0);
        EXPECT_EQ(w.col0 % g.tiles.tile, 0);
        for (int64_t r = w.row0; r < w.row0 + w.rows; ++r)
            for (int64_t c = w.col0; c < w.col0 + w.cols; ++c) {
                int& o = owner[static_cast<size_t>(r * g.tiles.W + c)];
                EXPECT_EQ(o, -1);
                o = k;
            }
    }
    for (int64_t r = 0; r < g.tiles.H; ++r)
        for (int64_t c = 0; c < g.tiles.W; ++c) ASSERT_EQ(g.rank_of(r, c), owner[static_cast<size_t>(r * g.tiles.W + c)]);
}

TEST(RankGrid, GivenSpecIsTakenAndCoversTheImage) {
    const RankGrid g = make_rank_grid(TileGrid(100, 70, 16), 6, "3x2", "in.tif");
    EXPECT_EQ(g.P, 3);
    EXPECT_EQ(g.Q, 2);
    expect_windows_cover(g);
}

TEST(RankGrid, ChosenGridHasTheSmallestPerimeterAndCoversTheImage) {
    // 4 ranks over a wide image: 1x4 beats 2x2 and 4x1 (half-perimeters 64+80, 64+160, 16+320 pixels).
    const RankGrid g = make_rank_grid(TileGrid(64, 320, 16), 4, "", "in.tif");
    EXPECT_EQ(g.P, 1);
    EXPECT_EQ(g.Q, 4);
    expect_windows_cover(g);
    expect_windows_cover(make_rank_grid(TileGrid(97, 53, 16), 5, "", "in.tif"));
}

TEST(RankGrid, BadSpecsAreOneLineNamingTheFile) {
    const TileGrid t(64, 64, 16);  // 4 x 4 tiles
    for (const std::string spec : {"2", "x2", "2x", "0x4", "ax2", "-1x-4"}) {
        try {
            (void)make_rank_grid(t, 4, spec, "in.tif");
            ADD_FAILURE() << spec << " taken";
        } catch (const InputError& e) {
            EXPECT_EQ(std::string(e.what()).rfind("in.tif: --rank-grid", 0), 0u) << e.what();
        }
    }
    EXPECT_THROW((void)make_rank_grid(t, 4, "1x2", "in.tif"), InputError);   // 2 ranks, the job has 4
    EXPECT_THROW((void)make_rank_grid(t, 5, "5x1", "in.tif"), InputError);   // 5 rank rows, 4 tile rows
    EXPECT_THROW((void)make_rank_grid(t, 17, "", "in.tif"), InputError);     // more ranks than tiles
    EXPECT_THROW((void)make_rank_grid(t, 7, "", "in.tif"), InputError);      // 1x7, 7x1: no fit
}

TEST(RankGrid, TileSideHalvesUntilTheRanksFit) {
    // 64 x 64: tiles of 64 hold one rank, of 32 four, of 16 sixteen.
    EXPECT_EQ(tile_for_ranks(64, 64, 512, 1, ""), 512);
    EXPECT_EQ(tile_for_ranks(64, 64, 512, 3, ""), 16);     // 1x3 or 3x1 needs 3 tile rows or columns
    EXPECT_EQ(tile_for_ranks(64, 64, 512, 4, ""), 32);     // 2x2
    EXPECT_EQ(tile_for_ranks(64, 64, 512, 4, "1x4"), 16);  // the given grid's 4 columns
    EXPECT_EQ(tile_for_ranks(64, 64, 512, 2, "2x1"), 32);
    // Too many ranks even at the smallest side, or a spec make_rank_grid rejects: the side as given.
    EXPECT_EQ(tile_for_ranks(64, 64, 512, 17, ""), 512);
    EXPECT_EQ(tile_for_ranks(64, 64, 512, 4, "bad"), 512);
    for (const int ranks : {1, 2, 3, 4, 6, 8, 9, 12, 16}) {
        const int64_t t = tile_for_ranks(64, 64, 512, ranks, "");
        EXPECT_NO_THROW((void)make_rank_grid(TileGrid(64, 64, t), ranks, "", "in.tif")) << ranks;
    }
}

}  // namespace
}  // namespace tessera
