// The cut clusters (kernels/cut_clusters.h, partition/matching.h) against a plain serial oracle
// of docs/ARCHITECTURE.md section 3: every candidate edge listed; in each round every open
// cluster's smallest leaving edge, found by looking at all of them, accepted at once.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/far_reach.h"
#include "kernels/residue.h"
#include "partition/matching.h"
#include "support/random_residues.h"

namespace tessera {
namespace {

using testing::random_residues;
using testing::with_lakes;

struct Oracle {
    std::vector<Cut> cuts;
    int64_t lake_joins = 0;
    std::vector<int64_t> cluster_charge;  // of every final cluster that does not hold the ground
};

Oracle serial_oracle(const std::vector<ClusterResidue>& res, int64_t H, int64_t W, int64_t R) {
    const int n = static_cast<int>(res.size());
    std::map<int64_t, int> lake_node;  // lake id -> node; the ground is node n + lakes
    for (const auto& x : res)
        for (int64_t l : x.lake)
            if (l >= 0) lake_node.emplace(l, 0);
    int next = n;
    for (auto& [id, node] : lake_node) node = next++;
    const int ground = next;
    struct E {
        EdgeKey key;
        int a, b;
    };
    std::vector<E> edges;
    for (int i = 0; i < n; ++i) {
        const Residue& a = res[i].res;
        edges.push_back({EdgeKey{ground_choice(a.r, a.c, H, W).weight, a.id, kGroundId}, i, ground});
        for (int64_t l : res[i].lake) {
            if (l == kGroundedLake) edges.push_back({EdgeKey{0, a.id, kGroundedLakeKey}, i, ground});
            if (l >= 0) edges.push_back({EdgeKey{0, a.id, kLakeKeyBase + l}, i, lake_node[l]});
        }
        for (int j = i + 1; j < n; ++j) {
            const Residue& b = res[j].res;
            const int64_t w = std::abs(int64_t{a.r} - b.r) + std::abs(int64_t{a.c} - b.c);
            if (w <= R) edges.push_back({pair_key(w, a.id, b.id), i, j});
        }
    }
    std::vector<int> cl(static_cast<size_t>(ground) + 1);
    for (int v = 0; v <= ground; ++v) cl[v] = v;
    std::vector<int64_t> charge(cl.size(), 0);
    for (int i = 0; i < n; ++i) charge[i] = res[i].res.sign;
    auto open = [&](int c) { return c != cl[ground] && charge[c] != 0; };
    Oracle o;
    for (;;) {
        std::map<int, const E*> best;  // open cluster -> its smallest leaving edge
        for (const E& e : edges) {
            if (cl[e.a] == cl[e.b]) continue;
            for (int c : {cl[e.a], cl[e.b]})
                if (open(c) && (!best.count(c) || e.key < best[c]->key)) best[c] = &e;
        }
        if (best.empty()) break;
        std::vector<const E*> taken;
        for (const auto& [c, e] : best) taken.push_back(e);
        std::sort(taken.begin(), taken.end());
        taken.erase(std::unique(taken.begin(), taken.end()), taken.end());
        for (const E* e : taken) {
            if (e->key.hi == kGroundId)
                o.cuts.push_back(make_ground_cut(res[e->a].res, H, W));
            else if (e->key.hi >= kLakeKeyBase)
                ++o.lake_joins;
            else
                o.cuts.push_back(make_pair_cut(res[e->a].res, res[e->b].res));
        }
        for (const E* e : taken) {
            // The ground's class keeps the ground's name, so open() can tell it.
            int keep = cl[e->a], gone = cl[e->b];
            if (keep == gone) continue;
            if (gone == cl[ground]) std::swap(keep, gone);
            charge[keep] += charge[gone];
            for (int& c : cl)
                if (c == gone) c = keep;
        }
    }
    for (int v = 0; v < ground; ++v)
        if (cl[v] == v && cl[v] != cl[ground]) o.cluster_charge.push_back(charge[v]);
    std::sort(o.cuts.begin(), o.cuts.end(), cut_order);
    return o;
}

using Case = testing::ResidueCase;

// Section 3.1, written again: the lakes x touches are those at its plaquette's corners, then, while
// fewer than two, the ground if a grounded lake lies at a corner of a plaquette one dual step away
// (up, down, left, right), reached by its first such step; ascending.
template <class At>
ClusterResidue touching_lakes(const Residue& x, At at, int64_t H, int64_t W) {
    auto lake = [&](int64_t r, int64_t c) { return r < 0 || c < 0 || r >= H || c >= W ? kNoLake : at(r, c); };
    ClusterResidue y;
    y.res = x;
    std::vector<int64_t> mine;
    for (int j = 0; j < 4; ++j)
        if (const int64_t l = lake(x.r + j / 2, x.c + j % 2); l != kNoLake && std::find(mine.begin(), mine.end(), l) == mine.end())
            mine.push_back(l);
    std::vector<std::pair<int64_t, LakeStep>> all;
    for (int64_t l : mine) all.push_back({l, kTouch});
    // The ground one step away, by the first step (up, down, left, right) whose plaquette touches it.
    const LakeStep steps[4] = {kStepUp, kStepDown, kStepLeft, kStepRight};
    const int dr[4] = {-1, 1, 0, 0}, dc[4] = {0, 0, -1, 1};
    bool grounded = std::find(mine.begin(), mine.end(), kGroundedLake) != mine.end();
    for (int s = 0; s < 4 && all.size() < 2 && !grounded; ++s)
        for (int j = 0; j < 4 && !grounded; ++j)
            if (lake(x.r + dr[s] + j / 2, x.c + dc[s] + j % 2) == kGroundedLake) {
                all.push_back({kGroundedLake, steps[s]});
                grounded = true;
            }
    all.resize(std::min<size_t>(all.size(), 2));
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < all.size(); ++k) y.lake[k] = all[k].first, y.step[k] = all[k].second;
    return y;
}

// The one-step cut of each lake one step away: from the residue's plaquette to the next one.
std::vector<Cut> step_cuts(const std::vector<ClusterResidue>& res) {
    std::vector<Cut> out;
    for (const ClusterResidue& x : res)
        for (int k = 0; k < 2; ++k) {
            if (x.lake[k] == kNoLake || x.step[k] == kTouch) continue;
            const int r = x.res.r + (x.step[k] == kStepUp ? -1 : x.step[k] == kStepDown ? 1 : 0);
            const int c = x.res.c + (x.step[k] == kStepLeft ? -1 : x.step[k] == kStepRight ? 1 : 0);
            out.push_back({x.res.id, x.lake[k] == kGroundedLake ? kGroundedLakeKey : kLakeKeyBase + x.lake[k], x.res.r, x.res.c, r, c,
                           kNotGround});
        }
    return out;
}

std::vector<Cut> joined(std::vector<Cut> a, const std::vector<Cut>& b) {
    a.insert(a.end(), b.begin(), b.end());
    std::sort(a.begin(), a.end(), cut_order);
    return a;
}

// What match_residues adds to the rule's cuts of one whole set: section 3.6's far reach (its
// own oracle is in tests/kernels/test_far_reach.cpp).
std::vector<Cut> with_far_reach(const std::vector<ClusterResidue>& res, std::vector<Cut> cuts, int64_t H, int64_t W,
                                int64_t R) {
    if (!has_long_ground_cut(cuts, H, W, R)) return cuts;
    FarTake ft = take_far_components(res, cuts, H, W, R);
    std::vector<Residue> targets = grounded_near(res, ft.grounded, ft.members, W, far_radius(R));
    ClusterStats st;
    reach_far(std::move(ft.members), std::move(targets), H, W, far_radius(R), cuts, st);
    std::sort(cuts.begin(), cuts.end(), cut_order);
    return cuts;
}

class ClusterOracle : public ::testing::TestWithParam<Case> {};

TEST_P(ClusterOracle, CutClustersEqualTheSerialRule) {
    const Case cs = GetParam();
    const auto res = testing::residue_case(cs);
    ASSERT_FALSE(res.empty());
    for (int64_t R : {int64_t{1}, int64_t{4}, int64_t{16}, int64_t{40}}) {
        const Oracle expect = serial_oracle(res, cs.H, cs.W, R);
        std::vector<Cut> got;
        ClusterStats st;
        cut_clusters(res, cs.H, cs.W, R, got, st);
        EXPECT_TRUE(std::is_sorted(got.begin(), got.end(), cut_order)) << "R " << R;
        ASSERT_EQ(got.size(), expect.cuts.size()) << "R " << R;
        for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expect.cuts[i]) << "cut " << i << " R " << R;
        EXPECT_EQ(st.lake_joins, expect.lake_joins) << "R " << R;
        EXPECT_EQ(st.pairs + st.ground_cuts, static_cast<int64_t>(got.size()));
        // Every cluster the oracle ends with is balanced or holds the ground.
        for (int64_t q : expect.cluster_charge) EXPECT_EQ(q, 0) << "R " << R;
    }
}

