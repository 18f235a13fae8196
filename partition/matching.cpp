#include "partition/matching.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "kernels/plaquette_bitmap.h"

namespace tessera {

namespace {

// TESSERA_TRACE=1: the matching's steps in milliseconds on stderr (profiling).
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

// The connected sets of candidate edges (docs/ARCHITECTURE.md section 3.4) over residues
// sorted by id: residues of one plaquette, residues within R, residues of one inner lake. Each
// residue joins, in the rows below it, the first and the last residue in reach (residues of
// one row less than R apart join through their own scans, so the rest of the row is theirs),
// and in its own row the nearest one to its right.
class CandidateSets {
public:
    CandidateSets(std::span<const ClusterResidue> res, int64_t R, int64_t H, int64_t W) : parent_(res.size()) {
        for (size_t i = 0; i < parent_.size(); ++i) parent_[i] = static_cast<int32_t>(i);
        const PlaquetteBitmap occupied(res, H, W);
        auto join_plaquette = [&](int32_t i, int64_t b) {
            if (b >= 0) join(i, occupied.residues(b).first);
        };
        for (size_t k = 0; k < res.size(); ++k) {
            const int32_t i = static_cast<int32_t>(k);
            const Residue& a = res[k].res;
            if (k > 0 && res[k - 1].res.r == a.r && res[k - 1].res.c == a.c) join(i, i - 1);
            int64_t b0, b1;
            if (occupied.row_span(a.r, a.c + 1, a.c + R, b0, b1)) join_plaquette(i, occupied.first_set(b0, b1));
            for (int64_t dr = 1; dr <= R; ++dr)
                if (occupied.row_span(a.r + dr, a.c - (R - dr), a.c + (R - dr), b0, b1)) {
                    join_plaquette(i, occupied.first_set(b0, b1));
                    join_plaquette(i, occupied.last_set(b0, b1));
                }
        }
        std::vector<std::pair<int64_t, int32_t>> lake_res;
        for (size_t k = 0; k < res.size(); ++k)
            for (int64_t l : res[k].lake)
                if (l >= 0) lake_res.push_back({l, static_cast<int32_t>(k)});
        std::sort(lake_res.begin(), lake_res.end());
        for (size_t k = 1; k < lake_res.size(); ++k)
            if (lake_res[k].first == lake_res[k - 1].first) join(lake_res[k].second, lake_res[k - 1].second);
    }
    // The set of residue i: its smallest member's index.
    int32_t of(size_t i) { return find(static_cast<int32_t>(i)); }

private:
    int32_t find(int32_t x) {
        while (parent_[static_cast<size_t>(x)] != x)
            x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
        return x;
    }
    void join(int32_t a, int32_t b) {
        a = find(a), b = find(b);
        if (a != b) parent_[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
    std::vector<int32_t> parent_;
};

void add(MatchStats& st, const ClusterStats& c) {
    st.pairs += c.pairs, st.ground_cuts += c.ground_cuts, st.lake_joins += c.lake_joins;
}

// The rule on `set` (sorted by id), connected set by connected set on OpenMP threads: each is
// closed under candidate edges, so it is decided alone and the cuts are the same as in one call.
void cut_clusters_by_class(const std::vector<ClusterResidue>& set, int64_t H, int64_t W, int64_t R, std::vector<Cut>& out,
                           ClusterStats& st) {
    if (set.size() < 4096) {
        cut_clusters(set, H, W, R, out, st);
        return;
    }
    CandidateSets sets(set, R, H, W);
    std::vector<std::pair<int32_t, int32_t>> by_class(set.size());
    for (size_t i = 0; i < set.size(); ++i) by_class[i] = {sets.of(i), static_cast<int32_t>(i)};
    std::sort(by_class.begin(), by_class.end());  // ids stay ascending inside a class
    std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) in by_class, largest first
    for (size_t b = 0; b < by_class.size();) {
        size_t e = b;
        while (e < by_class.size() && by_class[e].first == by_class[b].first) ++e;
        spans.push_back({b, e});
        b = e;
    }
    std::sort(spans.begin(), spans.end(), [](const auto& x, const auto& y) {
        return x.second - x.first != y.second - y.first ? x.second - x.first > y.second - y.first : x.first < y.first;
    });
    if (std::getenv("TESSERA_TRACE"))
        std::fprintf(stderr, "tessera: matching/sets      %zu residues in %zu connected sets, largest %zu\n", set.size(),
                     spans.size(), spans.empty() ? size_t{0} : spans.front().second - spans.front().first);
    std::vector<std::vector<Cut>> cuts(spans.size());
    std::vector<ClusterStats> stats(spans.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t k = 0; k < static_cast<int64_t>(spans.size()); ++k) {
        const auto [b, e] = spans[static_cast<size_t>(k)];
        std::vector<ClusterResidue> part;
        part.reserve(e - b);
        for (size_t i = b; i < e; ++i) part.push_back(set[static_cast<size_t>(by_class[i].second)]);
        cut_clusters(part, H, W, R, cuts[static_cast<size_t>(k)], stats[static_cast<size_t>(k)]);
    }
    for (size_t k = 0; k < spans.size(); ++k) {
        out.insert(out.end(), cuts[k].begin(), cuts[k].end());
        st.pairs += stats[k].pairs, st.ground_cuts += stats[k].ground_cuts, st.lake_joins += stats[k].lake_joins;
    }
}

}  // namespace

std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t radius, Comm& comm,
                                MatchStats& st) {
    const LakeView none{[](int64_t, int64_t) { return kNoLake; }, [](int64_t, int64_t) { return false; }};
    return match_residues(owned, none, grid, radius, comm, st);
}

std::vector<Cut> match_residues(std::span<const Residue> owned, const LakeView& lakes, const RankGrid& grid,
                                int64_t R, Comm& comm, MatchStats& st) {
    const int64_t H = grid.tiles.H, W = grid.tiles.W;
    const int self = comm.rank(), P = comm.size();
    const Window own = grid.own(self);
    const int64_t r1 = own.row0 + own.rows, c1 = own.col0 + own.cols;
    const int64_t n_own = static_cast<int64_t>(owned.size());
    StepTrace trace;
    st = MatchStats{};
    st.residues = comm.sum(n_own);

    // Each residue with the lakes at its plaquette's corners (one lake can touch two corners).
    std::vector<ClusterResidue> mine(owned.size());
    std::vector<uint8_t> near_border(owned.size(), 0);
#pragma omp parallel for schedule(static, 4096)
    for (int64_t i = 0; i < n_own; ++i) {
        const Residue& x = owned[static_cast<size_t>(i)];
        ClusterResidue& y = mine[static_cast<size_t>(i)];
        y.res = x;
        bool out = false;
        int k = 0;
        for (const auto& [dr, dc] : {std::pair<int, int>{0, 0}, {0, 1}, {1, 0}, {1, 1}}) {
            const int64_t l = lakes.at(x.r + dr, x.c + dc);
            if (l == kNoLake) continue;
            out = out || lakes.reaches_out(x.r + dr, x.c + dc);
            if (k > 0 && (y.lake[0] == l || (k > 1 && y.lake[1] == l))) continue;
            if (k < 2) y.lake[k++] = l;
        }
        if (k == 2 && y.lake[1] < y.lake[0]) std::swap(y.lake[0], y.lake[1]);
        near_border[static_cast<size_t>(i)] =
            out || (own.row0 > 0 && x.r < own.row0 + R + 1) || (r1 < H && x.r >= r1 - R - 2) ||
            (own.col0 > 0 && x.c < own.col0 + R + 1) || (c1 < W && x.c >= c1 - R - 2);
    }
    trace("lakes");

    std::vector<Cut> cuts;
    if (P == 1) {
        ClusterStats cs;
        cut_clusters_by_class(mine, H, W, R, cuts, cs);
        add(st, cs);
        std::sort(cuts.begin(), cuts.end(), cut_order);
        trace("clusters");
        return cuts;
    }

    // Halo: each owned residue goes to the ranks whose region lies within R + 1 of it.
    std::vector<std::vector<ClusterResidue>> send(static_cast<size_t>(P));
    std::vector<int> dst;
    for (int64_t i = 0; i < n_own; ++i) {
        if (!near_border[static_cast<size_t>(i)]) continue;
        const Residue& x = owned[static_cast<size_t>(i)];
        grid.ranks_meeting(x.r - R - 1, x.r + R + 1, x.c - R - 1, x.c + R + 1, self, dst);
        for (int d : dst) send[static_cast<size_t>(d)].push_back(mine[static_cast<size_t>(i)]);
    }
    const std::vector<ClusterResidue> halo = comm.alltoallv(send);
    send = {};
    trace("halo");

    // Sets that hold a halo residue, or an owned one near the border or on a lake that may
    // reach out, are shared: decided on every rank from every rank's part. The local set is
    // sorted by id; order[k] < n_own: owned residue order[k], else a halo residue.
    std::vector<ClusterResidue> local(mine);
    local.insert(local.end(), halo.begin(), halo.end());
    std::vector<int32_t> order(local.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int32_t>(k);
    std::sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return local[x].res.id < local[y].res.id; });
    std::vector<ClusterResidue> sorted(local.size());
    for (size_t k = 0; k < order.size(); ++k) sorted[k] = local[static_cast<size_t>(order[k])];
    CandidateSets sets(sorted, R, H, W);
    std::vector<uint8_t> shared_set(sorted.size(), 0);
    for (size_t k = 0; k < order.size(); ++k) {
        const int32_t from = order[k];
        if (from >= n_own || near_border[static_cast<size_t>(from)]) shared_set[static_cast<size_t>(sets.of(k))] = 1;
    }
    std::vector<ClusterResidue> interior, shared_mine;
    for (size_t k = 0; k < order.size(); ++k)
        if (order[k] < n_own) (shared_set[static_cast<size_t>(sets.of(k))] ? shared_mine : interior).push_back(sorted[k]);
    local = {};
    mine = {};
    trace("classes");

