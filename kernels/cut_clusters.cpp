// Section 3's rule in rounds: every residue starts as an open cluster (charge +-1); in each
// round every open cluster takes the smallest candidate edge (weight, lower id, higher id)
// leaving it, and all of them are accepted at once. A cluster is open while its charge is not
// zero and it does not hold the ground. Each node keeps its best edge leaving its cluster when
// it was computed (clusters only grow, so it stays a lower bound, exact while its far end is
// still outside) in its cluster's pairing heap; heaps meld when clusters join. The clusters'
// searches within a round read only the round's partition, so they run on threads.
#include "kernels/cut_clusters.h"
#include "kernels/invariant.h"

#include "kernels/lap.h"
#include "kernels/plaquette_bitmap.h"
#include "kernels/vector_memory.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <type_traits>


namespace tessera {

namespace {


inline constexpr int32_t kPartial = -2;  // a node's key is a lower bound: its search goes on

class Clusters {
public:
    Clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius)
        : res_(res), H_(H), W_(W), radius_(radius), n_(static_cast<int32_t>(res.size())), lake_ids_(lake_ids_of(res)) {
        const int32_t L = static_cast<int32_t>(lake_ids_.size());
        ground_ = n_ + L;
        const size_t N = static_cast<size_t>(ground_) + 1;
        parent_.resize(N), size_.resize(N), charge_.resize(N), next_member_.resize(N), last_member_.resize(N);
        node_.resize(N), heap_.resize(N), cursor_.resize(static_cast<size_t>(n_));
#pragma omp parallel for schedule(static) if (N >= kThreadsFrom)
        for (size_t v = 0; v < N; ++v) {
            parent_[v] = last_member_[v] = static_cast<int32_t>(v);
            next_member_[v] = heap_[v] = -1;
            size_[v] = 1;
            charge_[v] = v < static_cast<size_t>(n_) ? res[v].res.sign : 0;
            ::new (&node_[v]) Node{};
            if (v < static_cast<size_t>(n_)) ::new (&cursor_[v]) RingCursor{};
        }
        // Each lake's residues, ascending (the lake's edges in key order).
        adj_start_.assign(static_cast<size_t>(L) + 1, 0);
        auto lakes_of = [](const ClusterResidue& x, auto&& f) {
            if (x.lake[0] >= 0) f(x.lake[0]);
            if (x.lake[1] >= 0 && x.lake[1] != x.lake[0]) f(x.lake[1]);
        };
        for (const ClusterResidue& x : res) lakes_of(x, [&](int64_t l) { ++adj_start_[static_cast<size_t>(lake_index(l)) + 1]; });
        for (size_t k = 1; k < adj_start_.size(); ++k) adj_start_[k] += adj_start_[k - 1];
        adj_.resize(static_cast<size_t>(adj_start_.back()));
        lake_cursor_.assign(adj_start_.begin(), adj_start_.end() - 1);
        std::vector<int64_t> fill(lake_cursor_);
        for (int32_t i = 0; i < n_; ++i)
            lakes_of(res[static_cast<size_t>(i)],
                     [&](int64_t l) { adj_[static_cast<size_t>(fill[static_cast<size_t>(lake_index(l))]++)] = i; });
        occupied_ = PlaquetteBitmap(res, H, W);
        occ_ = occupied_.view();
    }