INSTANTIATE_TEST_SUITE_P(RandomFields, ClusterOracle,
                         ::testing::Values(Case{40, 50, 60, 1, false, 0}, Case{64, 64, 300, 2, true, 0},
                                           Case{100, 37, 200, 3, true, 20}, Case{128, 128, 400, 4, false, 10},
                                           Case{2, 300, 40, 5, false, 0}, Case{300, 2, 40, 6, true, 30},
                                           Case{200, 260, 500, 7, true, 25}, Case{90, 90, 350, 8, true, 60},
                                           // enough open clusters that rounds run on threads
                                           Case{180, 200, 3000, 9, true, 10}, Case{120, 150, 2600, 10, false, 5}));

// The rounds' searches and large joins run on threads: 1, 2 and 5 threads give the same cuts
// on a set with enough residues for several threaded rounds (section 3.3).
TEST(CutClusters, SameCutsForAnyThreadCount) {
    const auto res = with_lakes(random_residues(600, 700, 30000, 21, true), 121, 8);
    std::vector<Cut> ref;
    ClusterStats ref_st;
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    cut_clusters(res, 600, 700, 16, ref, ref_st);
    ASSERT_GT(ref.size(), 10000u);
    for (int t : {2, 5}) {
        omp_set_num_threads(t);
        std::vector<Cut> got;
        ClusterStats st;
        cut_clusters(res, 600, 700, 16, got, st);
        EXPECT_EQ(got, ref) << t << " threads";
        EXPECT_EQ(st.lake_joins, ref_st.lake_joins) << t << " threads";
    }
    omp_set_num_threads(saved);
}

