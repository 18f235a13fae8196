// Section 3.3's rounds as data-parallel steps over flat arrays (docs/ARCHITECTURE.md 3.3):
// the CUDA backend's form of the rule (kernels/cuda/cut_rounds.cu runs each step over its
// index range on the device; tests run them in a serial loop). It gives the cuts of
// kernels/cut_clusters.h, in the same order, from the same numerics (kernels/cut_numerics.h).
//
// Nodes: residues 0..n-1 (id order), lakes n..n+L-1 (id order), the ground G = n + L (the
// border and grounded lakes). Every node holds its cluster's root (label); a round:
//   search  each node of an open cluster: its best edge leaving the cluster (a cached key
//           stays while its far end is outside: clusters only grow, candidates only vanish;
//           else ground and lake edges and the ring cursor, which only advances); a 64-bit
//           minimum per cluster (RankKeys);
//   pick    each open cluster: its minimum is taken; an edge two clusters take counts once;
//           it links to the far cluster (the lower of two that took each other: itself);
//   jump    each open cluster walks toward its tree's root (path halving);
//   settle  each open cluster links to its tree's root;
//   reopen  a root that was closed and is now joined by open ones is listed with its member
//           list's end (its members join the search);
//   merge   each linked cluster: charge to the root, member list appended to the root's;
//   relabel each node of an open cluster: the root as label; kept if the root is open.
//   wake    each listed root, if open: its own members join the next round's nodes.
// Which thread wins an atomic changes list orders only; keys, roots and cuts do not depend on
// it (cuts are sorted at the end). C++17.
#pragma once
#include <cstdint>

#include "kernels/cut_numerics.h"
#include "kernels/hostdev.h"

#if defined(__CUDACC__)
#include <cooperative_groups.h>
#endif

namespace tessera {

// Atomics of the steps: device atomics under nvcc's device pass, plain operations in the
// serial host loop.
namespace hd {
TESSERA_HOSTDEV inline void atomic_min(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
    atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
    if (v < *p) *p = v;
#endif
}
TESSERA_HOSTDEV inline int32_t atomic_add(int32_t* p, int32_t v) {
#if defined(__CUDA_ARCH__)
    return atomicAdd(p, v);
#else
    const int32_t old = *p;
    *p += v;
    return old;
#endif
}
TESSERA_HOSTDEV inline int32_t atomic_exch(int32_t* p, int32_t v) {
#if defined(__CUDA_ARCH__)
    return atomicExch(p, v);
#else
    const int32_t old = *p;
    *p = v;
    return old;
#endif
}
// A slot in a list for each calling thread: on the device one atomic a warp's converged
// lanes (thousands of nodes append to one list a round).
TESSERA_HOSTDEV inline int32_t claim_slot(int32_t* count) {
#if defined(__CUDA_ARCH__)
    const cooperative_groups::coalesced_group g = cooperative_groups::coalesced_threads();
    int32_t base = 0;
    if (g.thread_rank() == 0) base = atomicAdd(count, static_cast<int32_t>(g.size()));
    return g.shfl(base, 0) + static_cast<int32_t>(g.thread_rank());
#else
    return (*count)++;
#endif
}
// Reads and writes of words other threads change in the same step: through L2 on the device.
template <class T>
TESSERA_HOSTDEV inline T load(const T* p) {
#if defined(__CUDA_ARCH__)
    return __ldcg(p);
#else
    return *p;
#endif
}
template <class T>
TESSERA_HOSTDEV inline void store(T* p, T v) {
#if defined(__CUDA_ARCH__)
    __stcg(p, v);
#else
    *p = v;
#endif
}
}  // namespace hd

struct RoundCounts {
    int32_t active = 0, open = 0;            // this round's lists
    int32_t next_active = 0, next_open = 0;  // the next round's, being filled
    int32_t reopened = 0;
    int32_t round = 1;
    int32_t cuts = 0, ground_cuts = 0, lake_joins = 0;
    int32_t broken = 0;    // a step found the state inconsistent (a bug): which step, 1-based
    int64_t searched = 0;  // active nodes summed over the rounds (the searches' work)
};

// A cut as one sortable word: lower residue, then the other end (the border: all ones, last).
TESSERA_HOSTDEV inline uint64_t cut_code(int32_t lower, int32_t upper) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(lower)) << 32) | static_cast<uint32_t>(upper);
}