    void run(std::vector<Cut>& out, ClusterStats& st) {
        Lap clock;  // TESSERA_TRACE: where the rule's time goes
        double t_pick = 0, t_accept = 0, t_join = 0;
#pragma omp parallel for schedule(dynamic, 1024) if (static_cast<size_t>(ground_) >= kThreadsFrom)
        for (int32_t v = 0; v < ground_; ++v) {
            refresh(v, EdgeKey{});
            heap_[static_cast<size_t>(v)] = v;
        }
        const double t_first = clock.next_ms();
        const size_t N = static_cast<size_t>(ground_) + 1;
        UntouchedVector<int32_t> open(static_cast<size_t>(n_)), next, slot(N);  // lakes start balanced: closed
        UntouchedVector<uint32_t> stamp(N);
#pragma omp parallel for schedule(static) if (N >= kThreadsFrom)
        for (size_t v = 0; v < N; ++v) {
            if (v < static_cast<size_t>(n_)) open[v] = static_cast<int32_t>(v);
            slot[v] = -1, stamp[v] = 0;
        }
        UntouchedVector<Pick> pick;
        UntouchedVector<int64_t> at;  // each pick's place among the cuts, or -1
        UntouchedVector<int32_t> lower, upper;  // each cut's lower-id residue and its other end (-1: ground)
        lower.reserve(static_cast<size_t>(n_)), upper.reserve(static_cast<size_t>(n_));  // one cut a residue at most
        uint32_t rounds = 0;
        for (uint32_t round = 1; !open.empty(); ++round) {
            rounds = round;
            const size_t n_open = open.size();
            pick.resize(n_open), at.resize(n_open);
            const size_t base = lower.size();
#pragma omp parallel if (n_open >= kThreadsFrom)
            {
                std::vector<int32_t> scratch;
#pragma omp for schedule(dynamic, 64)
                for (size_t i = 0; i < n_open; ++i) pick[i] = best_leaving(open[i], scratch);
#pragma omp single
                t_pick += clock.next_ms();
#pragma omp for schedule(static)
                for (size_t i = 0; i < n_open; ++i) slot[static_cast<size_t>(open[i])] = static_cast<int32_t>(i);
                // Two open clusters can take the same edge: it is accepted once.
#pragma omp for schedule(static)
                for (size_t i = 0; i < n_open; ++i) {
                    const int32_t y = slot[static_cast<size_t>(pick[i].to)];
                    const bool twice = y >= 0 && pick[static_cast<size_t>(y)].key == pick[i].key;
                    at[i] = (twice && open[i] > pick[i].to) ? -2 : (pick[i].key.hi >= kLakeKeyBase && pick[i].key.hi != kGroundId) ? -1 : 0;
                }
#pragma omp single
                {
                    int64_t next_at = static_cast<int64_t>(base);
                    for (size_t i = 0; i < n_open; ++i) {
                        if (at[i] == -1) ++st.lake_joins;
                        if (at[i] != 0) continue;
                        ++(pick[i].key.hi == kGroundId ? st.ground_cuts : st.pairs);
                        at[i] = next_at++;
                    }
                    lower.resize(static_cast<size_t>(next_at)), upper.resize(lower.size());
                }
#pragma omp for schedule(static)
                for (size_t i = 0; i < n_open; ++i) {
                    if (at[i] < 0) continue;
                    const int32_t m = pick[i].node, t = node_[static_cast<size_t>(m)].target;
                    const size_t k = static_cast<size_t>(at[i]);
                    if (pick[i].key.hi == kGroundId) lower[k] = m, upper[k] = -1;
                    else lower[k] = std::min(m, t), upper[k] = std::max(m, t);
                }
            }
            t_accept += clock.next_ms();
            if (n_open >= kThreadsFrom) {
                join_on_threads(open, pick, slot, next);
            } else {
                for (size_t i = 0; i < n_open; ++i) unite(root(open[i]), root(pick[i].to));
                next.clear();
                for (const int32_t x : open) {
                    const int32_t r = root(x);
                    if (is_open(r) && stamp[static_cast<size_t>(r)] != round) stamp[static_cast<size_t>(r)] = round, next.push_back(r);
                }
            }
            for (const int32_t x : open) slot[static_cast<size_t>(x)] = -1;
            std::swap(open, next);
            t_join += clock.next_ms();
        }
        emit_cuts(lower, upper, out);
        if (trace_on() && n_ >= 100000)
            std::fprintf(stderr,
                         "tessera: cut_clusters %d residues, %u rounds: first search %.1f, searches %.1f, accept %.1f, "
                         "join %.1f, sort %.1f ms\n",
                         n_, rounds, t_first, t_pick, t_accept, t_join, clock.next_ms());
    }

private:
    static constexpr size_t kThreadsFrom = 2048;  // fewer clusters than this: one thread
    struct Pick {
        EdgeKey key;
        int32_t node, to;  // the member whose edge it is; the far end's cluster
    };

