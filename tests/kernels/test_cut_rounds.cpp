// The rule's data-parallel rounds (kernels/cut_rounds.h, the CUDA backend's form) run as a
// serial loop on the host against the host rule (kernels/cut_clusters.h, itself checked against
// the plain oracle in tests/partition/test_matching.cpp): the same cuts in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/cut_rounds_input.h"
#include "app/synth.h"
#include "support/random_residues.h"
#include "support/scene_clusters.h"

namespace tessera {
namespace {

using testing::random_residues;
using testing::with_lakes;
using testing::with_many_lakes;

// The default tuning, and small ones that park clusters of a few members, keep hot sets of
// a few keys and wake most closed roots by a scan (every path of the parked cluster).
// Cold margins: none (the default: every member listed every round), 0 and 1 (most members cold,
// their pool scanned often), 8 (from round 1 or 3: these sets' runs are shorter than 256 rounds).
const RoundTuning kTunings[] = {RoundTuning{},
                                RoundTuning{8, 4, 16, 2, 8, 1},
                                RoundTuning{64, 32, 128, 16, 0, 1},
                                RoundTuning{2, 1, 2, 0, 8, 3},
                                RoundTuning{8, 4, 16, 2, -1},
                                RoundTuning{16384, 1024, 8192, 4096, 1, 1},
                                RoundTuning{16384, 1024, 8192, 4096, 0, 1}};

// linked_one: the fewest rounds run with one cluster open (link_one) over the tunings;
// linked_pair: the fewest of them taking link_pair's path.
void expect_same_as_host(const std::vector<ClusterResidue>& res, int64_t H, int64_t W, int64_t R,
                         int32_t* linked_one = nullptr, int32_t* linked_pair = nullptr) {
    if (linked_one) *linked_one = INT32_MAX;
    if (linked_pair) *linked_pair = INT32_MAX;
    std::vector<Cut> expect;
    ClusterStats st;
    cut_clusters(res, H, W, R, expect, st);
    RoundInput in;
    ASSERT_TRUE(make_round_input(res, H, W, R, in));
    for (const RoundTuning& tune : kTunings) for (uint64_t shuffle : {uint64_t{0}, uint64_t{7}}) {
        SCOPED_TRACE("big_min " + std::to_string(tune.big_min) + " margin " + std::to_string(tune.cold_margin) + " R " +
                     std::to_string(R) + " shuffle " + std::to_string(shuffle));
        std::vector<uint64_t> codes;
        RoundCounts counts;
        run_rounds_serial(in, codes, counts, tune, shuffle);
        std::vector<Cut> got;
        cuts_from_codes(res, codes, H, W, got);
        ASSERT_EQ(got.size(), expect.size());
        for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expect[i]) << "cut " << i;
        EXPECT_EQ(counts.ground_cuts, st.ground_cuts);
        EXPECT_EQ(counts.cuts - counts.ground_cuts, st.pairs);
        EXPECT_EQ(counts.lake_joins, st.lake_joins);
        if (linked_one) *linked_one = std::min(*linked_one, counts.linked_one);
        if (linked_pair) *linked_pair = std::min(*linked_pair, counts.linked_pair);
    }
}

TEST(CutRoundsSerial, SameCutsAsTheHostRule) {
    for (const testing::ResidueCase& cs : testing::kRuleCases) {
        const auto res = testing::residue_case(cs);
        for (int64_t R : {int64_t{1}, int64_t{4}, int64_t{16}, int64_t{40}}) expect_same_as_host(res, cs.H, cs.W, R);
    }
}

TEST(CutRoundsSerial, SameCutsWithManyLakesAndDenseFields) {
    for (uint32_t seed : {11u, 12u, 13u}) {
        const auto res = with_many_lakes(random_residues(400, 500, 40000, seed, true), seed + 7, 15, 300);
        for (int64_t R : {int64_t{2}, int64_t{16}}) expect_same_as_host(res, 400, 500, R);
    }
}

TEST(CutRoundsSerial, SameCutsOnTheSceneResidues) {
    int with_residues = 0;
    for (const std::string& name : synth_case_names()) {
        const SynthScene s = make_scene(name, 512, 512, 3);
        const auto res = testing::scene_cluster_residues(s);
        if (res.empty()) continue;  // a smooth scene
        ++with_residues;
        SCOPED_TRACE(name);
        expect_same_as_host(res, s.rows, s.cols, 16);
    }
    EXPECT_GE(with_residues, 3);
}

// A long serial tail: one charge in the middle of a field of +- pairs wades through them,
// one closed pair a round, towards the border (with and without lakes on the way).
TEST(CutRoundsSerial, SameCutsOnALongTail) {
    for (int lake_pct : {0, 3}) {
        const auto res = testing::pair_field_with_one_charge(160, 200, 4, 21u + static_cast<uint32_t>(lake_pct), lake_pct);
        for (int64_t R : {int64_t{3}, int64_t{16}}) {
            // Rounds with one cluster open: the fused pick..wake (link_one) runs, every tuning.
            int32_t linked_one = 0, linked_pair = 0;
            expect_same_as_host(res, 160, 200, R, &linked_one, &linked_pair);
            EXPECT_GT(linked_one, 0);
            EXPECT_GT(linked_pair, 0);
            std::printf("long tail, %d%% lakes, R %d: %d rounds in link_one, %d in link_pair (fewest of the tunings)\n",
                        lake_pct, static_cast<int>(R), linked_one, linked_pair);
        }
    }
}

// Seams of a 2 x 2 mosaic of one topography scene (as the NISAR-size benchmark's): long tails of
// many open clusters, whose members mostly go cold. Same cuts with and without the pool, every
// path of it taken, and far fewer member searches than with every member listed.
TEST(CutRoundsSerial, ColdMembersWaitInThePool) {
    const SynthScene base = make_scene("topo", 1024, 1024, 3);
    SynthScene m;
    m.name = "topo mosaic", m.rows = 2 * base.rows, m.cols = 2 * base.cols;
    for (auto [from, to] : {std::pair{&base.wrapped, &m.wrapped}, std::pair{&base.coherence, &m.coherence}}) {
        to->resize(static_cast<size_t>(m.rows * m.cols));
        for (int64_t r = 0; r < m.rows; ++r)
            for (int64_t c = 0; c < m.cols; ++c)
                (*to)[static_cast<size_t>(r * m.cols + c)] = (*from)[static_cast<size_t>((r % base.rows) * base.cols + c % base.cols)];
    }
    const auto res = testing::scene_cluster_residues(m);
    expect_same_as_host(res, m.rows, m.cols, 16);
    RoundInput in;
    ASSERT_TRUE(make_round_input(res, m.rows, m.cols, 16, in));
    RoundTuning listed, pooled;
    listed.cold_margin = -1;
    pooled.cold_margin = 8, pooled.cold_from = 1;  // 140 rounds
    std::vector<uint64_t> a, b;
    RoundCounts ca, cb;
    run_rounds_serial(in, a, ca, listed);
    run_rounds_serial(in, b, cb, pooled);
    EXPECT_EQ(a, b);
    EXPECT_EQ(ca.round, cb.round);
    EXPECT_EQ(ca.cfulls + ca.cmoves, 0);
    EXPECT_GT(cb.cfulls, 0);
    EXPECT_GT(cb.cmoves, 0);
    EXPECT_LT(cb.searched + cb.cold_scanned, ca.searched / 2);
    std::printf("mosaic seams: %d rounds; searched %lld listed, %lld + %lld pool entries scanned pooled (%d + %d scans)\n",
                ca.round, static_cast<long long>(ca.searched), static_cast<long long>(cb.searched),
                static_cast<long long>(cb.cold_scanned), cb.cfulls, cb.cmoves);
}

// The rounds' input on threads (make_round_input from 65 536 residues): each residue's lake nodes
// and each lake's list, checked against a plain scan of the residues' lake ids.
TEST(CutRoundsSerial, RoundInputListsEachLakesResiduesAscending) {
    const int64_t H = 1200, W = 1100;
    std::vector<ClusterResidue> res = with_many_lakes(random_residues(H, W, 150000, 41, true), 42, 70, 5000);
    for (size_t i = 0; i < res.size(); i += 7)  // a second lake for some (ids ascending, as the matching gives)
        if (res[i].lake[0] >= 0 && res[i].lake[0] + 2 < 7 * 5000) res[i].lake[1] = res[i].lake[0] + 2;
    ASSERT_GE(res.size(), size_t{65536});
    RoundInput in;
    ASSERT_TRUE(make_round_input(res, H, W, 16, in, /*bitmap=*/false));
    std::vector<int64_t> ids;  // the lakes' ids, grounded left out
    for (const ClusterResidue& x : res)
        for (const int64_t l : x.lake)
            if (l >= 0) ids.push_back(l);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    ASSERT_EQ(in.L, static_cast<int32_t>(ids.size()));
    ASSERT_GT(in.L, 1000);
    std::vector<std::vector<int32_t>> lists(ids.size());
    for (size_t i = 0; i < res.size(); ++i)
        for (int s = 0; s < 2; ++s) {
            const int64_t l = res[i].lake[static_cast<size_t>(s)];
            const bool none = l == kNoLake || (s == 1 && l == res[i].lake[0]);
            const int32_t node = none ? -1
                                 : l == kGroundedLake
                                     ? in.n + in.L
                                     : in.n + static_cast<int32_t>(std::lower_bound(ids.begin(), ids.end(), l) - ids.begin());
            ASSERT_EQ(in.lake_node[2 * i + static_cast<size_t>(s)], node) << "residue " << i << " side " << s;
            if (node >= in.n && node < in.n + in.L) lists[static_cast<size_t>(node - in.n)].push_back(static_cast<int32_t>(i));
        }
    ASSERT_EQ(in.adj_start.size(), ids.size() + 1);
    ASSERT_EQ(in.adj_start.front(), 0);
    for (size_t l = 0; l < lists.size(); ++l) {
        const std::vector<int32_t> got(in.adj.begin() + in.adj_start[l], in.adj.begin() + in.adj_start[l + 1]);
        ASSERT_EQ(got, lists[l]) << "lake " << l;
    }
    ASSERT_EQ(static_cast<size_t>(in.adj_start.back()), in.adj.size());
}

TEST(CutRoundsSerial, KeyLayoutFitsOrRefuses) {
    RankKeys k;
    EXPECT_FALSE(RankKeys::fit(int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 30, k));  // 20 + 22 + 31 bits
    EXPECT_TRUE(RankKeys::fit(int64_t{1} << 20, int64_t{1} << 20, 8192, k));
    EXPECT_EQ(k.w(k.pack(8192, 5, 7)), 8192);
    EXPECT_EQ(k.lo(k.pack(8192, 5, 7)), 5);
    EXPECT_EQ(k.hi(k.pack(8192, 5, 7)), 7);
}

}  // namespace
}  // namespace tessera