// One rank: match_residues is the rule over all residues, whatever the lakes say.
TEST(Matching, OneRankIsTheSerialRule) {
    const int64_t H = 128, W = 128;
    const auto plain = random_residues(H, W, 400, 4, true);
    Comm self(MPI_COMM_SELF);
    RankGrid grid;
    grid.tiles = TileGrid(H, W, 16);
    // Lakes by position: a grounded band at rows 60-61, an inner lake at columns 90-91.
    const LakeView lakes{[](int64_t r, int64_t c) {
                             if (r == 60 || r == 61) return kGroundedLake;
                             return (c == 90 || c == 91) && r > 10 && r < 50 ? int64_t{10 * W + 90} : kNoLake;
                         },
                         [](int64_t, int64_t) { return false; }};
    std::vector<ClusterResidue> res;
    for (const Residue& x : plain) res.push_back(touching_lakes(x, lakes.at, H, W));
    const std::vector<Cut> steps = step_cuts(res);
    ASSERT_GE(steps.size(), 3u);  // residues one step from the grounded band
    const Oracle expect = serial_oracle(res, H, W, 16);
    MatchStats st;
    auto got = match_residues(plain, lakes, grid, 16, self, st);
    std::sort(got.begin(), got.end(), cut_order);  // the lake steps come after the rule's cuts on one rank
    EXPECT_EQ(got, joined(with_far_reach(res, expect.cuts, H, W, 16), steps));
    EXPECT_EQ(st.lake_joins, expect.lake_joins);
    EXPECT_GT(st.lake_joins, 0);
    EXPECT_EQ(st.residues, static_cast<int64_t>(plain.size()));
}