struct RoundState {
    // Input (3.2): residue plaquettes, their lakes as nodes (G: grounded, -1: none), each
    // lake's residues ascending, the occupied plaquettes, the key layout.
    int32_t n = 0, L = 0, G = 0;
    int64_t H = 0, W = 0, radius = 0;
    const int32_t* rr = nullptr;
    const int32_t* rc = nullptr;
    const int32_t* lake_node = nullptr;  // 2 per residue
    const int32_t* adj_start = nullptr;  // L + 1
    const int32_t* adj = nullptr;
    PlaquetteBits occ;
    RankKeys keys;
    // State, per node (N = n + L + 1).
    int32_t* label = nullptr;
    int32_t* charge = nullptr;
    uint64_t* key = nullptr;     // the node's best leaving edge when last searched (kNone: search)
    int32_t* target = nullptr;   // its far end
    RingCursor* cursor = nullptr;  // residues
    int32_t* lake_cursor = nullptr;  // lakes, into adj
    int32_t* next_member = nullptr;  // a root's member list: root first, -1 ends it
    int32_t* tail = nullptr;
    int32_t* old_tail = nullptr;  // a reopened root's list end before the merge
    uint64_t* best = nullptr;     // an open root's minimum
    int32_t* link = nullptr;      // a node's tree parent in the round's join (itself: a root)
    int32_t* stamp = nullptr;     // round in which a root is on the open list
    int32_t* reopen_stamp = nullptr;
    // Lists: [round & 1] this round's, [(round + 1) & 1] the next's.
    int32_t* active[2] = {nullptr, nullptr};
    int32_t* open[2] = {nullptr, nullptr};
    int32_t* reopened = nullptr;
    uint64_t* cuts = nullptr;  // cut_code of each accepted cut (at most n)
    RoundCounts* counts = nullptr;

    TESSERA_HOSTDEV bool is_open(int32_t r) const { return r != G && hd::load(charge + r) != 0; }

    // Node v's best edge leaving cluster rv (section 3.2's candidates), cached.
    TESSERA_HOSTDEV uint64_t node_best(int32_t v, int32_t rv) const {
        const uint64_t cached = hd::load(key + v);
        if (cached != RankKeys::kNone && hd::load(label + hd::load(target + v)) != rv) return cached;
        uint64_t best_key = RankKeys::kNone;
        int32_t tgt = -1;
        if (v >= n) {  // a lake: weight 0, its residues in id order
            const int32_t l = v - n;
            int32_t cur = hd::load(lake_cursor + l);
            while (cur < adj_start[l + 1] && hd::load(label + adj[cur]) == rv) ++cur;
            hd::store(lake_cursor + l, cur);
            if (cur < adj_start[l + 1]) tgt = adj[cur], best_key = keys.pack(0, tgt, v);
        } else {
            const GroundChoice g = ground_choice(rr[v], rc[v], H, W);
            best_key = keys.pack(g.weight, v, n + L + 1), tgt = G;
            for (int s = 0; s < 2; ++s) {
                const int32_t ln = lake_node[2 * v + s];
                if (ln < 0) continue;
                if (ln == G) {
                    const uint64_t k = keys.pack(0, v, n + L);
                    if (k < best_key) best_key = k, tgt = G;
                } else if (hd::load(label + ln) != rv) {
                    const uint64_t k = keys.pack(0, v, ln);
                    if (k < best_key) best_key = k, tgt = ln;
                }
            }
            const int64_t need = hd::min(radius, keys.w(best_key));  // pairs farther never win
            int64_t w = 0;
            RingCursor cu = cursor[v];
            const int32_t j = next_pair(occ, rr[v], rc[v], v, cu, need,
                                        [&](int32_t x) { return hd::load(label + x) != rv; }, w);
            cursor[v] = cu;
            if (j >= 0) {
                const uint64_t k = v < j ? keys.pack(w, v, j) : keys.pack(w, j, v);
                if (k < best_key) best_key = k, tgt = j;
            }
        }
        hd::store(key + v, best_key), hd::store(target + v, tgt);
        return best_key;
    }

    TESSERA_HOSTDEV void search(int32_t i) const {
        const int32_t v = hd::load(active[counts_round() & 1] + i);
        const int32_t rv = hd::load(label + v);
        const uint64_t k = node_best(v, rv);
        // Most members of a large cluster cannot lower its minimum: no atomic for them.
        if (k != RankKeys::kNone && k < hd::load(best + rv)) hd::atomic_min(best + rv, k);
    }

    // The far end's node of an edge key (G for the border and grounded lakes).
    TESSERA_HOSTDEV int32_t hi_node(int32_t hi) const { return hi >= n + L ? G : hi; }

