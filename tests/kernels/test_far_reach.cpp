// The far reach (docs/ARCHITECTURE.md section 3.6) against a brute-force oracle over the
// rule's cuts, and on hand-made scenes whose answer is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/far_reach.h"
#include "kernels/residue.h"
#include "partition/matching.h"
#include "support/random_residues.h"

namespace tessera {
namespace {

// Section 3.6 by brute force from the rule's cuts: components by pair cuts and shared inner
// lakes; every ground cut longer than R goes unless its component has more than kFarMembers
// residues; a component that held one, has no other way to the ground, a net charge and at
// most kFarMembers residues is a node; rounds where each open cluster looks at every member
// pair with every other node and every residue of a grounded component (within 4R) and at its
// members' image sides.
std::vector<Cut> far_oracle(const std::vector<ClusterResidue>& res, std::vector<Cut> cuts, int64_t H, int64_t W,
                            int64_t R) {
    const int n = static_cast<int>(res.size());
    std::map<int64_t, int> at;
    for (int i = 0; i < n; ++i) at[res[i].res.id] = i;
    std::vector<int> comp(static_cast<size_t>(n));
    std::iota(comp.begin(), comp.end(), 0);
    auto relabel = [&](int from, int to) {
        for (int& c : comp)
            if (c == from) c = to;
    };
    for (const Cut& c : cuts)
        if (c.id_b != kGroundId && comp[at[c.id_a]] != comp[at[c.id_b]]) relabel(comp[at[c.id_b]], comp[at[c.id_a]]);
    std::map<int64_t, int> lake_comp;
    for (int i = 0; i < n; ++i)
        for (int64_t l : res[i].lake)
            if (l >= 0) {
                if (lake_comp.count(l) && comp[lake_comp[l]] != comp[i]) relabel(comp[i], comp[lake_comp[l]]);
                lake_comp[l] = i;
            }
    std::map<int, int64_t> members;
    for (int i = 0; i < n; ++i) ++members[comp[i]];
    auto is_long = [&](const Cut& c) { return c.id_b == kGroundId && ground_choice(c.ra, c.ca, H, W).weight > R; };
    auto goes = [&](const Cut& c) { return is_long(c) && members[comp[at[c.id_a]]] <= kFarMembers; };
    std::map<int, int> charge;
    std::set<int> near, far;
    for (int i = 0; i < n; ++i) {
        charge[comp[i]] += res[i].res.sign;
        if (res[i].lake[0] == kGroundedLake || res[i].lake[1] == kGroundedLake) near.insert(comp[i]);
    }
    for (const Cut& c : cuts)
        if (c.id_b == kGroundId) (is_long(c) ? far : near).insert(comp[at[c.id_a]]);
    std::erase_if(cuts, goes);

    const int64_t FR = far_radius(R);
    std::map<int, int> cluster;  // far component -> its cluster (a far component's name)
    for (int c : far)
        if (!near.count(c) && charge[c] != 0 && members[c] <= kFarMembers) cluster[c] = c;
    std::map<int, int64_t> q;
    std::set<int> grounded;
    for (auto& [c, k] : cluster) q[c] = charge[c];
    for (;;) {
        struct Pick {
            EdgeKey key;
            int i = -1, j = -1;  // j = -1: the image side of i
            bool to_ground = false;
        };
        std::map<int, Pick> best;
        for (int i = 0; i < n; ++i) {
            if (!cluster.count(comp[i])) continue;
            const int ci = cluster[comp[i]];
            if (q[ci] == 0 || grounded.count(ci)) continue;
            auto take = [&](const Pick& p) {
                if (!best.count(ci) || p.key < best[ci].key) best[ci] = p;
            };
            const Residue& x = res[i].res;
            take({EdgeKey{ground_choice(x.r, x.c, H, W).weight, x.id, kGroundId}, i, -1, true});
            for (int j = 0; j < n; ++j) {
                const Residue& y = res[j].res;
                const int64_t w = std::abs(int64_t{x.r} - y.r) + std::abs(int64_t{x.c} - y.c);
                if (w > FR) continue;
                if (near.count(comp[j])) take({pair_key(w, x.id, y.id), i, j, true});
                if (cluster.count(comp[j]) && cluster[comp[j]] != ci) take({pair_key(w, x.id, y.id), i, j, false});
            }
        }
        if (best.empty()) break;
        std::map<EdgeKey, Pick> taken;  // keyed: an edge both ends took counts once
        for (auto& [c, p] : best) taken[p.key] = p;
        std::vector<int> to_ground;
        for (auto& [k, p] : taken) {
            const int ci = cluster[comp[p.i]];
            if (p.j < 0) {
                cuts.push_back(make_ground_cut(res[p.i].res, H, W));
            } else {
                cuts.push_back(make_pair_cut(res[p.i].res, res[p.j].res));
            }
            if (p.to_ground) {
                to_ground.push_back(comp[p.i]);
                continue;
            }
            const int cj = cluster[comp[p.j]];
            EXPECT_NE(ci, cj);
            q[ci] += q[cj];
            if (grounded.count(cj)) grounded.insert(ci);
            for (auto& [c, k] : cluster)
                if (k == cj) k = ci;
        }
        for (int c : to_ground) grounded.insert(cluster[c]);
    }
    std::sort(cuts.begin(), cuts.end(), cut_order);
    return cuts;
}

std::vector<Cut> rule_then_far(const std::vector<ClusterResidue>& res, int64_t H, int64_t W, int64_t R) {
    std::vector<Cut> cuts;
    ClusterStats st;
    cut_clusters(res, H, W, R, cuts, st);
    if (!has_long_ground_cut(cuts, H, W, R)) return cuts;
    FarTake ft = take_far_components(res, cuts, H, W, R);
    std::vector<Residue> targets = grounded_near(res, ft.grounded, ft.members, W, far_radius(R));
    reach_far(std::move(ft.members), std::move(targets), H, W, far_radius(R), cuts, st);
    std::sort(cuts.begin(), cuts.end(), cut_order);
    return cuts;
}

// Sparse residues on a large image leave many components far from the sides.
TEST(FarReach, EqualsTheBruteForceOracle) {
    int reached = 0;
    for (const auto& cs : {testing::ResidueCase{300, 320, 120, 31, false, 0}, testing::ResidueCase{400, 300, 200, 32, true, 10},
                           testing::ResidueCase{256, 256, 90, 33, false, 25}, testing::ResidueCase{500, 500, 400, 34, true, 5}}) {
        const auto res = testing::residue_case(cs);
        for (int64_t R : {int64_t{4}, int64_t{8}, int64_t{16}}) {
            std::vector<Cut> rule;
            ClusterStats st;
            cut_clusters(res, cs.H, cs.W, R, rule, st);
            const std::vector<Cut> expect = far_oracle(res, rule, cs.H, cs.W, R);
            EXPECT_EQ(rule_then_far(res, cs.H, cs.W, R), expect) << "seed " << cs.seed << " R " << R;
            reached += expect != rule;
        }
    }
    EXPECT_GE(reached, 6) << "the cases must exercise the far reach";
}

// A +1 and a -1 24 apart (L1), 100 from every side, R = 16: the rule cuts each to a side;
// the far reach joins them instead.
TEST(FarReach, TwoLoneChargesPairBeyondR) {
    const int64_t H = 300, W = 300;
    std::vector<ClusterResidue> res(2);
    res[0].res = {residue_id(140, 140, W, 0), 140, 140, +1};
    res[1].res = {residue_id(152, 152, W, 0), 152, 152, -1};
    std::vector<Cut> rule;
    ClusterStats st;
    cut_clusters(res, H, W, 16, rule, st);
    ASSERT_EQ(rule.size(), 2u);
    EXPECT_EQ(rule[0].id_b, kGroundId);
    const std::vector<Cut> got = rule_then_far(res, H, W, 16);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], make_pair_cut(res[0].res, res[1].res));
}

