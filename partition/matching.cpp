#include "partition/matching.h"

#include "kernels/ab_switch.h"
#include "kernels/far_reach.h"
#include "kernels/lap.h"
#include "kernels/vector_memory.h"
#include "partition/mpi_process.h"

#include <algorithm>
#include <parallel/algorithm>
#include <parallel/multiway_merge.h>
#include <omp.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <iterator>
#include <limits>
#include <utility>

namespace tessera {

namespace {

// TESSERA_TRACE=1: the matching's steps in milliseconds on stderr (profiling).
class StepTrace {
public:
    void operator()(const char* step) {
        const double ms = lap_.next_ms();
        if (on_) std::fprintf(stderr, "tessera: matching/%-10s %8.3f ms\n", step, ms);
    }

private:
    bool on_ = trace_on();
    Lap lap_;
};


// The candidate-connected sets of residues (docs/ARCHITECTURE.md 3.4). In coordinates turned by 45
// degrees (u = r + c, v = r - c) a candidate edge (L1 distance <= R) is a step of at most R in
// each of u and v, so the residues of one cell of side R + 1 are all joined by candidate edges,
// and an edge joins residues of the same or 8-adjacent cells. Cells are joined when two of their
// residues lie within R (tested pair by pair until one is) or when residues in them touch one
// lake: the classes are exactly the connected sets. Cells of side R + 1 joined whenever adjacent
// (before 2026-11-28) chained distant residues: two ranks over holes with coherence shared 178 077
// residues at 8192² and 582 034 at 16384², against 126 129 and 513 965 now (the rest are sets
// joined by a lake that crosses the rank border). Cells twice as wide where the dense table over the
// residues' box would pass its bound: each cell then one unit, a superset still closed under
// candidate edges. A class is known by its least cell, whatever the order of the joins.
class CellClasses {
public:
    // Over the residues of `a` and `b` (a rank's own and its halo).
    CellClasses(std::span<const ClusterResidue> a, std::span<const ClusterResidue> b, int64_t radius)
        : radius_(radius), side_(radius + 1) {
        const size_t n = a.size() + b.size();
        auto at = [&](int64_t i) -> const Residue& {
            return i < static_cast<int64_t>(a.size()) ? a[static_cast<size_t>(i)].res : b[static_cast<size_t>(i) - a.size()].res;
        };
        if (n == 0) return;
        // Per residue on the host's threads (serially: 0.7-0.8 s of two ranks' 32768² matching).
        const auto N = static_cast<int64_t>(n);
        const bool threads = N >= 65536;
        int64_t u0 = std::numeric_limits<int64_t>::max(), u1 = std::numeric_limits<int64_t>::min(), v0 = u0, v1 = u1;
#pragma omp parallel for schedule(static) reduction(min : u0, v0) reduction(max : u1, v1) if (threads)
        for (int64_t i = 0; i < N; ++i) {
            const int64_t u = U(at(i)), v = V(at(i));
            u0 = std::min(u0, u), u1 = std::max(u1, u), v0 = std::min(v0, v), v1 = std::max(v1, v);
        }
        // (TESSERA_CLASS_TABLE=N: at most N entries, for the tests of wider cells.)
        const char* cap = std::getenv("TESSERA_CLASS_TABLE");
        const int64_t most = cap ? std::max<int64_t>(1, std::atoll(cap)) : std::max<int64_t>(4 * N, int64_t{1} << 22);
        while ((floor_div(u1, side_) - floor_div(u0, side_) + 1) * (floor_div(v1, side_) - floor_div(v0, side_) + 1) > most) side_ *= 2;
        y0_ = floor_div(u0, side_), x0_ = floor_div(v0, side_), nx_ = floor_div(v1, side_) - x0_ + 1;
        const int64_t ny = floor_div(u1, side_) - y0_ + 1;
        // The occupied cells numbered in table order, their residues' (u, v) listed cell by cell
        // (in any order within a cell: near() asks whether any pair is near).
        cell_.resize(static_cast<size_t>(ny * nx_));  // up to 4 entries a residue: filled on the threads
#pragma omp parallel for schedule(static) if (threads)
        for (int64_t k = 0; k < ny * nx_; ++k) cell_[static_cast<size_t>(k)] = -1;
        UntouchedVector<int32_t> own(n);  // each residue's cell: its slot, then its number
#pragma omp parallel for schedule(static) if (threads)
        for (int64_t i = 0; i < N; ++i) {
            const size_t k = slot(at(i));
            own[static_cast<size_t>(i)] = static_cast<int32_t>(k);
            std::atomic_ref<int32_t>(cell_[k]).store(0, std::memory_order_relaxed);
        }
        const int32_t m = number_cells(threads);
        first_.assign(static_cast<size_t>(m) + 1, 0);
#pragma omp parallel for schedule(static) if (threads)
        for (int64_t i = 0; i < N; ++i) {
            const int32_t c = own[static_cast<size_t>(i)] = cell_[static_cast<size_t>(own[static_cast<size_t>(i)])];
            std::atomic_ref<int64_t>(first_[static_cast<size_t>(c) + 1]).fetch_add(1, std::memory_order_relaxed);
        }
        for (int32_t k = 0; k < m; ++k) first_[static_cast<size_t>(k) + 1] += first_[static_cast<size_t>(k)];
        std::vector<int64_t> fill(first_.begin(), first_.end() - 1);
        uv_.resize(2 * n);
#pragma omp parallel for schedule(static) if (threads)
        for (int64_t i = 0; i < N; ++i) {
            const auto k = static_cast<size_t>(
                std::atomic_ref<int64_t>(fill[static_cast<size_t>(own[static_cast<size_t>(i)])]).fetch_add(1, std::memory_order_relaxed));
            uv_[2 * k] = U(at(i)), uv_[2 * k + 1] = V(at(i));
        }
        parent_.resize(static_cast<size_t>(m));
        for (int32_t i = 0; i < m; ++i) parent_[static_cast<size_t>(i)] = i;
        // The joins found on the threads (near() and the lake touches are the work), made after:
        // a class is its least cell whatever the order of the joins. (Serially, with a
        // hash map of lakes, this was 0.2-0.3 s of two ranks' 32768² matching, H200 host.)
        std::vector<std::vector<std::pair<int32_t, int32_t>>> joins(static_cast<size_t>(omp_get_max_threads()));
        std::vector<std::vector<std::pair<int64_t, int32_t>>> touches(joins.size());  // (lake, cell)
#pragma omp parallel if (threads)
        {
            auto& my_joins = joins[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 16)
            for (int64_t y = 0; y < ny; ++y)
                for (int64_t x = 0; x < nx_; ++x) {
                    const int32_t i = cell_[static_cast<size_t>(y * nx_ + x)];
                    if (i < 0) continue;
                    for (const auto& [dy, dx] : {std::pair<int64_t, int64_t>{0, 1}, {1, -1}, {1, 0}, {1, 1}}) {
                        if (x + dx < 0 || x + dx >= nx_ || y + dy >= ny) continue;
                        const int32_t j = cell_[static_cast<size_t>((y + dy) * nx_ + x + dx)];
                        if (j >= 0 && near(i, j)) my_joins.emplace_back(i, j);
                    }
                }
            auto& my_touches = touches[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
            for (int64_t i = 0; i < N; ++i)
                for (int64_t l : (i < static_cast<int64_t>(a.size()) ? a[static_cast<size_t>(i)] : b[static_cast<size_t>(i) - a.size()]).lake)
                    if (l >= 0 && (my_touches.empty() || my_touches.back() != std::pair{l, own[static_cast<size_t>(i)]}))
                        my_touches.emplace_back(l, own[static_cast<size_t>(i)]);
        }
        for (const auto& list : joins)
            for (const auto& [i, j] : list) join(i, j);
        std::vector<std::pair<int64_t, int32_t>> touch;
        for (auto& list : touches) touch.insert(touch.end(), list.begin(), list.end()), release(list);
        __gnu_parallel::sort(touch.begin(), touch.end());
        for (size_t k = 1; k < touch.size(); ++k)  // equal pairs (a lake's residues in one cell) join nothing
            if (touch[k].first == touch[k - 1].first && touch[k].second != touch[k - 1].second)
                join(touch[k - 1].second, touch[k].second);
        for (int32_t i = 0; i < m; ++i) parent_[static_cast<size_t>(i)] = find(i);  // flat: of() in one step
    }
    int64_t of(const Residue& x) const { return parent_[static_cast<size_t>(cell_[slot(x)])]; }
    size_t size() const { return parent_.size(); }

private:
    // The occupied cells (0 in cell_, the empty ones -1) numbered in table order, blocks of the
    // table on the threads; returns how many.
    int32_t number_cells(bool threads) {
        constexpr int64_t kBlock = 1 << 16;
        const auto T = static_cast<int64_t>(cell_.size());
        const int64_t blocks = (T + kBlock - 1) / kBlock;
        std::vector<int32_t> base(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(static) if (threads)
        for (int64_t k = 0; k < blocks; ++k) {
            int32_t c = 0;
            for (int64_t i = k * kBlock; i < std::min(T, (k + 1) * kBlock); ++i) c += cell_[static_cast<size_t>(i)] == 0;
            base[static_cast<size_t>(k) + 1] = c;
        }
        for (int64_t k = 0; k < blocks; ++k) base[static_cast<size_t>(k) + 1] += base[static_cast<size_t>(k)];
#pragma omp parallel for schedule(static) if (threads)
        for (int64_t k = 0; k < blocks; ++k) {
            int32_t next = base[static_cast<size_t>(k)];
            for (int64_t i = k * kBlock; i < std::min(T, (k + 1) * kBlock); ++i)
                if (cell_[static_cast<size_t>(i)] == 0) cell_[static_cast<size_t>(i)] = next++;
        }
        return base.back();
    }
    static int64_t U(const Residue& x) { return int64_t{x.r} + x.c; }
    static int64_t V(const Residue& x) { return int64_t{x.r} - x.c; }
    static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
    size_t slot(const Residue& x) const {
        return static_cast<size_t>((floor_div(U(x), side_) - y0_) * nx_ + floor_div(V(x), side_) - x0_);
    }
    // Whether a residue of cell i and one of cell j lie within the radius (L1: both turned coordinates).
    bool near(int32_t i, int32_t j) const {
        for (int64_t p = first_[static_cast<size_t>(i)]; p < first_[static_cast<size_t>(i) + 1]; ++p)
            for (int64_t q = first_[static_cast<size_t>(j)]; q < first_[static_cast<size_t>(j) + 1]; ++q)
                if (std::abs(uv_[static_cast<size_t>(2 * p)] - uv_[static_cast<size_t>(2 * q)]) <= radius_ &&
                    std::abs(uv_[static_cast<size_t>(2 * p + 1)] - uv_[static_cast<size_t>(2 * q + 1)]) <= radius_)
                    return true;
        return false;
    }
    int32_t find(int32_t x) {
        while (parent_[static_cast<size_t>(x)] != x) x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
        return x;
    }
    void join(int32_t a, int32_t b) {
        a = find(a), b = find(b);
        if (a != b) parent_[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
    int64_t radius_, side_, y0_ = 0, x0_ = 0, nx_ = 0;
    UntouchedVector<int32_t> cell_;
    std::vector<int32_t> parent_;
    std::vector<int64_t> first_;
    UntouchedVector<int64_t> uv_;  // each cell's residues' (u, v), from first_[cell] on (every one written)
};

// Records that are runs sorted by id (each rank's part) into one sorted list: a multiway merge
// on the host's threads (libstdc++ parallel mode). A sort of the whole was most of the 1.9 s shared
// step of two ranks' 32768² matching (4.9 M records, H200 host); a pairwise merge on one thread, 0.6-0.7 s
// with the gather and the wait for the slower rank.
UntouchedVector<ClusterResidue> merge_runs_by_id(std::vector<ClusterResidue> v) {  // (libstdc++'s merge takes no const iterators)
    auto by_id = [](const ClusterResidue& x, const ClusterResidue& y) { return x.res.id < y.res.id; };
    using It = std::vector<ClusterResidue>::iterator;
    std::vector<std::pair<It, It>> runs;
    for (size_t from = 0, i = 1; i <= v.size(); ++i)
        if (i == v.size() || v[i].res.id < v[i - 1].res.id)
            runs.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(i)), from = i;
    UntouchedVector<ClusterResidue> out(v.size());
    if (!runs.empty())
        __gnu_parallel::multiway_merge(runs.begin(), runs.end(), out.begin(), static_cast<std::ptrdiff_t>(v.size()), by_id);
    return out;
}

// v's records with `to_b` set into b, the others into a, each in v's order: blocks on the host's
// threads, each writing at its offset (a serial push_back of 2.5 M 48-byte records took 0.1 s).
template <class Out>
void split_in_order(std::span<const ClusterResidue> v, const std::vector<uint8_t>& to_b, int64_t n_b, Out& a, Out& b) {
    const auto n = static_cast<int64_t>(v.size());
    a.resize(static_cast<size_t>(n - n_b)), b.resize(static_cast<size_t>(n_b));
    constexpr int64_t kBlock = 1 << 16;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<int64_t> in_b(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t k = 0; k < blocks; ++k) {
        int64_t m = 0;
        for (int64_t i = k * kBlock; i < std::min(n, (k + 1) * kBlock); ++i) m += to_b[static_cast<size_t>(i)];
        in_b[static_cast<size_t>(k) + 1] = m;
    }
    for (int64_t k = 0; k < blocks; ++k) in_b[static_cast<size_t>(k) + 1] += in_b[static_cast<size_t>(k)];
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t k = 0; k < blocks; ++k) {
        int64_t ib = in_b[static_cast<size_t>(k)], ia = k * kBlock - ib;
        for (int64_t i = k * kBlock; i < std::min(n, (k + 1) * kBlock); ++i)
            (to_b[static_cast<size_t>(i)] ? b[static_cast<size_t>(ib++)] : a[static_cast<size_t>(ia++)]) = v[static_cast<size_t>(i)];
    }
}

void add(MatchStats& st, const ClusterStats& c) {
    st.pairs += c.pairs, st.ground_cuts += c.ground_cuts, st.lake_joins += c.lake_joins;
}

}  // namespace

std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t radius, Comm& comm,
                                MatchStats& st) {
    const LakeView none{[](int64_t, int64_t) { return kNoLake; }, [](int64_t, int64_t) { return false; }, true, {}, {}, true};
    return match_residues(owned, none, grid, radius, comm, st);
}

ClusterResidue with_touching_lakes(const Residue& x, const LakeView& lakes, int64_t H, int64_t W, bool& reaches_out) {
    ClusterResidue y;
    y.res = x;
    reaches_out = false;
    if (lakes.none) return y;
    int64_t at[4];
    bool out[4];
    if (lakes.corners) {
        lakes.corners(x.r, x.c, at, out);
    } else {
        for (int j = 0; j < 4; ++j) {
            at[j] = lakes.at(x.r + j / 2, x.c + j % 2);
            out[j] = at[j] != kNoLake && lakes.reaches_out(x.r + j / 2, x.c + j % 2);
        }
    }
    int k = 0;
    for (int j = 0; j < 4; ++j) {
        const int64_t l = at[j];
        if (l == kNoLake) continue;
        reaches_out = reaches_out || (out[j] && l != kGroundedLake);  // the ground carries nothing between sets
        if (k > 0 && (y.lake[0] == l || (k > 1 && y.lake[1] == l))) continue;
        if (k < 2) y.lake[k++] = l;
    }
    // Section 3.1: the ground one dual step away (a grounded lake), by its first step in ring
    // order; a residue that touches the ground already takes none.
    if (k < 2 && lakes.steps && !(k == 1 && y.lake[0] == kGroundedLake)) {
        const int64_t r = x.r, c = x.c;
        const int64_t ring[8][2] = {{r - 1, c}, {r - 1, c + 1}, {r + 2, c}, {r + 2, c + 1},
                                    {r, c - 1}, {r + 1, c - 1}, {r, c + 2}, {r + 1, c + 2}};
        const int next_to[8] = {0, 1, 2, 3, 0, 2, 1, 3};  // the corner each ring pixel is 4-adjacent to
        // Beside a corner in a lake, an unreliable pixel is in that lake: only the others are looked up.
        bool need[8], any = false;
        for (int j = 0; j < 8; ++j) {
            const int64_t pr = ring[j][0], pc = ring[j][1];
            need[j] = pr >= 0 && pr < H && pc >= 0 && pc < W && at[next_to[j]] == kNoLake;
            any = any || need[j];
        }
        int64_t ring_lake[8];
        if (any && lakes.ring) lakes.ring(r, c, ring_lake);
        for (int j = 0; j < 8 && any; ++j) {
            if (!need[j]) continue;
            const int64_t pr = ring[j][0], pc = ring[j][1];
            // The ground only: a step into an inner lake (a lone unreliable pixel) charges it and
            // pulled residues from their pairs (salt-and-pepper nodata: 2-3x the wrong pixels).
            if ((lakes.ring ? ring_lake[j] : lakes.at(pr, pc)) != kGroundedLake) continue;
            y.lake[k] = kGroundedLake, y.step[k] = static_cast<LakeStep>(kStepUp + j / 2), ++k;
            reaches_out = reaches_out || lakes.reaches_out(pr, pc);
            break;
        }
    }
    if (k == 2 && y.lake[1] < y.lake[0]) std::swap(y.lake[0], y.lake[1]), std::swap(y.step[0], y.step[1]);
    return y;
}

int64_t add_lake_steps(std::span<const ClusterResidue> res, std::vector<Cut>& out) {
    const size_t before = out.size();
    // Few residues step (1421 of 16384² holes' 12.5 M): the scan is the work, on the host's
    // threads, each its contiguous part appended in order (one thread: some 0.05 s at 32768²).
    const auto n = static_cast<int64_t>(res.size());
    std::vector<std::vector<Cut>> part(static_cast<size_t>(omp_get_max_threads()));
#pragma omp parallel if (n >= 65536)
    {
        auto& mine = part[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; ++i) {
            const ClusterResidue& x = res[static_cast<size_t>(i)];
            for (int k = 0; k < 2; ++k) {  // at most one step a residue: to the ground (with_touching_lakes)
                if (x.step[k] == kTouch) continue;
                const int32_t dr = x.step[k] == kStepUp ? -1 : x.step[k] == kStepDown ? 1 : 0;
                const int32_t dc = x.step[k] == kStepLeft ? -1 : x.step[k] == kStepRight ? 1 : 0;
                mine.push_back(Cut{x.res.id, kGroundedLakeKey, x.res.r, x.res.c, x.res.r + dr, x.res.c + dc, kNotGround});
            }
        }
    }
    for (const auto& p : part) out.insert(out.end(), p.begin(), p.end());
    return static_cast<int64_t>(out.size() - before);
}

std::vector<Cut> match_residues(std::span<const Residue> owned, const LakeView& lakes, const RankGrid& grid,
                                int64_t R, Comm& comm, MatchStats& st, ClusterRule rule, bool far_option) {
    const int64_t H = grid.tiles.H, W = grid.tiles.W;
    const int self = comm.rank(), P = comm.size();
    const Window own = grid.own(self);
    const int64_t r1 = own.row0 + own.rows, c1 = own.col0 + own.cols;
    const int64_t n_own = static_cast<int64_t>(owned.size());
    StepTrace trace;
    st = MatchStats{};
    st.residues = comm.sum(n_own);

    // Each residue with the lakes at its plaquette's corners (one lake can touch two corners).
    UntouchedVector<ClusterResidue> mine(owned.size());  // each written below, on the threads
    std::vector<uint8_t> near_border(owned.size(), 0);
#pragma omp parallel for schedule(static, 4096)
    for (int64_t i = 0; i < n_own; ++i) {
        const Residue& x = owned[static_cast<size_t>(i)];
        bool out = false;
        mine[static_cast<size_t>(i)] = with_touching_lakes(x, lakes, H, W, out);
        near_border[static_cast<size_t>(i)] =
            out || (own.row0 > 0 && x.r < own.row0 + R + 1) || (r1 < H && x.r >= r1 - R - 2) ||
            (own.col0 > 0 && x.c < own.col0 + R + 1) || (c1 < W && x.c >= c1 - R - 2);
    }
    trace("lakes");

    std::vector<Cut> cuts;
    const bool far = far_option && far_reach_on();
    const int64_t far_R = far_radius(R);
    if (P == 1) {
        ClusterStats cs;
        rule(mine, H, W, R, cuts, cs);
        trace("clusters");
        if (far && has_long_ground_cut(cuts, H, W, R)) {
            FarTake ft = take_far_components(mine, cuts, H, W, R);
            cs.ground_cuts -= ft.dropped;
            st.far_residues = static_cast<int64_t>(ft.members.size());
            trace("far/take");
            std::vector<Residue> targets = grounded_near(mine, ft.grounded, ft.members, W, far_R);
            trace("far/near");
            if (trace_on()) std::fprintf(stderr, "tessera: far reach: %lld long cuts, %zu members, %zu targets\n",
                                         static_cast<long long>(ft.dropped), ft.members.size(), targets.size());
            const auto kept = static_cast<std::ptrdiff_t>(cuts.size());  // still in cut_order
            reach_far(std::move(ft.members), std::move(targets), H, W, far_R, cuts, cs);
            std::sort(cuts.begin() + kept, cuts.end(), cut_order);
            if (std::is_sorted(cuts.begin(), cuts.begin() + kept, cut_order))
                std::inplace_merge(cuts.begin(), cuts.begin() + kept, cuts.end(), cut_order);
            else
                std::sort(cuts.begin(), cuts.end(), cut_order);
            trace("far");
        }
        add(st, cs);
        // Appended, not merged: rasterising does not need the order, and a merge moved all the
        // rule's cuts (0.1 s on one thread for 16384² holes' 2.9 M).
        st.lake_steps = add_lake_steps(mine, cuts);
        trace("steps");
        return cuts;
    }

    // Halo: each owned residue goes to the ranks whose region lies within R + 1 of it.
    // On the threads, each its contiguous part of `owned`, appended in thread order (id order).
    std::vector<std::vector<ClusterResidue>> send(static_cast<size_t>(P));
    {
        std::vector<std::vector<std::vector<ClusterResidue>>> part(static_cast<size_t>(omp_get_max_threads()));
#pragma omp parallel if (n_own >= 65536)
        {
            auto& to = part[static_cast<size_t>(omp_get_thread_num())];
            to.resize(static_cast<size_t>(P));
            std::vector<int> dst;
#pragma omp for schedule(static)
            for (int64_t i = 0; i < n_own; ++i) {
                if (!near_border[static_cast<size_t>(i)]) continue;
                const Residue& x = owned[static_cast<size_t>(i)];
                grid.ranks_meeting(x.r - R - 1, x.r + R + 1, x.c - R - 1, x.c + R + 1, self, dst);
                for (int d : dst) to[static_cast<size_t>(d)].push_back(mine[static_cast<size_t>(i)]);
            }
        }
        for (auto& to : part)
            for (int d = 0; d < P && !to.empty(); ++d)
                send[static_cast<size_t>(d)].insert(send[static_cast<size_t>(d)].end(), to[static_cast<size_t>(d)].begin(),
                                                     to[static_cast<size_t>(d)].end());
    }
    const std::vector<ClusterResidue> halo = comm.alltoallv(send);
    release(send);
    trace("halo");

    // Classes that hold a halo residue, or an owned one near the border or on a lake that may
    // reach out, are shared: decided on every rank from every rank's part.
    CellClasses classes(mine, halo, R);
    trace("cells");
    std::vector<uint8_t> shared_class(classes.size(), 0);
    for (const ClusterResidue& x : halo) shared_class[static_cast<size_t>(classes.of(x.res))] = 1;
    const bool threads = n_own >= 65536;
#pragma omp parallel for schedule(static) if (threads)
    for (int64_t i = 0; i < n_own; ++i)
        if (near_border[static_cast<size_t>(i)])
            std::atomic_ref<uint8_t>(shared_class[static_cast<size_t>(classes.of(owned[static_cast<size_t>(i)]))])
                .store(1, std::memory_order_relaxed);
    std::vector<uint8_t> in_shared(owned.size());
    int64_t n_shared = 0;
#pragma omp parallel for schedule(static) reduction(+ : n_shared) if (threads)
    for (int64_t i = 0; i < n_own; ++i)
        n_shared += in_shared[static_cast<size_t>(i)] = shared_class[static_cast<size_t>(classes.of(owned[static_cast<size_t>(i)]))];
    UntouchedVector<ClusterResidue> interior, shared_mine;  // each record written once, on the threads
    split_in_order(mine, in_shared, n_shared, interior, shared_mine);
    release(mine);
    trace("classes");

    // Interior classes: this rank alone. Their pair cuts stay inside its region; their ground
    // cuts run to the image border and go to every rank.
    // The shared residues travel meanwhile, on a thread of their own where MPI allows (the rule
    // calls no MPI): the same records either way (TESSERA_SHARED_BESIDE=0: after it, A/B).
    auto gather_shared = [&] { return merge_runs_by_id(comm.allgatherv(shared_mine)); };
    std::future<UntouchedVector<ClusterResidue>> gathering;
    if (mpi_calls_from_any_thread() && !switch_is("TESSERA_SHARED_BESIDE", "0"))
        gathering = std::async(std::launch::async, gather_shared);
    ClusterStats cs_own;
    std::vector<Cut> own_cuts;
    rule(interior, H, W, R, own_cuts, cs_own);
    trace("interior");

    // Shared classes: the same serial rule on every rank over every rank's part.
    const UntouchedVector<ClusterResidue> shared = gathering.valid() ? gathering.get() : gather_shared();
    st.shared = static_cast<int64_t>(shared.size());
    ClusterStats cs_shared;
    std::vector<Cut> shared_cuts;
    rule(shared, H, W, R, shared_cuts, cs_shared);
    trace("shared");

    // Section 3.6: the far components of every rank's interior and of the shared classes.
    const bool any_long =
        far && (comm.sum(int64_t{has_long_ground_cut(own_cuts, H, W, R)}) > 0 || has_long_ground_cut(shared_cuts, H, W, R));
    FarTake far_own, far_shared;
    if (any_long) {
        far_own = take_far_components(interior, own_cuts, H, W, R);
        far_shared = take_far_components(shared, shared_cuts, H, W, R);
        cs_own.ground_cuts -= far_own.dropped;
        cs_shared.ground_cuts -= far_shared.dropped;
    }
    // The pair cuts stay where they are (cuts is empty here; the order is the final sort's).
    auto is_ground = [](const Cut& c) { return c.id_b == kGroundId; };
    std::vector<Cut> ground;
    std::copy_if(own_cuts.begin(), own_cuts.end(), std::back_inserter(ground), is_ground);
    std::erase_if(own_cuts, is_ground);
    cuts = std::move(own_cuts);
    const std::vector<Cut> all_ground = comm.allgatherv(ground);
    cuts.insert(cuts.end(), all_ground.begin(), all_ground.end());
    st.pairs = comm.sum(cs_own.pairs), st.ground_cuts = comm.sum(cs_own.ground_cuts), st.lake_joins = comm.sum(cs_own.lake_joins);
    trace("ground");  // with the wait for the slowest rank
    if (any_long) {
        std::vector<FarMember> far_all = comm.allgatherv(far_own.members);
        far_all.insert(far_all.end(), far_shared.members.begin(), far_shared.members.end());
        std::vector<Residue> targets = comm.allgatherv(grounded_near(interior, far_own.grounded, far_all, W, far_R));
        const std::vector<Residue> shared_targets = grounded_near(shared, far_shared.grounded, far_all, W, far_R);
        targets.insert(targets.end(), shared_targets.begin(), shared_targets.end());
        std::sort(targets.begin(), targets.end(), [](const Residue& x, const Residue& y) { return x.id < y.id; });
        st.far_residues = static_cast<int64_t>(far_all.size());
        reach_far(std::move(far_all), std::move(targets), H, W, far_R, shared_cuts, cs_shared);
        trace("far");
    }
    add(st, cs_shared);
    cuts.insert(cuts.end(), shared_cuts.begin(), shared_cuts.end());
    st.lake_steps = comm.sum(add_lake_steps(interior, cuts)) + add_lake_steps(shared, cuts);
    // On the threads: one thread's sort was 0.1-0.3 s of the matching at 32768² (ties are equal cuts).
    __gnu_parallel::sort(cuts.begin(), cuts.end(), cut_order);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    trace("sort");
    return cuts;
}

}  // namespace tessera