    TESSERA_HOSTDEV void pick(int32_t i) const {
        const int32_t round = counts_round();
        const int32_t x = hd::load(open[round & 1] + i);
        const uint64_t k = hd::load(best + x);
        if (k == RankKeys::kNone) return fail(2);
        const int32_t lo = keys.lo(k), hi = keys.hi(k);
        const int32_t llo = hd::load(label + lo);
        const int32_t y = llo == x ? hd::load(label + hi_node(hi)) : llo;
        const bool twice = hd::load(stamp + y) == round && hd::load(best + y) == k;
        if (!(twice && x > y)) {
            if (hi < n || hi == n + L + 1) {
                const int32_t at = hd::atomic_add(&counts->cuts, 1);
                hd::store(cuts + at, cut_code(lo, hi < n ? hi : -1));
                if (hi >= n) hd::atomic_add(&counts->ground_cuts, 1);
            } else {
                hd::atomic_add(&counts->lake_joins, 1);
            }
        }
        hd::store(link + x, twice && x < y ? x : y);
    }

    TESSERA_HOSTDEV void jump(int32_t i) const {
        const int32_t x = hd::load(open[counts_round() & 1] + i);
        int32_t r = x;
        for (int32_t steps = 0;; ++steps) {
            if (steps > n + L) return fail(3);
            const int32_t p = hd::load(link + r);
            if (p == r) break;
            const int32_t pp = hd::load(link + p);
            if (pp != p) hd::store(link + r, pp);  // an ancestor: any thread may write it
            r = pp;
        }
    }

    // After jump (whose halving may still overwrite a link with a nearer ancestor while the
    // step runs): each open cluster's link becomes its root; only roots are written here.
    TESSERA_HOSTDEV void settle(int32_t i) const {
        const int32_t x = hd::load(open[counts_round() & 1] + i);
        int32_t r = x;
        for (int32_t steps = 0;; ++steps) {
            if (steps > n + L) return fail(4);
            const int32_t p = hd::load(link + r);
            if (p == r) break;
            r = p;
        }
        if (r != x) hd::store(link + x, r);
    }

    TESSERA_HOSTDEV void reopen(int32_t i) const {
        const int32_t round = counts_round();
        const int32_t x = hd::load(open[round & 1] + i), R = hd::load(link + x);
        if (R == x || R == G || hd::load(stamp + R) == round) return;
        if (hd::atomic_exch(reopen_stamp + R, round) == round) return;
        hd::store(reopened + hd::atomic_add(&counts->reopened, 1), R);
        hd::store(old_tail + R, hd::load(tail + R));
    }

    TESSERA_HOSTDEV void merge(int32_t i) const {
        const int32_t x = hd::load(open[counts_round() & 1] + i), R = hd::load(link + x);
        if (R == x) return;
        hd::atomic_add(charge + R, hd::load(charge + x));
        if (R == G) return;  // the ground's members are never listed again
        const int32_t prev = hd::atomic_exch(tail + R, hd::load(tail + x));
        hd::store(next_member + prev, x);
    }

    TESSERA_HOSTDEV void add_next(int32_t v, int32_t R) const {
        const int32_t next = (counts_round() + 1) & 1;
        const int32_t at = hd::claim_slot(&counts->next_active);
        if (at > n + L) return fail(6);
        hd::store(active[next] + at, v);
        // The first of R's members here lists R; the read spares the others an atomic.
        const int32_t next_round = counts_round() + 1;
        if (hd::load(stamp + R) != next_round && hd::atomic_exch(stamp + R, next_round) != next_round) {
            hd::store(best + R, RankKeys::kNone);
            hd::store(open[next] + hd::atomic_add(&counts->next_open, 1), R);
        }
    }

    TESSERA_HOSTDEV void relabel(int32_t i) const {
        const int32_t v = hd::load(active[counts_round() & 1] + i);
        const int32_t R = hd::load(link + hd::load(label + v));
        hd::store(label + v, R);
        if (is_open(R)) add_next(v, R);
    }

    TESSERA_HOSTDEV void wake(int32_t i) const {
        const int32_t R = hd::load(reopened + i);
        if (!is_open(R)) return;
        int32_t steps = 0;
        for (int32_t v = R;; v = hd::load(next_member + v)) {
            if (v < 0 || ++steps > n + L + 1) return fail(7);
            add_next(v, R);
            if (v == hd::load(old_tail + R)) break;
        }
    }

    TESSERA_HOSTDEV void fail(int32_t step) const { hd::store(&counts->broken, step); }

    // After a round (one thread): the next round's lists become current.
    // Counts that atomics changed are read through L2: an SM's L1 may hold a stale copy.
    TESSERA_HOSTDEV void finish_round() const {
        RoundCounts* c = counts;
        hd::store(&c->searched, hd::load(&c->searched) + hd::load(&c->active));
        hd::store(&c->active, hd::load(&c->next_active));
        hd::store(&c->open, hd::load(&c->next_open));
        hd::store(&c->next_active, 0), hd::store(&c->next_open, 0), hd::store(&c->reopened, 0);
        hd::store(&c->round, hd::load(&c->round) + 1);
    }

    TESSERA_HOSTDEV int32_t counts_round() const { return hd::load(&counts->round); }
};

}  // namespace tessera
