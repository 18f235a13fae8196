// Phase A + B must reproduce the plain serial greedy matching exactly (section 3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "kernels/residue.h"
#include "kernels/residue_grid.h"
#include "kernels/phase_a.h"
#include "partition/matching.h"
#include "support/random_residues.h"

namespace tessera {
namespace {

using testing::random_residues;

// The oracle: every candidate edge, sorted by (weight, lower id, higher id), scanned once.
std::vector<Cut> serial_greedy(const std::vector<Residue>& res, int64_t H, int64_t W) {
    struct E {
        EdgeKey key;
        int32_t a, b;  // b = -1: ground
    };
    std::vector<E> edges;
    for (int32_t i = 0; i < static_cast<int32_t>(res.size()); ++i) {
        edges.push_back({EdgeKey{ground_choice(res[i].r, res[i].c, H, W).weight, res[i].id, kGroundId}, i, -1});
        for (int32_t j = i + 1; j < static_cast<int32_t>(res.size()); ++j)
            if (res[i].sign != res[j].sign) {
                const int64_t w = std::abs(int64_t{res[i].r} - res[j].r) + std::abs(int64_t{res[i].c} - res[j].c);
                edges.push_back({pair_key(w, res[i].id, res[j].id), i, j});
            }
    }
    std::sort(edges.begin(), edges.end(), [](const E& x, const E& y) { return x.key < y.key; });
    std::vector<uint8_t> used(res.size(), 0);
    std::vector<Cut> cuts;
    for (const E& e : edges) {
        if (used[e.a] || (e.b >= 0 && used[e.b])) continue;
        used[e.a] = 1;
        if (e.b >= 0) {
            used[e.b] = 1;
            cuts.push_back(make_pair_cut(res[e.a], res[e.b]));
        } else {
            cuts.push_back(make_ground_cut(res[e.a], H, W));
        }
    }
    std::sort(cuts.begin(), cuts.end(),
              [](const Cut& a, const Cut& b) { return a.id_a != b.id_a ? a.id_a < b.id_a : a.id_b < b.id_b; });
    return cuts;
}


struct Case {
    int64_t H, W;
    int count;
    uint32_t seed;
    bool clustered;
};

class MatchingOracle : public ::testing::TestWithParam<Case> {};

TEST_P(MatchingOracle, PhaseAPlusBEqualsSerialGreedy) {
    const Case cs = GetParam();
    const auto res = random_residues(cs.H, cs.W, cs.count, cs.seed, cs.clustered);
    ASSERT_FALSE(res.empty());
    const auto expect = serial_greedy(res, cs.H, cs.W);
    int64_t phase_b_seen = 0;
    Comm self(MPI_COMM_SELF);
    RankGrid grid;
    grid.tiles = TileGrid(cs.H, cs.W, 16);
    for (int64_t D : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, int64_t{64}, int64_t{100000}}) {
        MatchStats st;
        const auto got = match_residues(res, grid, D, self, st);
        ASSERT_EQ(got.size(), expect.size()) << "D " << D;
        for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expect[i]) << "cut " << i << " D " << D;
        phase_b_seen += st.leftovers;
        // Every residue is matched exactly once.
        ASSERT_EQ(st.phase_a_pairs * 2 + st.phase_a_ground + st.phase_b_pairs * 2 + st.phase_b_ground,
                  static_cast<int64_t>(res.size()));
    }
    // On a 2-pixel-high strip every residue touches the ground, so phase B has nothing to do.
    if (std::min(cs.H, cs.W) > 8) {
        EXPECT_GT(phase_b_seen, 0) << "phase B was never exercised";
    }
}

INSTANTIATE_TEST_SUITE_P(RandomFields, MatchingOracle,
                         ::testing::Values(Case{40, 50, 60, 1, false}, Case{64, 64, 300, 2, true},
                                           Case{100, 37, 200, 3, true}, Case{128, 128, 500, 4, false},
                                           Case{2, 300, 40, 5, false}, Case{300, 2, 40, 6, true},
                                           Case{200, 260, 900, 7, true}));

// The backend hook: match_residues runs phase A's rounds through the given PhaseARounds (here
// the host's behind a counting wrapper) and gets the same matching as with the default one.
TEST(Matching, UsesTheGivenPhaseARounds) {
    struct Counting final : PhaseARounds {
        HostPhaseARounds host;
        int64_t binds = 0, searches = 0, decides = 0, commits = 0;
        void bind(std::span<const Residue> res, std::span<const uint8_t> owned, const Window& area, int64_t cell,
                  int64_t limit, int64_t H, int64_t W) override {
            ++binds;
            host.bind(res, owned, area, cell, limit, H, W);
        }
        int64_t search() override { return ++searches, host.search(); }
        void export_states(std::span<const int32_t> l, int32_t* p, uint8_t* m) override { host.export_states(l, p, m); }
        void import_states(std::span<const int32_t> l, const int32_t* p, const uint8_t* m) override {
            host.import_states(l, p, m);
        }
        void decide(bool halo) override { ++decides, host.decide(halo); }
        void commit() override { ++commits, host.commit(); }
        void mates(int32_t* m) override { host.mates(m); }
    };
    const auto res = random_residues(128, 128, 500, 4, true);
    const auto expect = serial_greedy(res, 128, 128);
    Comm self(MPI_COMM_SELF);
    RankGrid grid;
    grid.tiles = TileGrid(128, 128, 16);
    for (int64_t D : {int64_t{3}, int64_t{64}}) {
        Counting rounds;
        MatchStats st;
        const auto got = match_residues(res, grid, D, self, st, rounds);
        EXPECT_EQ(got, expect) << "D " << D;
        EXPECT_EQ(rounds.binds, 1);
        EXPECT_EQ(rounds.searches, st.rounds + 1);  // the last round finds nothing active
        EXPECT_EQ(rounds.commits, st.rounds);
        EXPECT_EQ(rounds.decides, st.rounds);  // one rank: no halo, so no halo pass
        EXPECT_GT(st.rounds, 0);
    }
}

TEST(Matching, PairBeatsGroundOnEqualWeight) {
    // Two residues one step apart at the top border: pair weight 1 equals ground weight 1.
    std::vector<Residue> res = {{residue_id(0, 5, 20, 0), 0, 5, 1}, {residue_id(0, 6, 20, 0), 0, 6, -1}};
    MatchStats st;
    Comm self(MPI_COMM_SELF);
    RankGrid grid;
    grid.tiles = TileGrid(20, 20, 8);
    const auto cuts = match_residues(res, grid, 64, self, st);
    ASSERT_EQ(cuts.size(), 1u);
    EXPECT_EQ(cuts[0].side, kNotGround);
}

TEST(Matching, GroundTieOrderIsTopBottomLeftRight) {
    EXPECT_EQ(ground_choice(2, 2, 6, 6).side, kTop);      // 3,3,3,3
    EXPECT_EQ(ground_choice(2, 1, 6, 6).side, kLeft);     // 3,3,2,4
    EXPECT_EQ(ground_choice(3, 3, 6, 6).side, kBottom);   // 4,2,4,2
    EXPECT_EQ(ground_choice(1, 4, 6, 6).side, kRight);    // 2,4,5,1
}

}  // namespace
}  // namespace tessera
