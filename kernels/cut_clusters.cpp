// Section 3's rule in rounds: every residue starts as an open cluster (charge +-1); in each
// round every open cluster takes the smallest candidate edge (weight, lower id, higher id)
// leaving it, and all of them are accepted at once. A cluster is open while its charge is not
// zero and it does not hold the ground. Each node keeps its best edge leaving its cluster when
// it was computed (clusters only grow, so it stays a lower bound, exact while its far end is
// still outside) in its cluster's pairing heap; heaps meld when clusters join. The clusters'
// searches within a round read only the round's partition, so they run on threads.
#include "kernels/cut_clusters.h"

#include "kernels/plaquette_bitmap.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>


namespace tessera {

namespace {

// A node's place in the ring walk of its pair candidates: ring w (L1 distance), position k
// on it, residue s at that plaquette. At one w a residue's pair keys order by the other
// residue's id, i.e. raster order of plaquettes, then sub-index: the walk's order.
struct Cursor {
    int32_t w = 0, k = 0, s = 0;
};

inline constexpr int32_t kPartial = -2;  // a node's key is a lower bound: its search goes on

class Clusters {
public:
    Clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius)
        : res_(res), H_(H), W_(W), radius_(radius), n_(static_cast<int32_t>(res.size())) {
        for (const ClusterResidue& x : res)
            for (int64_t l : x.lake)
                if (l >= 0) lake_ids_.push_back(l);
        std::sort(lake_ids_.begin(), lake_ids_.end());
        lake_ids_.erase(std::unique(lake_ids_.begin(), lake_ids_.end()), lake_ids_.end());
        const int32_t L = static_cast<int32_t>(lake_ids_.size());
        ground_ = n_ + L;
        const size_t N = static_cast<size_t>(ground_) + 1;
        parent_.resize(N), size_.assign(N, 1), charge_.assign(N, 0);
        next_member_.assign(N, -1), last_member_.resize(N);
        for (size_t v = 0; v < N; ++v) parent_[v] = last_member_[v] = static_cast<int32_t>(v);
        for (int32_t i = 0; i < n_; ++i) charge_[static_cast<size_t>(i)] = res[static_cast<size_t>(i)].res.sign;
        node_.assign(N, Node{}), heap_.assign(N, -1);
        cursor_.assign(static_cast<size_t>(n_), Cursor{});
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
    }

    void run(std::vector<Cut>& out, ClusterStats& st) {
#pragma omp parallel for schedule(dynamic, 1024) if (static_cast<size_t>(ground_) >= kThreadsFrom)
        for (int32_t v = 0; v < ground_; ++v) {
            refresh(v, EdgeKey{});
            heap_[static_cast<size_t>(v)] = v;
        }
        std::vector<int32_t> open(static_cast<size_t>(n_)), next;  // lakes start balanced: closed
        for (int32_t i = 0; i < n_; ++i) open[static_cast<size_t>(i)] = i;
        std::vector<Pick> pick;
        std::vector<int32_t> slot(static_cast<size_t>(ground_) + 1, -1);
        std::vector<uint32_t> stamp(slot.size(), 0);
        std::vector<int64_t> at;  // each pick's place in `out`, or -1
        std::vector<int32_t> lower;  // each new cut's lower-id residue
        const size_t first = out.size();
        for (uint32_t round = 1; !open.empty(); ++round) {
            const size_t n_open = open.size();
            pick.resize(n_open), at.resize(n_open);
            const size_t base = out.size();
#pragma omp parallel if (n_open >= kThreadsFrom)
            {
                std::vector<int32_t> scratch;
#pragma omp for schedule(dynamic, 64)
                for (size_t i = 0; i < n_open; ++i) pick[i] = best_leaving(open[i], scratch);
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
                    out.resize(static_cast<size_t>(next_at)), lower.resize(out.size() - first);
                }
#pragma omp for schedule(static)
                for (size_t i = 0; i < n_open; ++i) {
                    slot[static_cast<size_t>(open[i])] = -1;
                    if (at[i] < 0) continue;
                    out[static_cast<size_t>(at[i])] = cut_of(pick[i]);
                    const int32_t t = node_[static_cast<size_t>(pick[i].node)].target;
                    lower[static_cast<size_t>(at[i]) - first] = pick[i].key.hi == kGroundId ? pick[i].node : std::min(pick[i].node, t);
                }
            }
            for (size_t i = 0; i < n_open; ++i) unite(root(open[i]), root(pick[i].to));
            next.clear();
            for (const int32_t x : open) {
                const int32_t r = root(x);
                if (is_open(r) && stamp[static_cast<size_t>(r)] != round) stamp[static_cast<size_t>(r)] = round, next.push_back(r);
            }
            std::swap(open, next);
        }
        sort_cuts(out, first, lower);
    }

private:
    static constexpr size_t kThreadsFrom = 2048;  // fewer clusters than this: one thread
    struct Pick {
        EdgeKey key;
        int32_t node = -1, to = -1;  // the member whose edge it is; the far end's cluster
    };