    // A round's joins on threads. The picks point open clusters at clusters; a tree's root is a
    // cluster that picked nothing (closed, or the ground) or the lower of two that picked each
    // other; pointer jumping finds it, then each tree's clusters join its root, trees on threads.
    // Which thread joins what changes heap shapes and list orders, never a search's answer.
    void join_on_threads(const UntouchedVector<int32_t>& open, const UntouchedVector<Pick>& pick, const UntouchedVector<int32_t>& slot,
                         UntouchedVector<int32_t>& roots) {
        const int64_t n = static_cast<int64_t>(open.size());
        auto link = [&](int32_t x) { return std::atomic_ref<int32_t>(link_[static_cast<size_t>(x)]); };
        if (link_.empty()) link_.resize(parent_.size()), group_.resize(parent_.size()), head_.resize(parent_.size());
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) link(pick[static_cast<size_t>(i)].to).store(pick[static_cast<size_t>(i)].to, std::memory_order_relaxed);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) {
            const int32_t x = open[static_cast<size_t>(i)], y = pick[static_cast<size_t>(i)].to;
            const int32_t ys = slot[static_cast<size_t>(y)];
            const bool mutual = ys >= 0 && pick[static_cast<size_t>(ys)].to == x;
            link(x).store(mutual && x < y ? x : y, std::memory_order_relaxed);
        }
        for (bool again = true; again;) {
            again = false;
#pragma omp parallel for schedule(static) reduction(|| : again)
            for (int64_t i = 0; i < n; ++i) {
                const int32_t x = open[static_cast<size_t>(i)];
                const int32_t l = link(x).load(std::memory_order_relaxed), ll = link(l).load(std::memory_order_relaxed);
                if (ll != l) link(x).store(ll, std::memory_order_relaxed), again = true;
            }
        }
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i)
            std::atomic_ref<int32_t>(head_[static_cast<size_t>(link_[static_cast<size_t>(open[static_cast<size_t>(i)])])])
                .store(-1, std::memory_order_relaxed);
        UntouchedVector<uint8_t> opens(static_cast<size_t>(n));  // this pick's cluster was its root's first
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) {
            const int32_t x = open[static_cast<size_t>(i)], r = link_[static_cast<size_t>(x)];
            opens[static_cast<size_t>(i)] = 0;
            if (r == x) continue;
            group_[static_cast<size_t>(x)] = std::atomic_ref<int32_t>(head_[static_cast<size_t>(r)]).exchange(x, std::memory_order_relaxed);
            opens[static_cast<size_t>(i)] = group_[static_cast<size_t>(x)] < 0;
        }
        roots.clear();
        for (int64_t i = 0; i < n; ++i)
            if (opens[static_cast<size_t>(i)]) roots.push_back(link_[static_cast<size_t>(open[static_cast<size_t>(i)])]);
        const int64_t n_roots = static_cast<int64_t>(roots.size());
