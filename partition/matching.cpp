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

constexpr int64_t kPhaseACell = 8;  // ~25 residues a cell in pure noise, few rings to D elsewhere
constexpr int32_t kPartnerUnknown = -3;  // a halo residue's partner that this rank does not hold

// What owners tell halo holders about a residue each round.
struct ResidueState {
    int64_t partner_id;  // kGroundId, -1 none, else the partner's id
    int32_t matched;
    int32_t pad = 0;
};

bool by_cut(const Cut& a, const Cut& b) { return a.id_a != b.id_a ? a.id_a < b.id_a : a.id_b < b.id_b; }

}  // namespace

std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t D, Comm& comm,
                                MatchStats& st) {
    HostCandidateSearch search;
    return match_residues(owned, grid, D, comm, st, search);
}

std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t D, Comm& comm,
                                MatchStats& st, CandidateSearch& search) {
    const int64_t H = grid.tiles.H, W = grid.tiles.W;
    const int self = comm.rank(), P = comm.size();
    const Window own = grid.own(self);
    const int64_t n_own = static_cast<int64_t>(owned.size());
    st = MatchStats{};
    st.residues = comm.sum(n_own);

    // Halo: each owned residue goes to the ranks whose region lies within D + 1 of it
    // (a cut of length <= D crossing their edges ends there, and their searches reach it).
    std::vector<std::vector<int32_t>> route(static_cast<size_t>(P));
    {
        std::vector<int> dst;
        for (int32_t i = 0; i < n_own; ++i) {
            const Residue& x = owned[static_cast<size_t>(i)];
            grid.ranks_meeting(x.r - D - 1, x.r + D + 1, x.c - D - 1, x.c + D + 1, self, dst);
            for (int d : dst) route[static_cast<size_t>(d)].push_back(i);
        }
    }
    std::vector<std::vector<Residue>> send(static_cast<size_t>(P));
    for (int d = 0; d < P; ++d)
        for (int32_t i : route[static_cast<size_t>(d)]) send[static_cast<size_t>(d)].push_back(owned[static_cast<size_t>(i)]);
    std::vector<int> halo_from;  // residues received from each rank: the state messages' sizes
    const std::vector<Residue> halo = comm.alltoallv(send, &halo_from);
    send = {};

    // Local set: owned then halo, sorted by id; local index of every owned and received record.
    std::vector<Residue> res(owned.begin(), owned.end());
    res.insert(res.end(), halo.begin(), halo.end());
    std::vector<int32_t> order(res.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return res[x].id < res[y].id; });
    std::vector<int32_t> local_of(res.size());
    {
        std::vector<Residue> sorted(res.size());
        for (size_t k = 0; k < order.size(); ++k) sorted[k] = res[order[k]], local_of[order[k]] = static_cast<int32_t>(k);
        res.swap(sorted);
    }
    const int32_t n = static_cast<int32_t>(res.size());
    std::vector<uint8_t> is_owned(res.size(), 0);
    std::vector<int32_t> owned_local(static_cast<size_t>(n_own));
    for (int32_t i = 0; i < n_own; ++i) owned_local[i] = local_of[i], is_owned[local_of[i]] = 1;
    auto id_to_local = [&](int64_t id) -> int32_t {
        auto it = std::lower_bound(res.begin(), res.end(), id, [](const Residue& x, int64_t v) { return x.id < v; });
        return (it != res.end() && it->id == id) ? static_cast<int32_t>(it - res.begin()) : kPartnerUnknown;
    };

    {
        const int64_t row0 = std::max<int64_t>(0, own.row0 - D - 1), col0 = std::max<int64_t>(0, own.col0 - D - 1);
        const Window area{row0, col0, std::min(H, own.row0 + own.rows + D + 1) - row0,
                          std::min(W, own.col0 + own.cols + D + 1) - col0};
        search.bind(res, area, kPhaseACell, D, H, W);
    }

    std::vector<uint8_t> matched(res.size(), 0), fresh(res.size(), 1);
    std::vector<Candidate> cand(res.size());
    std::vector<int32_t> which;
    std::vector<Candidate> found;
    std::vector<Cut> cuts;
    for (;;) {
        // (a) Owned free residues whose candidate is unknown or was taken: search within D.
        //     A stale view of a halo residue can only point at a taken one, which (c)
        //     then refuses; it never yields a wrong acceptance (section 3).
        which.clear();
        for (int64_t k = 0; k < n_own; ++k) {
            const int32_t i = owned_local[static_cast<size_t>(k)];
            if (matched[i]) continue;
            const Candidate& c = cand[i];
            if (fresh[i] || (c.partner >= 0 && matched[c.partner])) which.push_back(i);
        }
        found.resize(which.size());
        search.search(which, matched.data(), found.data());
        for (size_t k = 0; k < which.size(); ++k) {
            cand[which[k]] = found[k];
            fresh[which[k]] = 0;
        }
        int64_t active = 0;
        for (int64_t k = 0; k < n_own; ++k) {
            const int32_t i = owned_local[static_cast<size_t>(k)];
            if (!matched[i]) active += cand[i].partner != kPartnerNone;
        }
        if (comm.sum(active) == 0) break;
        ++st.rounds;

        // (b) Owners send their border residues' candidates and matched flags; the
        //     exchange travels while (c) decides what needs no halo state.
        std::vector<std::vector<ResidueState>> out(static_cast<size_t>(P));
        for (int d = 0; d < P; ++d)
            for (int32_t i : route[static_cast<size_t>(d)]) {
                const int32_t l = local_of[i];
                const int32_t p = cand[l].partner;
                out[static_cast<size_t>(d)].push_back(
                    {p == kPartnerGround ? kGroundId : (p >= 0 ? res[p].id : -1), matched[l]});
            }
        auto pending = comm.ialltoallv(out, halo_from);

        // (c) Accept locally-dominant edges (mutual pointers, pointers at the ground) among
        //     every residue this rank holds, each edge once, at its lower-id end. Decisions
        //     read the round's state only; marking waits until all are made.
        std::vector<Cut> accepted;
        auto decide = [&](int32_t i, bool halo_pairs) {
            if (matched[i]) return;
            const int32_t j = cand[i].partner;
            if (j == kPartnerGround) {
                if (!halo_pairs || !is_owned[i]) accepted.push_back(make_ground_cut(res[i], H, W));
            } else if (j >= 0 && (halo_pairs ? !(is_owned[i] && is_owned[j]) : is_owned[j]) && !matched[j] &&
                       cand[j].partner == i && res[i].id < res[j].id) {
                accepted.push_back(make_pair_cut(res[i], res[j]));
            }
        };
        for (int32_t i : owned_local) decide(i, false);  // owned with the ground or an owned partner
        const std::vector<ResidueState>& in = pending->wait();
        for (size_t k = 0; k < in.size(); ++k) {
            const int32_t l = local_of[static_cast<size_t>(n_own) + k];
            matched[l] = static_cast<uint8_t>(in[k].matched);
            cand[l].partner = in[k].partner_id == kGroundId ? kPartnerGround
                              : in[k].partner_id < 0      ? kPartnerNone
                                                          : id_to_local(in[k].partner_id);
        }
        for (int32_t i = 0; i < n; ++i) decide(i, true);  // everything touching a halo residue
        for (const Cut& c : accepted) {
            const int32_t a = id_to_local(c.id_a);
            matched[a] = 1;
            const bool pair = c.side == kNotGround;
            if (pair) matched[id_to_local(c.id_b)] = 1;
            if (is_owned[a]) (pair ? st.phase_a_pairs : st.phase_a_ground)++;
            cuts.push_back(c);
        }
    }
    st.phase_a_pairs = comm.sum(st.phase_a_pairs);
    st.phase_a_ground = comm.sum(st.phase_a_ground);

    // Phase B: every rank's leftovers, the same greedy everywhere.
    std::vector<Residue> mine;
    for (int32_t l : owned_local)
        if (!matched[l]) mine.push_back(res[l]);
    std::vector<Residue> left = comm.allgatherv(mine);
    std::sort(left.begin(), left.end(), [](const Residue& x, const Residue& y) { return x.id < y.id; });
    st.leftovers = static_cast<int64_t>(left.size());
    std::vector<int32_t> all(left.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
    greedy_leftovers(left, all, H, W, cuts, st);

    std::sort(cuts.begin(), cuts.end(), by_cut);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
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