    // Cluster x's smallest edge leaving it: its heap top once that is exact and points out.
    Pick best_leaving(int32_t x, std::vector<int32_t>& scratch) {
        int32_t& top = heap_[static_cast<size_t>(x)];
        for (;;) {
            const int32_t m = top;
            if (m < 0) throw std::logic_error("cut_clusters: an open cluster has no edge leaving it");
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

    // out[first..] into cut_order: by the lower-id residue's index (residues are in id order),
    // counted, then each residue's few cuts by their other end.
    void sort_cuts(std::vector<Cut>& out, size_t first, const std::vector<int32_t>& lower) const {
        std::vector<int64_t> start(static_cast<size_t>(n_) + 1, 0);
        for (const int32_t v : lower) ++start[static_cast<size_t>(v) + 1];
        for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
        std::vector<Cut> sorted(lower.size());
        std::vector<int64_t> fill(start.begin(), start.end() - 1);
        for (size_t k = 0; k < lower.size(); ++k) sorted[static_cast<size_t>(fill[static_cast<size_t>(lower[k])]++)] = out[first + k];
        for (size_t v = 0; v < static_cast<size_t>(n_); ++v)
            if (start[v + 1] - start[v] > 1) std::sort(sorted.begin() + start[v], sorted.begin() + start[v + 1], cut_order);
        std::copy(sorted.begin(), sorted.end(), out.begin() + static_cast<std::ptrdiff_t>(first));
    }

    Cut cut_of(const Pick& p) const {
        const Residue& a = res_[static_cast<size_t>(p.node)].res;
        if (p.key.hi == kGroundId) return make_ground_cut(a, H_, W_);
        return make_pair_cut(a, res_[static_cast<size_t>(node_[static_cast<size_t>(p.node)].target)].res);
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

    // Walks v's cursor past residues of v's cluster; returns the first one outside no farther
    // than `limit`, its distance in w, or -1. The cursor stays on it.
    int32_t next_pair(int32_t v, int32_t rv, int64_t limit, int64_t& w_out) {
        const Residue& a = res_[static_cast<size_t>(v)].res;
        Cursor& cu = cursor_[static_cast<size_t>(v)];
        if (cu.w >= 1 && cu.k == 0 && cu.s == 0) {  // at a ring's start: jump over empty rings
            const int64_t d = nearest_occupied(a.r, a.c, cu.w, limit);
            if (d > cu.w) cu.w = static_cast<int32_t>(std::min<int64_t>(d, limit + 1));
        }
        for (; cu.w <= limit; ++cu.w, cu.k = 0, cu.s = 0) {
            const int32_t positions = cu.w == 0 ? 1 : 4 * cu.w;
            for (; cu.k < positions; ++cu.k, cu.s = 0) {
                int64_t dr = 0, dc = 0;
                if (cu.w > 0) {
                    if (cu.k == 0) {
                        dr = -cu.w;
                    } else if (cu.k == positions - 1) {
                        dr = cu.w;
                    } else {
                        const int64_t t = cu.k - 1;
                        dr = -cu.w + 1 + t / 2;
                        const int64_t rem = cu.w - std::abs(dr);
                        dc = t % 2 == 0 ? -rem : rem;
                    }
                }
                const int64_t r = a.r + dr, c = a.c + dc;
                if (!occupied_.inside(r, c)) continue;
                const int64_t b = occupied_.bit(r, c);
                if (!occupied_.test(b)) continue;
                const auto [first, end] = occupied_.residues(b);
                for (int32_t j = first + cu.s; j < end; ++j, ++cu.s)
                    if (j != v && root(j) != rv) {
                        w_out = cu.w;
                        return j;
                    }
            }
        }
        return -1;
    }

    // The smallest L1 distance d, from <= d <= limit, of an occupied plaquette from (r, c)
    // (from >= 1), or limit + 1: two bit scans a row instead of a walk over every position.
    int64_t nearest_occupied(int64_t r, int64_t c, int64_t from, int64_t limit) const {
        int64_t best = limit + 1;
        for (int64_t dr = -limit; dr <= limit; ++dr) {
            const int64_t adr = std::abs(dr);
            if (adr >= best) continue;
            const int64_t m = std::max<int64_t>(from - adr, 0), span = best - 1 - adr;
            if (m > span) continue;
            int64_t b0, b1;
            if (occupied_.row_span(r + dr, c + m, c + span, b0, b1)) {  // right of c
                const int64_t at = occupied_.first_set(b0, b1);
                if (at >= 0) best = std::min(best, adr + (at - occupied_.bit(r + dr, c)));  // bits are linear in x
            }
            if (occupied_.row_span(r + dr, c - span, c - m, b0, b1)) {  // left of c
                const int64_t at = occupied_.last_set(b0, b1);
                if (at >= 0) best = std::min(best, adr + (occupied_.bit(r + dr, c) - at));
            }
        }
        return best;
    }

    std::span<const ClusterResidue> res_;
    int64_t H_, W_, radius_;
    int32_t n_, ground_ = 0;
    std::vector<int64_t> lake_ids_;
    std::vector<int32_t> parent_, size_, next_member_, last_member_;  // root; a root's member list
    std::vector<int64_t> charge_;
    // Per node (residues, then lakes): its best edge, the heap links, the cluster's heap top.
    struct Node {  // one cache line's worth: a heap step touches one place
        EdgeKey key;
        int32_t target = -1, child = -1, sibling = -1;
    };
    std::vector<Node> node_;
    std::vector<int32_t> heap_;
    std::vector<Cursor> cursor_;
    std::vector<int64_t> adj_start_, lake_cursor_;
    std::vector<int32_t> adj_;
    PlaquetteBitmap occupied_;
};

}  // namespace

void cut_clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius, std::vector<Cut>& out,
                  ClusterStats& stats) {
    if (res.empty()) return;
    Clusters(res, H, W, radius).run(out, stats);
}

}  // namespace tessera