#pragma omp parallel for schedule(dynamic, 256)
        for (int64_t k = 0; k < n_roots; ++k) {
            const int32_t r = roots[static_cast<size_t>(k)];
            for (int32_t x = head_[static_cast<size_t>(r)]; x >= 0; x = group_[static_cast<size_t>(x)]) absorb(r, x);
        }
        roots.erase(std::remove_if(roots.begin(), roots.end(), [&](int32_t r) { return !is_open(r); }), roots.end());
    }

    // Cluster x's smallest edge leaving it: its heap top once that is exact and points out.
    Pick best_leaving(int32_t x, std::vector<int32_t>& scratch) {
        int32_t& top = heap_[static_cast<size_t>(x)];
        for (;;) {
            const int32_t m = top;
            TESSERA_INVARIANT(m >= 0, "cut_clusters: an open cluster has no edge leaving it");
            const Node& nd = node_[static_cast<size_t>(m)];
            if (nd.target >= 0 && root(nd.target) != x) return Pick{nd.key, m, root(nd.target)};
            top = pop_min(m, scratch);
            if (nd.target == -1) continue;  // a lake with no shore left outside
            // A lower bound, or the far end joined since: m's next edge, searched no farther
            // than the heap's next key, which then comes first.
            refresh(m, top >= 0 ? node_[static_cast<size_t>(top)].key : EdgeKey{});
            top = meld(top, m);
        }
    }

    // The cuts, appended to `out` in cut_order: counted by their lower-id residue's index
    // (residues are in id order); a residue's few cuts by their other end (the ground last).
    void emit_cuts(const UntouchedVector<int32_t>& lower, const UntouchedVector<int32_t>& upper, std::vector<Cut>& out) const {
        const int64_t m = static_cast<int64_t>(lower.size());
        const bool threads = static_cast<size_t>(m) >= kThreadsFrom;
        std::vector<int64_t> start(static_cast<size_t>(n_) + 1, 0);
#pragma omp parallel for schedule(static) if (threads)
        for (int64_t k = 0; k < m; ++k)
            std::atomic_ref<int64_t>(start[static_cast<size_t>(lower[static_cast<size_t>(k)]) + 1]).fetch_add(1, std::memory_order_relaxed);
        for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
        UntouchedVector<int32_t> other(lower.size());
        {
            std::vector<int64_t> fill(start.begin(), start.end() - 1);
#pragma omp parallel for schedule(static) if (threads)
            for (int64_t k = 0; k < m; ++k) {
                const int64_t at = std::atomic_ref<int64_t>(fill[static_cast<size_t>(lower[static_cast<size_t>(k)])]).fetch_add(1, std::memory_order_relaxed);
                other[static_cast<size_t>(at)] = upper[static_cast<size_t>(k)];
            }
        }
        const size_t first = out.size();
        out.resize(first + lower.size());
#pragma omp parallel for schedule(static, 4096) if (threads)
        for (int32_t v = 0; v < n_; ++v) {
            const auto b = other.begin() + start[static_cast<size_t>(v)], e = other.begin() + start[static_cast<size_t>(v) + 1];
            std::sort(b, e, [](int32_t x, int32_t y) { return static_cast<uint32_t>(x) < static_cast<uint32_t>(y); });
            const Residue& a = res_[static_cast<size_t>(v)].res;
            for (auto it = b; it != e; ++it)
                out[first + static_cast<size_t>(it - other.begin())] =
                    *it < 0 ? make_ground_cut(a, H_, W_) : make_pair_cut(a, res_[static_cast<size_t>(*it)].res);
        }
    }

    int32_t lake_index(int64_t id) const {
        return static_cast<int32_t>(std::lower_bound(lake_ids_.begin(), lake_ids_.end(), id) - lake_ids_.begin());
    }
    // Every node points at its cluster's root directly (unite relabels the smaller side), so
    // the searches read the partition without writing it.
    int32_t root(int32_t x) const { return parent_[static_cast<size_t>(x)]; }
    bool is_open(int32_t r) const { return r != ground_ && charge_[static_cast<size_t>(r)] != 0; }
    // Joins two roots (their member heaps too); the ground stays its class's root, otherwise
    // the larger class's root.
    void unite(int32_t a, int32_t b) {
        if (a == b) return;
        if (b == ground_ || (a != ground_ && size_[static_cast<size_t>(b)] > size_[static_cast<size_t>(a)])) std::swap(a, b);
        absorb(a, b);
    }
    // Root b joins root a.
    void absorb(int32_t a, int32_t b) {
        for (int32_t v = b; v >= 0; v = next_member_[static_cast<size_t>(v)]) parent_[static_cast<size_t>(v)] = a;
        if (a != ground_) {  // the ground's members are never relabelled again: no list
            next_member_[static_cast<size_t>(last_member_[static_cast<size_t>(a)])] = b;
            last_member_[static_cast<size_t>(a)] = last_member_[static_cast<size_t>(b)];
        }
        size_[static_cast<size_t>(a)] += size_[static_cast<size_t>(b)];
        charge_[static_cast<size_t>(a)] += charge_[static_cast<size_t>(b)];
        heap_[static_cast<size_t>(a)] = meld(heap_[static_cast<size_t>(a)], heap_[static_cast<size_t>(b)]);
        heap_[static_cast<size_t>(b)] = -1;
    }

    // Pairing heap of a cluster's members, one node per member, keyed by its best edge.
    int32_t meld(int32_t a, int32_t b) {
        if (a < 0) return b;
        if (b < 0) return a;
        if (node_[static_cast<size_t>(b)].key < node_[static_cast<size_t>(a)].key) std::swap(a, b);
        node_[static_cast<size_t>(b)].sibling = node_[static_cast<size_t>(a)].child;
        node_[static_cast<size_t>(a)].child = b;
        return a;
    }
    int32_t pop_min(int32_t top, std::vector<int32_t>& kids) {
        kids.clear();
        for (int32_t c = node_[static_cast<size_t>(top)].child; c >= 0;) {
            const int32_t nx = node_[static_cast<size_t>(c)].sibling;
            node_[static_cast<size_t>(c)].sibling = -1;
            kids.push_back(c);
            c = nx;
        }
        node_[static_cast<size_t>(top)].child = -1;
        if (kids.empty()) return -1;
        size_t k = 0;
        for (; k + 1 < kids.size(); k += 2) kids[k / 2] = meld(kids[k], kids[k + 1]);
        size_t m = k / 2;
        if (k < kids.size()) kids[m++] = kids[k];
        int32_t h = kids[m - 1];
        for (size_t i = m - 1; i-- > 0;) h = meld(kids[i], h);
        return h;
    }

    // Node v's best edge leaving its cluster, or a lower bound of it when that edge lies beyond
    // `bound` (target kPartial: searched on when it tops its heap); target -1 when none.
    void refresh(int32_t v, const EdgeKey& bound) {
        const int32_t rv = root(v);
        EdgeKey best{};
        int32_t tgt = -1;
        if (v >= n_) {  // a lake: its edges weigh 0 and come in its residues' id order
            const size_t l = static_cast<size_t>(v - n_);
            int64_t& cur = lake_cursor_[l];
            while (cur < adj_start_[l + 1] && root(adj_[static_cast<size_t>(cur)]) == rv) ++cur;
            if (cur < adj_start_[l + 1]) {
                tgt = adj_[static_cast<size_t>(cur)];
                best = EdgeKey{0, res_[static_cast<size_t>(tgt)].res.id, kLakeKeyBase + lake_ids_[l]};
            }
        } else {
            const ClusterResidue& x = res_[static_cast<size_t>(v)];
            const Residue& a = x.res;
            best = EdgeKey{ground_choice(a.r, a.c, H_, W_).weight, a.id, kGroundId};
            tgt = ground_;
            for (int64_t l : x.lake) {
                if (l == kGroundedLake) {
                    const EdgeKey k{0, a.id, kGroundedLakeKey};
                    if (k < best) best = k, tgt = ground_;
                } else if (l >= 0) {
                    const int32_t ln = n_ + lake_index(l);
                    const EdgeKey k{0, a.id, kLakeKeyBase + l};
                    if (k < best && root(ln) != rv) best = k, tgt = ln;
                }
            }
            const int64_t need = std::min(radius_, best.w);  // pairs farther never win
            int64_t w = 0;
            const int32_t j = next_pair(v, rv, std::min(need, bound.w), w);
            if (j >= 0) {
                const EdgeKey k = pair_key(w, a.id, res_[static_cast<size_t>(j)].res.id);
                if (k < best) best = k, tgt = j;
            } else if (cursor_[static_cast<size_t>(v)].w <= need) {
                best = EdgeKey{cursor_[static_cast<size_t>(v)].w, INT64_MIN, INT64_MIN}, tgt = kPartial;
            }
        }
        node_[static_cast<size_t>(v)].key = best;
        node_[static_cast<size_t>(v)].target = tgt;
    }

    // v's next pair candidate outside its cluster within `limit` (the shared ring walk).
    int32_t next_pair(int32_t v, int32_t rv, int64_t limit, int64_t& w_out) {
        const Residue& a = res_[static_cast<size_t>(v)].res;
        return tessera::next_pair(occ_, a.r, a.c, v, cursor_[static_cast<size_t>(v)], limit,
                                  [&](int32_t j) { return root(j) != rv; }, w_out);
    }

    std::span<const ClusterResidue> res_;
    int64_t H_, W_, radius_;
    int32_t n_, ground_ = 0;
    std::vector<int64_t> lake_ids_;
    UntouchedVector<int32_t> parent_, size_, next_member_, last_member_;  // root; a root's member list
    UntouchedVector<int32_t> link_, group_, head_;  // join_on_threads: tree links; a root's joining clusters
    UntouchedVector<int64_t> charge_;
    // Per node (residues, then lakes): its best edge, the heap links, the cluster's heap top.
    struct Node {  // one cache line's worth: a heap step touches one place
        EdgeKey key;
        int32_t target = -1, child = -1, sibling = -1;
    };
    UntouchedVector<Node> node_;
    UntouchedVector<int32_t> heap_;
    UntouchedVector<RingCursor> cursor_;
    std::vector<int64_t> adj_start_, lake_cursor_;
    std::vector<int32_t> adj_;
    PlaquetteBitmap occupied_;
    PlaquetteBits occ_;
};

}  // namespace