    // Interior sets: this rank alone. Their pair cuts stay inside its region; their ground
    // cuts run to the image border and go to every rank.
    ClusterStats cs_own;
    std::vector<Cut> own_cuts;
    cut_clusters_by_class(interior, H, W, R, own_cuts, cs_own);
    std::vector<Cut> ground;
    for (const Cut& c : own_cuts) (c.id_b == kGroundId ? ground : cuts).push_back(c);
    const std::vector<Cut> all_ground = comm.allgatherv(ground);
    cuts.insert(cuts.end(), all_ground.begin(), all_ground.end());
    st.pairs = comm.sum(cs_own.pairs), st.ground_cuts = comm.sum(cs_own.ground_cuts), st.lake_joins = comm.sum(cs_own.lake_joins);
    trace("interior");

    // Shared classes: the same serial rule on every rank over every rank's part.
    std::vector<ClusterResidue> shared = comm.allgatherv(shared_mine);
    std::sort(shared.begin(), shared.end(), [](const ClusterResidue& x, const ClusterResidue& y) { return x.res.id < y.res.id; });
    st.shared = static_cast<int64_t>(shared.size());
    ClusterStats cs_shared;
    cut_clusters_by_class(shared, H, W, R, cuts, cs_shared);
    add(st, cs_shared);
    std::sort(cuts.begin(), cuts.end(), cut_order);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    trace("shared");
    return cuts;
}

}  // namespace tessera
