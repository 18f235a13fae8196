#include "partition/matching.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "kernels/residue_grid.h"

namespace tessera {

Cut make_pair_cut(const Residue& a, const Residue& b) {
    const Residue& lo = a.id < b.id ? a : b;
    const Residue& hi = a.id < b.id ? b : a;
    return {lo.id, hi.id, lo.r, lo.c, hi.r, hi.c, kNotGround};
}

Cut make_ground_cut(const Residue& a, int64_t H, int64_t W) {
    return {a.id, kGroundId, a.r, a.c, a.r, a.c, ground_choice(a.r, a.c, H, W).side};
}

namespace {
constexpr int64_t kPhaseACell = 16;
}

std::vector<Cut> match_residues(std::span<const Residue> res, const TileGrid& grid, int64_t D,
                                MatchStats& st) {
    const int64_t n = static_cast<int64_t>(res.size());
    st.residues = n;
    std::vector<Cut> cuts;
    std::vector<uint8_t> matched(static_cast<size_t>(n), 0);
    std::vector<Candidate> cand(static_cast<size_t>(n));

    // Owned residues per tile (the tile holding the plaquette's top-left pixel).
    const int64_t T = grid.count();
    std::vector<std::vector<int32_t>> active(static_cast<size_t>(T));
    for (int32_t i = 0; i < n; ++i) active[static_cast<size_t>(grid.tile_of(res[i].r, res[i].c))].push_back(i);

    ResidueGrid bins;
    bins.build(res, {}, Window{0, 0, grid.H, grid.W}, kPhaseACell);

    // Round 0: every residue's best candidate within D. A residue keeps its candidate
    // while that partner stays free (free sets only shrink), so later rounds recompute
    // only the residues whose partner was taken.
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) {
        auto& act = active[static_cast<size_t>(t)];
        for (int32_t i : act) cand[static_cast<size_t>(i)] = best_candidate(bins, res, matched.data(), i, D, grid.H, grid.W);
        std::erase_if(act, [&](int32_t i) { return cand[static_cast<size_t>(i)].partner == kPartnerNone; });
    }

    std::vector<std::vector<Cut>> accepted(static_cast<size_t>(T));
    for (;;) {
        ++st.rounds;
        int64_t changed = 0;
        // Accept locally-dominant edges: mutual pointers, and pointers at the ground.
#pragma omp parallel for schedule(dynamic) reduction(+ : changed)
        for (int64_t t = 0; t < T; ++t) {
            auto& acc = accepted[static_cast<size_t>(t)];
            acc.clear();
            for (int32_t i : active[static_cast<size_t>(t)]) {
                const int32_t j = cand[static_cast<size_t>(i)].partner;
                if (j == kPartnerGround)
                    acc.push_back(make_ground_cut(res[i], grid.H, grid.W));
                else if (cand[static_cast<size_t>(j)].partner == i && res[i].id < res[j].id)
                    acc.push_back(make_pair_cut(res[i], res[j]));
            }
            changed += static_cast<int64_t>(acc.size());
        }
        if (changed == 0) break;
        for (const auto& acc : accepted)
            for (const Cut& c : acc) {
                cuts.push_back(c);
                (c.side == kNotGround ? st.phase_a_pairs : st.phase_a_ground)++;
            }
        // Mark after the scan so every tile saw the same state (one exchange per round).
        auto index_of = [&](int64_t id) {
            return std::lower_bound(res.begin(), res.end(), id, [](const Residue& x, int64_t v) { return x.id < v; }) -
                   res.begin();
        };
#pragma omp parallel for schedule(dynamic)
        for (int64_t t = 0; t < T; ++t)
            for (const Cut& c : accepted[static_cast<size_t>(t)]) {
                matched[static_cast<size_t>(index_of(c.id_a))] = 1;
                if (c.side == kNotGround) matched[static_cast<size_t>(index_of(c.id_b))] = 1;
            }
#pragma omp parallel for schedule(dynamic)
        for (int64_t t = 0; t < T; ++t) {
            auto& act = active[static_cast<size_t>(t)];
            std::erase_if(act, [&](int32_t i) {
                if (matched[static_cast<size_t>(i)]) return true;
                Candidate& c = cand[static_cast<size_t>(i)];
                if (c.partner >= 0 && matched[static_cast<size_t>(c.partner)])
                    c = best_candidate(bins, res, matched.data(), i, D, grid.H, grid.W);
                return c.partner == kPartnerNone;
            });
        }
    }

    std::vector<int32_t> left;
    for (int32_t i = 0; i < n; ++i)
        if (!matched[static_cast<size_t>(i)]) left.push_back(i);
    st.leftovers = static_cast<int64_t>(left.size());
    greedy_leftovers(res, left, grid.H, grid.W, cuts, st);

    std::sort(cuts.begin(), cuts.end(),
              [](const Cut& a, const Cut& b) { return a.id_a != b.id_a ? a.id_a < b.id_a : a.id_b < b.id_b; });
    return cuts;
}

void greedy_leftovers(std::span<const Residue> res, std::span<const int32_t> which, int64_t H, int64_t W,
                      std::vector<Cut>& out, MatchStats& st) {
    if (which.empty()) return;
    // Cells sized for about two leftovers each.
    const double area = static_cast<double>(H) * static_cast<double>(W);
    const int64_t cell = std::max<int64_t>(8, static_cast<int64_t>(std::sqrt(2.0 * area / static_cast<double>(which.size()))));
    ResidueGrid bins;
    bins.build(res, which, Window{0, 0, H, W}, cell);
    // Only leftovers are in the grid, so every other residue can be treated as taken.
    std::vector<uint8_t> matched(res.size(), 0);

    struct Entry {
        EdgeKey key;
        int32_t i, partner;
        bool operator>(const Entry& o) const { return o.key < key; }
    };
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> pq;
    for (int32_t i : which) {
        Candidate c = best_candidate(bins, res, matched.data(), i, kNoWeight, H, W);
        pq.push({c.key, i, c.partner});
    }
    // A queued key is never above its residue's true best, so the first valid pop is the
    // global minimum edge: this is the serial greedy over the leftovers.
    while (!pq.empty()) {
        Entry e = pq.top();
        pq.pop();
        if (matched[static_cast<size_t>(e.i)]) continue;
        if (e.partner == kPartnerGround) {
            matched[static_cast<size_t>(e.i)] = 1;
            out.push_back(make_ground_cut(res[e.i], H, W));
            ++st.phase_b_ground;
        } else if (matched[static_cast<size_t>(e.partner)]) {
            Candidate c = best_candidate(bins, res, matched.data(), e.i, kNoWeight, H, W);
            pq.push({c.key, e.i, c.partner});
        } else {
            matched[static_cast<size_t>(e.i)] = matched[static_cast<size_t>(e.partner)] = 1;
            out.push_back(make_pair_cut(res[e.i], res[e.partner]));
            ++st.phase_b_pairs;
        }
    }
}

}  // namespace tessera