std::vector<int64_t> lake_ids_of(std::span<const ClusterResidue> res) {
    // Each thread its run of residues, a lake listed again only after another (residues on one
    // shore follow each other): sorting every touch serially took 0.6 s of the device rule's setup
    // for 12.5 M residues (H200 host, 32768² holes with coherence).
    const int64_t n = static_cast<int64_t>(res.size());
    std::vector<std::vector<int64_t>> part;
#pragma omp parallel if (n >= 65536)
    {
#pragma omp single
        part.resize(static_cast<size_t>(omp_get_num_threads()));
        const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
        std::vector<int64_t>& ids = part[static_cast<size_t>(t)];
        int64_t last = -1;
        for (int64_t i = n * t / T; i < n * (t + 1) / T; ++i)
            for (int64_t l : res[static_cast<size_t>(i)].lake)
                if (l >= 0 && l != last) ids.push_back(last = l);
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
    std::vector<int64_t> ids;
    for (const std::vector<int64_t>& p : part) ids.insert(ids.end(), p.begin(), p.end());
    if (part.size() > 1) {
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
    return ids;
}

void cut_clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius, std::vector<Cut>& out,
                  ClusterStats& stats) {
    if (res.empty()) return;
    Lap clock;
    Clusters clusters(res, H, W, radius);
    if (trace_on() && res.size() >= 100000) std::fprintf(stderr, "tessera: cut_clusters setup %.1f ms\n", clock.next_ms());
    clusters.run(out, stats);
}

}  // namespace tessera
