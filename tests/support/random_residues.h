// Random residue sets (and lakes) for the matching tests (CPU and GPU alike), sorted by id.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/residue.h"

namespace tessera::testing {

// Random charges on an H x W image: mostly +-1, some of magnitude 2-3, some on the border
// plaquettes; `clustered` puts half of them next to the previous one. Sorted by id.
inline std::vector<Residue> random_residues(int64_t H, int64_t W, int count, uint32_t seed, bool clustered) {
    std::mt19937 rng(seed);
    std::vector<Residue> res;
    std::set<std::pair<int64_t, int64_t>> used;
    std::uniform_int_distribution<int64_t> R(0, H - 2), C(0, W - 2);
    std::uniform_int_distribution<int> pct(0, 99);
    for (int k = 0; k < count; ++k) {
        int64_t r = R(rng), c = C(rng);
        const int roll = pct(rng);
        if (roll < 10) r = (roll % 2) ? 0 : H - 2;  // border rows
        if (roll >= 10 && roll < 20) c = (roll % 2) ? 0 : W - 2;
        if (clustered && !res.empty() && roll >= 20 && roll < 70) {  // a neighbour of the last one
            const Residue& p = res.back();
            r = std::clamp<int64_t>(p.r + (roll % 5) - 2, 0, H - 2);
            c = std::clamp<int64_t>(p.c + (roll % 3) - 1, 0, W - 2);
        }
        if (!used.insert({r, c}).second) continue;
        const int mag = (pct(rng) < 8) ? 2 + pct(rng) % 2 : 1;
        const int sign = pct(rng) < 50 ? 1 : -1;
        for (int s = 0; s < mag; ++s)
            res.push_back({residue_id(r, c, W, s), static_cast<int32_t>(r), static_cast<int32_t>(c), sign});
    }
    std::sort(res.begin(), res.end(), [](const Residue& a, const Residue& b) { return a.id < b.id; });
    return res;
}

// Random residues; some touch one of a few lakes (one of them grounded), a few touch two.
inline std::vector<ClusterResidue> with_lakes(const std::vector<Residue>& res, uint32_t seed, int lake_pct) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pct(0, 99), which(0, 3);
    const int64_t lakes[4] = {kGroundedLake, 1000, 5000, 123456};
    std::vector<ClusterResidue> out;
    for (const Residue& x : res) {
        ClusterResidue y;
        y.res = x;
        if (pct(rng) < lake_pct) {
            y.lake[0] = lakes[which(rng)];
            if (pct(rng) < 15) {
                y.lake[1] = lakes[which(rng)];
                if (y.lake[1] == y.lake[0]) y.lake[1] = kNoLake;
                else if (y.lake[1] < y.lake[0]) std::swap(y.lake[0], y.lake[1]);
            }
        }
        out.push_back(y);
    }
    return out;
}

// Many lakes: each residue touches one of `lakes` ids (a few grounded) with probability pct.
inline std::vector<ClusterResidue> with_many_lakes(const std::vector<Residue>& res, uint32_t seed, int pct, int lakes) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> roll(0, 99), which(0, lakes - 1);
    std::vector<ClusterResidue> out;
    for (const Residue& x : res) {
        ClusterResidue y;
        y.res = x;
        if (roll(rng) < pct) {
            const int l = which(rng);
            y.lake[0] = l % 17 == 0 ? kGroundedLake : 7 * l + 3;
        }
        out.push_back(y);
    }
    return out;
}

// A random residue set with lakes, as the rule's tests draw them (the host oracle, the serial
// steps, the device rule): residues (clustered or spread), then lakes over lake_pct % of them.
struct ResidueCase {
    int64_t H, W;
    int count;
    uint32_t seed;
    bool clustered;
    int lake_pct;
};
inline std::vector<ClusterResidue> residue_case(const ResidueCase& c) {
    return with_lakes(random_residues(c.H, c.W, c.count, c.seed, c.clustered), c.seed + 100, c.lake_pct);
}
// The cases the serial steps and the device rule both check against the host rule.
inline const std::vector<ResidueCase> kRuleCases{{40, 50, 60, 1, false, 0},    {64, 64, 300, 2, true, 0},
                                                 {64, 64, 300, 3, true, 20},   {200, 180, 3000, 4, true, 10},
                                                 {300, 300, 500, 5, false, 30}, {128, 128, 4000, 6, true, 5}};

// A field of +- pairs (one every `step` >= 3 plaquettes each way, partners side by side, random
// jitter leaving other residues at least 2 away, the sign order random) and one extra +1 charge
// in the middle; the border is farther than any neighbour: the rule's long serial tail (one
// open cluster takes one closed pair a round, all of them). With
// lake_pct, that share of the residues touch one of many inner lakes. Sorted by id.
inline std::vector<ClusterResidue> pair_field_with_one_charge(int64_t H, int64_t W, int64_t step, uint32_t seed,
                                                               int lake_pct) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pct(0, 99), jitter(0, static_cast<int>(step) - 3);  // gaps of 2 or more
    std::vector<Residue> res;
    const int64_t mr = H / 2, mc = W / 2;
    for (int64_t r = 6; r + step < H - 6; r += step)  // the border farther than any neighbour
        for (int64_t c = 6; c + step < W - 6; c += step) {
            const int64_t rr = r + jitter(rng), cc = c + jitter(rng);
            if (rr == mr && (cc == mc || cc + 1 == mc)) continue;
            const int sign = pct(rng) < 50 ? 1 : -1;
            res.push_back({residue_id(rr, cc, W, 0), static_cast<int32_t>(rr), static_cast<int32_t>(cc), sign});
            res.push_back({residue_id(rr, cc + 1, W, 0), static_cast<int32_t>(rr), static_cast<int32_t>(cc + 1), -sign});
        }
    res.push_back({residue_id(mr, mc, W, 0), static_cast<int32_t>(mr), static_cast<int32_t>(mc), 1});
    std::sort(res.begin(), res.end(), [](const Residue& a, const Residue& b) { return a.id < b.id; });
    res.erase(std::unique(res.begin(), res.end(), [](const Residue& a, const Residue& b) { return a.id == b.id; }),
              res.end());
    if (lake_pct > 0) return with_many_lakes(res, seed + 1, lake_pct, 40);
    std::vector<ClusterResidue> out;
    for (const Residue& x : res) out.push_back(ClusterResidue{x, {kNoLake, kNoLake}});
    return out;
}

}  // namespace tessera::testing