// A lone +1 40 from a residue whose pair reaches a grounded lake: it is cut to that residue
// (a way to the ground 40 long) rather than to the nearest side (140); a balanced pair
// nearer (30) is no way to the ground and is passed by.
TEST(FarReach, LoneChargeGroundsThroughAGroundedComponent) {
    const int64_t H = 300, W = 300, R = 16;
    std::vector<ClusterResidue> res(5);
    res[0].res = {residue_id(139, 150, W, 0), 139, 150, +1};  // lone
    res[1].res = {residue_id(139, 190, W, 0), 139, 190, -1};  // touches a grounded lake
    res[1].lake[0] = kGroundedLake;
    res[2].res = {residue_id(150, 168, W, 0), 150, 168, +1};  // a balanced pair 29 away
    res[3].res = {residue_id(150, 170, W, 0), 150, 170, -1};
    res[4].res = {residue_id(260, 260, W, 0), 260, 260, +1};  // grounds near its side (39 > R: long)
    std::sort(res.begin(), res.end(), [](const ClusterResidue& a, const ClusterResidue& b) { return a.res.id < b.res.id; });
    const std::vector<Cut> got = rule_then_far(res, H, W, R);
    auto has = [&](const Cut& c) { return std::find(got.begin(), got.end(), c) != got.end(); };
    const Residue lone{residue_id(139, 150, W, 0), 139, 150, +1}, shore{residue_id(139, 190, W, 0), 139, 190, -1};
    EXPECT_TRUE(has(make_pair_cut(lone, shore)));
    EXPECT_FALSE(has(make_ground_cut(lone, H, W)));
    const Residue corner{residue_id(260, 260, W, 0), 260, 260, +1};
    EXPECT_TRUE(has(make_ground_cut(corner, H, W))) << "nothing within 4R: the side, as before";
}

}  // namespace
}  // namespace tessera