// A residue on a lake's edge is discharged there with no cut; the inner lake's net charge is
// balanced by a cut to the nearest residue outside.
TEST(Matching, LakesTakeChargeWithoutCuts) {
    const int64_t H = 64, W = 64, lake = 30 * W + 30;
    std::vector<ClusterResidue> res(3);
    res[0].res = {residue_id(30, 29, W, 0), 30, 29, +1}, res[0].lake[0] = lake;
    res[1].res = {residue_id(31, 33, W, 0), 31, 33, +1}, res[1].lake[0] = lake;
    res[2].res = {residue_id(31, 40, W, 0), 31, 40, -1};
    std::vector<Cut> cuts;
    ClusterStats st;
    cut_clusters(res, H, W, 16, cuts, st);
    // Both +1 go into the lake (weight 0); the lake's +2 takes the -1 by its nearest residue
    // (weight 7, from (31,33)), and the +1 left goes to ground by the cluster's nearest side:
    // (31,40) to the right side (23 steps) beats (30,29) to the left (30).
    EXPECT_EQ(st.lake_joins, 2);
    std::sort(cuts.begin(), cuts.end(), cut_order);
    ASSERT_EQ(cuts.size(), 2u);
    EXPECT_EQ(cuts[0], make_pair_cut(res[1].res, res[2].res));
    EXPECT_EQ(cuts[1], make_ground_cut(res[2].res, H, W));
    EXPECT_EQ(cuts[1].side, kRight);
}

// Enough residues that one rank decides its classes apart on threads: the same cuts as one
// serial call over all of them. Grounded lakes are rows r % 97 < 3 (a plaquette touches one
// when its row r or r + 1 is such a row).
TEST(Matching, ClassesOnThreadsGiveTheSerialCuts) {
    const int64_t H = 700, W = 650;
    const auto plain = random_residues(H, W, 9000, 11, true);
    ASSERT_GT(plain.size(), 8000u);
    auto lake_row = [](int64_t r) { return r % 97 < 3; };
    const LakeView lakes{[&](int64_t r, int64_t) { return lake_row(r) ? kGroundedLake : kNoLake; },
                         [](int64_t, int64_t) { return false; }};
    std::vector<ClusterResidue> res;
    for (const Residue& x : plain) res.push_back(touching_lakes(x, lakes.at, H, W));
    Comm self(MPI_COMM_SELF);
    RankGrid grid;
    grid.tiles = TileGrid(H, W, 64);
    for (int64_t R : {int64_t{4}, int64_t{16}}) {
        std::vector<Cut> expect;
        ClusterStats cs;
        cut_clusters(res, H, W, R, expect, cs);
        std::sort(expect.begin(), expect.end(), cut_order);
        MatchStats st;
        auto got = match_residues(plain, lakes, grid, R, self, st);
        std::sort(got.begin(), got.end(), cut_order);  // the lake steps come after the rule's cuts on one rank
        EXPECT_EQ(got, joined(with_far_reach(res, expect, H, W, R), step_cuts(res))) << "R " << R;
        EXPECT_EQ(st.lake_joins, cs.lake_joins);
        EXPECT_GT(cs.pairs, 1000);
        EXPECT_GT(cs.lake_joins, 100);
    }
}

TEST(Matching, GroundTieOrderIsTopBottomLeftRight) {
    EXPECT_EQ(ground_choice(2, 2, 6, 6).side, kTop);      // 3,3,3,3
    EXPECT_EQ(ground_choice(2, 1, 6, 6).side, kLeft);     // 3,3,2,4
    EXPECT_EQ(ground_choice(3, 3, 6, 6).side, kBottom);   // 4,2,4,2
    EXPECT_EQ(ground_choice(1, 4, 6, 6).side, kRight);    // 2,4,5,1
}

}  // namespace
}  // namespace tessera
