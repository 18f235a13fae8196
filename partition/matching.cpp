#include "partition/matching.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <queue>

#include "kernels/phase_a.h"
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

// What owners tell halo holders about a residue each round.
struct ResidueState {
    int64_t partner_id;  // kGroundId, -1 none, else the partner's id
    int32_t matched;
    int32_t pad = 0;
};

bool by_cut(const Cut& a, const Cut& b) { return a.id_a != b.id_a ? a.id_a < b.id_a : a.id_b < b.id_b; }

// TESSERA_TRACE=1: the matching's steps in milliseconds on stderr (profiling the backends).
class StepTrace {
public:
    StepTrace() : on_(std::getenv("TESSERA_TRACE") != nullptr) {}
    void operator()(const char* step) {
        if (!on_) return;
        const auto now = std::chrono::steady_clock::now();
        std::fprintf(stderr, "tessera: matching/%-10s %8.3f ms\n", step,
                     std::chrono::duration<double, std::milli>(now - last_).count());
        last_ = now;
    }

private:
    bool on_;
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t D, Comm& comm,
                                MatchStats& st) {
    HostPhaseARounds rounds;
    return match_residues(owned, grid, D, comm, st, rounds);
}

std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t D, Comm& comm,
                                MatchStats& st, PhaseARounds& rounds) {
    const int64_t H = grid.tiles.H, W = grid.tiles.W;
    const int self = comm.rank(), P = comm.size();
    const Window own = grid.own(self);
    const int64_t n_own = static_cast<int64_t>(owned.size());
    StepTrace trace;
    st = MatchStats{};
    st.residues = comm.sum(n_own);

    // Halo: each owned residue goes to the ranks whose region lies within D + 1 of it
    // (a cut of length <= D crossing their edges ends there, and their searches reach it).
    std::vector<std::vector<int32_t>> route(static_cast<size_t>(P));
    if (P > 1) {
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
    trace("exchange");

    // Local set: owned then halo, sorted by id; local index of every owned and received record
    // (owned alone are already sorted: no permutation).
    std::vector<Residue> res(owned.begin(), owned.end());
    std::vector<int32_t> local_of(owned.size() + halo.size());
    for (size_t i = 0; i < local_of.size(); ++i) local_of[i] = static_cast<int32_t>(i);
    if (!halo.empty()) {
        res.insert(res.end(), halo.begin(), halo.end());
        std::vector<int32_t> order(res.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
        std::sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return res[x].id < res[y].id; });
        std::vector<Residue> sorted(res.size());
        for (size_t k = 0; k < order.size(); ++k) sorted[k] = res[order[k]], local_of[order[k]] = static_cast<int32_t>(k);
        res.swap(sorted);
    }
    const int32_t n = static_cast<int32_t>(res.size());
    std::vector<uint8_t> is_owned(res.size(), 0);
    for (int32_t i = 0; i < n_own; ++i) is_owned[local_of[i]] = 1;
    auto id_to_local = [&](int64_t id) -> int32_t {
        auto it = std::lower_bound(res.begin(), res.end(), id, [](const Residue& x, int64_t v) { return x.id < v; });
        return (it != res.end() && it->id == id) ? static_cast<int32_t>(it - res.begin()) : kPartnerUnknown;
    };
    {
        const int64_t row0 = std::max<int64_t>(0, own.row0 - D - 1), col0 = std::max<int64_t>(0, own.col0 - D - 1);
        const Window area{row0, col0, std::min(H, own.row0 + own.rows + D + 1) - row0,
                          std::min(W, own.col0 + own.cols + D + 1) - col0};
        trace("halo");
        rounds.bind(res, is_owned, area, kPhaseACell, D, H, W);
        trace("bind");
    }

    // The border residues' locals in message order, and the halo residues' in arrival order.
    std::vector<int32_t> route_locals, halo_locals(halo.size());
    for (int d = 0; d < P; ++d)
        for (int32_t i : route[static_cast<size_t>(d)]) route_locals.push_back(local_of[i]);
    for (size_t k = 0; k < halo.size(); ++k) halo_locals[k] = local_of[static_cast<size_t>(n_own) + k];
    std::vector<int32_t> partner(std::max(route_locals.size(), halo_locals.size()));
    std::vector<uint8_t> flag(partner.size());
    for (;;) {
        // (a) Owned free residues whose candidate is unknown or was taken search within D.
        //     A stale view of a halo residue can only point at a taken one, which (c) then
        //     refuses; it never yields a wrong acceptance (section 3).
        if (comm.sum(rounds.search()) == 0) break;
        ++st.rounds;

        // (b) Owners send their border residues' candidates and matched flags; the exchange
        //     travels while (c) decides what needs no halo state.
        std::vector<std::vector<ResidueState>> out(static_cast<size_t>(P));
        if (!route_locals.empty()) {
            rounds.export_states(route_locals, partner.data(), flag.data());
            size_t k = 0;
            for (int d = 0; d < P; ++d)
                for (size_t e = 0; e < route[static_cast<size_t>(d)].size(); ++e, ++k) {
                    const int32_t p = partner[k];
                    out[static_cast<size_t>(d)].push_back(
                        {p == kPartnerGround ? kGroundId : (p >= 0 ? res[p].id : -1), flag[k]});
                }
        }
        auto pending = comm.ialltoallv(out, halo_from);

        // (c) Locally-dominant edges, each once at its lower-id end; marking waits until all
        //     are decided.
        rounds.decide(false);
        const std::vector<ResidueState>& in = pending->wait();
        if (!in.empty()) {
            for (size_t k = 0; k < in.size(); ++k) {
                flag[k] = static_cast<uint8_t>(in[k].matched);
                partner[k] = in[k].partner_id == kGroundId ? kPartnerGround
                             : in[k].partner_id < 0      ? kPartnerNone
                                                         : id_to_local(in[k].partner_id);
            }
            rounds.import_states(halo_locals, partner.data(), flag.data());
            rounds.decide(true);
        }
        rounds.commit();
    }
    trace("rounds");

    // The cuts from the mates, in ascending (id_a, id_b) order since ids ascend with i.
    std::vector<int32_t> mate(res.size());
    rounds.mates(mate.data());
    trace("mates");
    std::vector<Cut> cuts;
    std::vector<Residue> mine;  // owned leftovers
    for (int32_t i = 0; i < n; ++i) {
        const int32_t j = mate[i];
        if (j == kPartnerGround) {
            cuts.push_back(make_ground_cut(res[i], H, W));
            st.phase_a_ground += is_owned[i];
        } else if (j >= 0 && res[i].id < res[j].id) {
            cuts.push_back(make_pair_cut(res[i], res[j]));
            st.phase_a_pairs += is_owned[i];
        } else if (j == kPartnerNone && is_owned[i]) {
            mine.push_back(res[i]);
        }
    }
    st.phase_a_pairs = comm.sum(st.phase_a_pairs);
    st.phase_a_ground = comm.sum(st.phase_a_ground);
    trace("cuts");

    // Phase B: every rank's leftovers, the same greedy everywhere.
    std::vector<Residue> left = comm.allgatherv(mine);
    std::sort(left.begin(), left.end(), [](const Residue& x, const Residue& y) { return x.id < y.id; });
    st.leftovers = static_cast<int64_t>(left.size());
    std::vector<int32_t> all(left.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
    const size_t n_a = cuts.size();
    greedy_leftovers(left, all, H, W, cuts, st);
    std::sort(cuts.begin() + static_cast<std::ptrdiff_t>(n_a), cuts.end(), by_cut);
    std::inplace_merge(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(n_a), cuts.end(), by_cut);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    trace("phase_b");
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
