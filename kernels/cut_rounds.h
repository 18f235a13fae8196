// Section 3.3's rounds as data-parallel steps over flat arrays (docs/ARCHITECTURE.md 3.3):
// the CUDA backend's form of the rule (kernels/cuda/cut_rounds.cu runs each step over its
// index range on the device; tests run them in a serial loop). It gives the cuts of
// kernels/cut_clusters.h, in the same order, from the same numerics (kernels/cut_numerics.h).
//
// Nodes: residues 0..n-1 (id order), lakes n..n+L-1 (id order), the ground G = n + L (the
// border and grounded lakes). Every node holds its cluster's id (label): the id of one of its
// nodes, its representative. The members of open clusters are listed each round (active),
// except those of at most one large cluster, the parked one (big), whose members stay in an
// array (bmem) with a hot set: every member outside hot and outside the members added since
// the last sift (new) has a cached key >= theta (keys only grow), so a minimum below theta
// found among hot and new is the cluster's minimum. The other open clusters' members may be
// cold: in a pool (cpool), not listed, each with a cached key >= its cluster's ctheta. A round:
//   search  each node of the active list and big's hot and new (search_vertex): its best
//           edge leaving the cluster (a cached key stays while its far end is outside:
//           cached_best; clusters only grow, candidates only vanish; else node_search: ground
//           and lake edges and the ring cursor, which only advances; its lake-shore and ring
//           walks run on one thread, next_pair, or on a warp, the same answer and cursor); a
//           64-bit minimum per cluster (RankKeys);
//   coldchk each open cluster whose minimum is not below its ctheta: its cold members searched;
//   coldsrch each pool entry: searched and listed if its cluster's are, else kept (coldturn);
//   check   big's minimum >= theta (or hot too large): full search of bmem, a strided sample
//           of its keys sorted, theta from it (about `hot` keys below it);
//   sift    hot for the next round: the searched members (or all of bmem) with key < theta;
//   pick    each open cluster: its minimum is taken; an edge two clusters take counts once;
//           it links to the far cluster (the lower of two that took each other: itself);
//   jump    each open cluster walks toward its tree's root (path halving);
//   settle  each open cluster links to its tree's root;
//   elect   each tree's representative: its largest cluster (member count, then id; the
//           ground's tree: the ground); a closed root joined is listed (reopened);
//   merge   each cluster of a tree but its representative P: charge, size and member list
//           to P, links to P (the parked cluster absorbed: bmem handed to P);
//   fix     each representative: its size key; the first large open one parks (big);
//   wake    each listed closed root's members (a walk of its list into wbuf; a scan of all
//           nodes when it is large);
//   wakejoin each member in wbuf (and scan: each scanned member): P as label; into bmem if P
//           is big, else listed if P is open;
//   coldmove (a cluster with cold members absorbed, closed or parked) each pool entry: P as
//           label; kept while P is open and not big, else joins P (coldtrn2);
//   relabel each active node: P as label (members of P keep it); listed if P is open (into
//           bmem if P is big), or cold when its key passes its cluster's minimum by more than
//           cold_margin; the handed-over bmem: P as label.
//   finish  one thread: the next round's lists become current; big listed if open, freed
//           if closed (a large open cluster may park next).
// With one cluster open (the tail), pick through wake run on one thread (link_one), beside
// sift on the device; in the usual such round (it joins a closed root: link_pair) with each
// word read once and the steps' effects written directly.
// Which thread wins an atomic changes list orders only; keys, picks and cuts do not depend on
// it (cuts are sorted at the end), nor on which cluster represents a tree. C++17.
#pragma once
#include <cstdint>

#include "kernels/cut_numerics.h"
#include "kernels/hostdev.h"

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
TESSERA_HOSTDEV inline void atomic_max(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
    atomicMax(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
    if (v > *p) *p = v;
#endif
}
TESSERA_HOSTDEV inline void atomic_add(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
    *p += v;
#endif
}
TESSERA_HOSTDEV inline int32_t atomic_cas(int32_t* p, int32_t expect, int32_t v) {
#if defined(__CUDA_ARCH__)
    return atomicCAS(p, expect, v);
#else
    const int32_t old = *p;
    if (old == expect) *p = v;
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
// A slot in a list for each calling thread: on the device one atomic for the warp's active
// lanes that append to the same list (thousands of nodes append to one list a round). Lanes
// are grouped by the counter's address, so a group never mixes lists, whatever call sites
// the compiler or the scheduler runs together.
TESSERA_HOSTDEV inline int32_t claim_slot(int32_t* count) {
#if defined(__CUDA_ARCH__)
    const unsigned active = __activemask();
    const unsigned peers = __match_any_sync(active, reinterpret_cast<unsigned long long>(count));
    unsigned below;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(below));
    const int leader = __ffs(peers) - 1;
    int32_t base = 0;
    if ((peers & below) == 0) base = atomicAdd(count, __popc(peers));
    return __shfl_sync(peers, base, leader) + __popc(peers & below);
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

// The steps of a round, in order (kSort: the drivers sort the sample between kSample and kTheta).
enum RoundStep : int32_t {
    kSearch, kColdCheck, kColdSearch, kColdTurn, kCheck, kFull, kSample, kSort, kTheta, kSift, kPick, kJump, kSettle,
    kElect, kMerge, kFix, kWake, kWakeJoin, kScan, kColdMove, kColdTurn2, kRelabel, kFinish
};
inline constexpr int kRoundSteps = kFinish + 1;
// The steps' names (traces, errors).
inline constexpr const char* kStepNames[kRoundSteps] = {
    "search", "coldchk", "coldsrch", "coldturn", "check", "full", "sample", "sort", "theta", "sift", "pick", "jump",
    "settle", "elect", "merge", "fix", "wake", "wakejoin", "scan", "coldmove", "coldtrn2", "relabel", "finish"};
// Steps one thread runs (they change the counts).
TESSERA_HOSTDEV inline bool single_step(RoundStep s) {
    return s == kCheck || s == kTheta || s == kFinish || s == kColdTurn || s == kColdTurn2;
}

// Sample of the parked cluster's keys that sets theta (one block sorts it on the device).
inline constexpr int32_t kThetaSample = 4096;

// When a cluster parks and how large its hot set is (the rule's result does not depend on
// them; tests set them small to run every path).
struct RoundTuning {
    int32_t big_min = 16384;  // members for a cluster to park
    int32_t hot = 1024;       // about this many keys below theta after a full search
    int32_t hot_max = 8192;   // hot + new above this: full search
    int32_t walk_max = 4096;  // a closed root joined with more members: woken by a scan
    // The cold pool: a member goes cold above its cluster's minimum weight + cold_margin (-1: never),
    // from round cold_from on. 8 and 256 are the measured choice (bench/results/gpu_h100_cold_pool.md;
    // TESSERA_COLD_MARGIN=-1 turns it off).
    int32_t cold_margin = 8;
    int32_t cold_from = 256;
    // The device's drivers (kernels/cuda/cut_rounds.cu): the one-block kernel takes rounds with at
    // most this many open clusters (keeps them up to 4x); more go to the grid (with the cold pool on, 8: the 34848² topo
    // mosaic 970 ms, 32: 1037, unbounded: 1094; bench/results/gpu_h100_cold_pool.md).
    int32_t block_open = 8;
};

struct RoundCounts {
    int32_t active = 0, open = 0;            // this round's lists
    int32_t next_active = 0, next_open = 0;  // the next round's, being filled
    int32_t reopened = 0;
    int32_t round = 1;
    int32_t cuts = 0, ground_cuts = 0, lake_joins = 0;
    int32_t broken = 0;    // a step found the state inconsistent (a bug): which step, 1-based
    int64_t searched = 0;  // node searches summed over the rounds (the searches' work)
    // The parked cluster (-1: none) and its arrays' counts.
    int32_t big = -1, big_prev = -1, bopen = 0;  // bopen: big is open this round
    int32_t bcount = 0, bsorted = 0, bsorted_next = 0;  // bmem; [bsorted, bcount): new
    int32_t hot = 0, next_hot = 0;
    int32_t full = 0;  // this round searches all of bmem
    int32_t big_to = -1, hand_from = -1, hand = 0;  // big absorbed by big_to: hand members relabelled
    int32_t scan = 0;  // a large closed root is woken by a scan
    int32_t woken = 0;  // members of walked closed roots listed in wbuf this round
    int64_t walked = 0;  // such members over the rounds
    int32_t fulls = 0, scans = 0, parks = 0;  // events over the rounds (traces)
    int32_t linked_one = 0;  // rounds whose pick..wake ran on one thread (link_one)
    int32_t linked_pair = 0;  // of those, rounds of one open cluster joining a closed root (link_pair)
    // The cold pool ([csel] current; a scan copies what stays into the other) and its scans.
    int32_t csel = 0, ccount = 0, ccount_next = 0;
    int32_t cfull = 0, cmove = 0;       // this round: a cluster's cold members searched; moved
    int32_t cfulls = 0, cmoves = 0;     // such rounds (traces)
    int64_t cold_scanned = 0;           // pool entries scanned (traces)
    uint64_t theta = ~uint64_t{0};
};

// A round's size for the drivers: its active nodes, the parked cluster's hot set and a share of
// the cold pool (scanned in some rounds only, but in one block a large pool's scan is slow).
TESSERA_HOSTDEV inline int32_t round_work(int32_t active, int32_t hot, int32_t pool) { return active + hot + pool / 16; }

// A cut as one sortable word: lower residue, then the other end (the border: all ones, last).
TESSERA_HOSTDEV inline uint64_t cut_code(int32_t lower, int32_t upper) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(lower)) << 32) | static_cast<uint32_t>(upper);
}

// A representative's key: members, then id (the ground's: above all).
TESSERA_HOSTDEV inline uint64_t rep_key(int32_t size, int32_t id) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(size)) << 32) | static_cast<uint32_t>(id);
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
    RoundTuning tune;
    // State, per node (N = n + L + 1).
    int32_t* label = nullptr;
    int32_t* charge = nullptr;
    int32_t* size = nullptr;     // a representative's members
    uint64_t* repk = nullptr;    // a root's largest rep_key in its tree (rep_key(size, id) between rounds)
    uint64_t* key = nullptr;     // the node's best leaving edge when last searched (kNone: search)
    int32_t* target = nullptr;   // its far end
    RingCursor* cursor = nullptr;  // residues
    int32_t* lake_cursor = nullptr;  // lakes, into adj
    int32_t* next_member = nullptr;  // a representative's member list: itself first, -1 ends it
    int32_t* tail = nullptr;
    int32_t* old_tail = nullptr;  // a reopened root's list end before the merge
    uint64_t* best = nullptr;     // an open cluster's minimum
    int32_t* link = nullptr;      // a cluster's tree parent in the round's join (itself: a root), then P
    int32_t* stamp = nullptr;     // round in which a cluster is on the open list
    int32_t* reopen_stamp = nullptr;
    int32_t* scan_stamp = nullptr;  // round in which a closed root is woken by the scan
    // The parked cluster: its members, hot sets ([round & 1] this round's), theta's sample.
    int32_t* bmem = nullptr;
    int32_t* hot[2] = {nullptr, nullptr};
    uint64_t* sample = nullptr;  // kThetaSample
    // Lists: [round & 1] this round's, [(round + 1) & 1] the next's.
    int32_t* active[2] = {nullptr, nullptr};
    int32_t* open[2] = {nullptr, nullptr};
    int32_t* reopened = nullptr;
    uint64_t* cuts = nullptr;  // cut_code of each accepted cut (at most n)
    RoundCounts* counts = nullptr;
    int32_t* wbuf = nullptr;  // N: members of the closed roots joined this round, to wake
    // Cold members of open clusters (not the parked one): each in the pool, none listed; an
    // open cluster's ctheta is at most every cold member's cached key (kNone: none cold).
    uint64_t* ctheta = nullptr;
    uint64_t* bound = nullptr;   // an open cluster's minimum this round (pick)
    int32_t* cstamp = nullptr;   // round in which a cluster's cold members are searched
    int32_t* cpool[2] = {nullptr, nullptr};
    bool local = false;       // one block runs the rounds (plain loads and stores)
    int32_t round_limit = 0;  // > 0: the one-block and grid kernels stop before this round (checks)
    TESSERA_HOSTDEV bool at_limit() const { return round_limit > 0 && counts_round() >= round_limit; }
    // Traces (null: off): a search's ring positions passed, its label probes and lake steps,
    // the round's largest such search, the sum of those maxima over the rounds.
    uint64_t* probes = nullptr;  // 4

    TESSERA_HOSTDEV int32_t nodes() const { return n + L + 1; }
    TESSERA_HOSTDEV bool is_open(int32_t r) const { return r != G && ld(charge + r) != 0; }
    TESSERA_HOSTDEV int32_t counts_round() const { return get(&counts->round); }
    // A round's size, by which the drivers choose their form (round_work).
    TESSERA_HOSTDEV int32_t work() const {
        return round_work(get(&counts->active), get(&counts->bopen) ? get(&counts->hot) : 0, get(&counts->ccount));
    }
    // The counts: in global memory (wide steps) or in the one-block kernel's shared memory, so
    // read and written as volatile words through a generic address (atomics on them too).
    template <class T>
    TESSERA_HOSTDEV T get(const T* field) const {
#if defined(__CUDA_ARCH__)
        return *static_cast<const volatile T*>(field);
#else
        return *field;
#endif
    }
    template <class T, class U>
    TESSERA_HOSTDEV void put(T* field, U v) const {
#if defined(__CUDA_ARCH__)
        *static_cast<volatile T*>(field) = static_cast<T>(v);
#else
        *field = static_cast<T>(v);
#endif
    }
    // The state arrays: through L2 when steps run on many blocks; plain (L1) accesses when one
    // block runs the rounds (its __syncthreads publish a step's writes to the next step).
    template <class T>
    TESSERA_HOSTDEV T ld(const T* p) const {
#if defined(__CUDA_ARCH__)
        return local ? *p : hd::load(p);
#else
        return *p;
#endif
    }
    template <class T>
    TESSERA_HOSTDEV void st(T* p, T v) const {
#if defined(__CUDA_ARCH__)
        if (local) *p = v;
        else hd::store(p, v);
#else
        *p = v;
#endif
    }

    // Each step's index range, from the counts (read on the device: a step's kernel is sized
    // by the host's last look, its threads loop to this).
    TESSERA_HOSTDEV int32_t step_count(RoundStep s) const {
        const RoundCounts* c = counts;
        switch (s) {
            case kSearch:
                return get(&c->active) + (get(&c->bopen) ? get(&c->hot) + get(&c->bcount) - get(&c->bsorted) : 0);
            case kFull: return get(&c->full) ? get(&c->bcount) : 0;
            case kSample: return get(&c->full) ? sample_size() : 0;
            case kSift:
                if (!get(&c->bopen)) return 0;
                return get(&c->full) ? get(&c->bcount) : get(&c->hot) + get(&c->bsorted_next) - get(&c->bsorted);
            case kPick: case kJump: case kSettle: case kElect: return get(&c->open);
            case kMerge: case kFix: return get(&c->open) + get(&c->reopened);
            case kWake: return get(&c->reopened);
            case kWakeJoin: return get(&c->woken);
            case kScan: return get(&c->scan) ? nodes() : 0;
            case kRelabel: return get(&c->active) + get(&c->hand);
            case kColdCheck: return get(&c->ccount) ? get(&c->open) : 0;
            case kColdSearch: return get(&c->cfull) ? get(&c->ccount) : 0;
            case kColdTurn: return get(&c->cfull) ? 1 : 0;
            case kColdMove: return get(&c->cmove) ? get(&c->ccount) : 0;
            case kColdTurn2: return get(&c->cmove) ? 1 : 0;
            case kCheck: return get(&c->bopen) ? 1 : 0;
            case kTheta: return get(&c->full) ? 1 : 0;
            case kFinish: return 1;
            case kSort: return 0;
        }
        return 0;
    }

    TESSERA_HOSTDEV void step(RoundStep s, int32_t i) const {
        switch (s) {
            case kSearch: return search(i);
            case kColdCheck: return cold_check(i);
            case kColdSearch: return cold_search(i);
            case kColdTurn: return cold_turn(get(&counts->cfull), true);
            case kColdTurn2: return cold_turn(get(&counts->cmove), false);
            case kColdMove: return cold_move(i);
            case kCheck: return check();
            case kFull: return full_search(i);
            case kSample: return take_sample(i);
            case kTheta: return choose_theta();
            case kSift: return sift(i);
            case kPick: return pick(i);
            case kJump: return jump(i);
            case kSettle: return settle(i);
            case kElect: return elect(i);
            case kMerge: return merge(i);
            case kFix: return fix(i);
            case kWake: return wake(i);
            case kWakeJoin: return wake_join(i);
            case kScan: return scan(i);
            case kRelabel: return relabel(i);
            case kFinish: return finish_round();
            case kSort: return;
        }
    }

    // Node v's best edge leaving cluster rv (section 3.2's candidates), cached.
    // Node v's cached key, when it stands (its far end still outside cluster rv).
    TESSERA_HOSTDEV bool cached_best(int32_t v, int32_t rv, uint64_t& k) const {
        k = ld(key + v);
        return k != RankKeys::kNone && ld(label + ld(target + v)) != rv;
    }

    TESSERA_HOSTDEV uint64_t node_best(int32_t v, int32_t rv) const {
        uint64_t cached;
        if (cached_best(v, rv, cached)) return cached;
        return node_search(v, rv, true, [&](int32_t l, int32_t cur) {
            while (cur < adj_start[l + 1] && ld(label + adj[cur]) == rv) ++cur;
            return cur;
        }, [&](RingCursor& cu, int64_t need, int64_t& w, uint64_t& tested) {
            return next_pair(occ, rr[v], rc[v], v, cu, need, [&](int32_t x) { return ++tested, ld(label + x) != rv; }, w);
        });
    }

    // Node v's search past its cached key: lake_walk(l, cursor) gives lake l's first residue
    // outside rv from its cursor on; ring_walk(cursor, need, w, tested) is next_pair's walk.
    // The writer stores the results (a warp searching one node: every lane computes them).
    template <class LakeWalk, class RingWalk>
    TESSERA_HOSTDEV uint64_t node_search(int32_t v, int32_t rv, bool writer, const LakeWalk& lake_walk,
                                         const RingWalk& ring_walk) const {
        uint64_t best_key = RankKeys::kNone;
        int32_t tgt = -1;
        if (v >= n) {  // a lake: weight 0, its residues in id order
            const int32_t l = v - n;
            const int32_t cur0 = ld(lake_cursor + l);
            const int32_t cur = lake_walk(l, cur0);
            if (writer) st(lake_cursor + l, cur);
            if (probes && writer) note_probes(0, static_cast<uint64_t>(cur - cur0));
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
                } else if (ld(label + ln) != rv) {
                    const uint64_t k = keys.pack(0, v, ln);
                    if (k < best_key) best_key = k, tgt = ln;
                }
            }
            const int64_t need = hd::min(radius, keys.w(best_key));  // pairs farther never win
            int64_t w = 0;
            RingCursor cu;  // through ld/st: blocks of one kernel search a node in turn
            cu.w = ld(&cursor[v].w), cu.k = ld(&cursor[v].k), cu.s = ld(&cursor[v].s);
            const RingCursor cu0 = cu;
            uint64_t tested = 0;
            const int32_t j = ring_walk(cu, need, w, tested);
            if (probes && writer) note_probes(ring_index(cu) - ring_index(cu0), tested);
            if (writer) st(&cursor[v].w, cu.w), st(&cursor[v].k, cu.k), st(&cursor[v].s, cu.s);
            if (j >= 0) {
                const uint64_t k = v < j ? keys.pack(w, v, j) : keys.pack(w, j, v);
                if (k < best_key) best_key = k, tgt = j;
            }
        }
        if (writer) st(key + v, best_key), st(target + v, tgt);
        return best_key;
    }

    // A cursor's position in its walk (rings 0..w-1 hold 1 + 2w(w-1) positions).
    TESSERA_HOSTDEV static uint64_t ring_index(const RingCursor& c) {
        const uint64_t w = static_cast<uint64_t>(c.w);
        return (w == 0 ? 0 : 1 + 2 * w * (w - 1)) + static_cast<uint64_t>(c.k);
    }
    TESSERA_HOSTDEV void note_probes(uint64_t positions, uint64_t tested) const {
        hd::atomic_add(probes, positions), hd::atomic_add(probes + 1, tested);
        hd::atomic_max(probes + 2, positions + tested);
    }

    TESSERA_HOSTDEV void search_node(int32_t v) const {
        const int32_t rv = ld(label + v);
        const uint64_t k = node_best(v, rv);
        // Most members of a large cluster cannot lower its minimum: no atomic for them.
        if (k != RankKeys::kNone && k < ld(best + rv)) hd::atomic_min(best + rv, k);
    }

    // The parked cluster's searched members: hot, then new (from bsorted).
    TESSERA_HOSTDEV int32_t hot_or_new(int32_t j) const {
        const int32_t h = get(&counts->hot);
        return j < h ? ld(hot[counts_round() & 1] + j) : ld(bmem + get(&counts->bsorted) + (j - h));
    }

    // The search step's i-th node: the active list's, then the parked cluster's hot and new.
    TESSERA_HOSTDEV int32_t search_vertex(int32_t i) const {
        const int32_t a = get(&counts->active);
        return i < a ? ld(active[counts_round() & 1] + i) : hot_or_new(i - a);
    }
    TESSERA_HOSTDEV void search(int32_t i) const { search_node(search_vertex(i)); }

    // One thread, after search: is the minimum of hot and new the parked cluster's?
    TESSERA_HOSTDEV void check() const {
        RoundCounts* c = counts;
        if (!get(&c->bopen)) return;
        const int32_t bc = get(&c->bcount), searched = get(&c->hot) + bc - get(&c->bsorted);
        const bool full = ld(best + get(&c->big)) >= get(&c->theta) || searched > tune.hot_max;
        put(&c->full, full ? 1 : 0);
        put(&c->bsorted_next, bc);
        if (full) put(&c->fulls, get(&c->fulls) + 1);
    }

    TESSERA_HOSTDEV void full_search(int32_t i) const { search_node(ld(bmem + i)); }

    TESSERA_HOSTDEV int32_t sample_size() const {
        const int32_t bc = get(&counts->bcount);
        return bc < kThetaSample ? bc : kThetaSample;
    }

    TESSERA_HOSTDEV void take_sample(int32_t i) const {
        const int64_t bc = get(&counts->bcount), S = sample_size();
        st(sample + i, ld(key + ld(bmem + static_cast<int32_t>(i * bc / S))));
    }

    // One thread, after the sample is sorted: about tune.hot members of bmem below theta, and
    // the minimum among them.
    TESSERA_HOSTDEV void choose_theta() const {
        RoundCounts* c = counts;
        if (!get(&c->full)) return;
        const int64_t bc = get(&c->bcount), S = sample_size();
        uint64_t theta = RankKeys::kNone;
        if (bc > tune.hot) {
            theta = ld(sample + static_cast<int32_t>(hd::min(S - 1, int64_t{tune.hot} * S / bc)));
            const uint64_t m = ld(best + get(&c->big));
            if (theta <= m) theta = m + 1;
        }
        put(&c->theta, theta);
    }

    TESSERA_HOSTDEV void sift(int32_t i) const {
        const int32_t v = get(&counts->full) ? ld(bmem + i) : hot_or_new(i);
        if (ld(key + v) < get(&counts->theta))
            st(hot[(counts_round() + 1) & 1] + hd::claim_slot(&counts->next_hot), v);
    }

    // The far end's node of an edge key (G for the border and grounded lakes).
    TESSERA_HOSTDEV int32_t hi_node(int32_t hi) const { return hi >= n + L ? G : hi; }

    TESSERA_HOSTDEV void pick(int32_t i) const {
        const int32_t round = counts_round();
        const int32_t x = ld(open[round & 1] + i);
        const uint64_t k = ld(best + x);
        if (k == RankKeys::kNone) return fail(2);
        st(bound + x, k);
        const int32_t lo = keys.lo(k), hi = keys.hi(k);
        const int32_t llo = ld(label + lo);
        const int32_t y = llo == x ? ld(label + hi_node(hi)) : llo;
        const bool twice = ld(stamp + y) == round && ld(best + y) == k;
        if (!(twice && x > y)) {
            if (hi < n || hi == n + L + 1) {
                const int32_t at = hd::atomic_add(&counts->cuts, 1);
                st(cuts + at, cut_code(lo, hi < n ? hi : -1));
                if (hi >= n) hd::atomic_add(&counts->ground_cuts, 1);
            } else {
                hd::atomic_add(&counts->lake_joins, 1);
            }
        }
        st(link + x, twice && x < y ? x : y);
    }

    TESSERA_HOSTDEV void jump(int32_t i) const {
        const int32_t x = ld(open[counts_round() & 1] + i);
        int32_t r = x;
        for (int32_t steps = 0;; ++steps) {
            if (steps > n + L) return fail(3);
            const int32_t p = ld(link + r);
            if (p == r) break;
            const int32_t pp = ld(link + p);
            if (pp != p) st(link + r, pp);  // an ancestor: any thread may write it
            r = pp;
        }
    }

    // After jump (whose halving may still overwrite a link with a nearer ancestor while the
    // step runs): each open cluster's link becomes its root; only roots are written here.
    TESSERA_HOSTDEV void settle(int32_t i) const {
        const int32_t x = ld(open[counts_round() & 1] + i);
        int32_t r = x;
        for (int32_t steps = 0;; ++steps) {
            if (steps > n + L) return fail(4);
            const int32_t p = ld(link + r);
            if (p == r) break;
            r = p;
        }
        if (r != x) st(link + x, r);
    }

    // Each open cluster offers itself as its tree's representative; a closed root joined is
    // listed once, with its member list's end (and whether a scan wakes it).
    TESSERA_HOSTDEV void elect(int32_t i) const {
        const int32_t round = counts_round();
        const int32_t x = ld(open[round & 1] + i), R = ld(link + x);
        if (R == x || R == G) return;
        hd::atomic_max(repk + R, ld(repk + x));
        if (ld(stamp + R) == round) return;  // R is open: on the list itself
        if (hd::atomic_exch(reopen_stamp + R, round) == round) return;
        st(reopened + hd::atomic_add(&counts->reopened, 1), R);
        st(old_tail + R, ld(tail + R));
        if (R != get(&counts->big_prev) && ld(size + R) > tune.walk_max) {
            st(scan_stamp + R, round);
            put(&counts->scan, 1);
        }
    }

    // Cluster z of the open list (i < open) or a closed root joined (the rest): its tree's
    // representative P.
    TESSERA_HOSTDEV int32_t tree_member(int32_t i, int32_t& R) const {
        const int32_t o = get(&counts->open);
        const int32_t z = i < o ? ld(open[counts_round() & 1] + i) : ld(reopened + (i - o));
        R = i < o ? ld(link + z) : z;
        return z;
    }
    TESSERA_HOSTDEV int32_t representative(int32_t R) const {
        return R == G ? G : static_cast<int32_t>(static_cast<uint32_t>(ld(repk + R)));
    }

    TESSERA_HOSTDEV void merge(int32_t i) const {
        int32_t R;
        const int32_t z = tree_member(i, R);
        const int32_t P = representative(R);
        if (z == P) {
            if (R != z) st(link + z, z);  // the representative was linked to its root
            return;
        }
        st(link + z, P);
        hd::atomic_add(charge + P, ld(charge + z));
        if (z == get(&counts->big)) put(&counts->big_to, P);  // the parked cluster absorbed
        // z's cold members are P's (relabelled by cold_move; P's own leave in fix when P takes bmem).
        const uint64_t tz = ld(ctheta + z);
        if (tz != RankKeys::kNone) {
            if (P != G && P != get(&counts->big)) hd::atomic_min(ctheta + P, tz);
            put(&counts->cmove, 1);
        }
        if (P == G) return;  // the ground's members are never listed again
        hd::atomic_add(size + P, ld(size + z));
        const int32_t prev = hd::atomic_exch(tail + P, ld(tail + z));
        st(next_member + prev, z);
    }

    // Each representative: its key for the next rounds; the first large open one parks. The
    // parked cluster absorbed: its successor takes bmem over (the ground: none).
    TESSERA_HOSTDEV void fix(int32_t i) const {
        RoundCounts* c = counts;
        const int32_t to = get(&c->big_to);
        if (i == 0 && to >= 0) {
            put(&c->hand_from, get(&c->big));
            put(&c->hand, get(&c->bcount));
            put(&c->big, to == G ? -1 : to);
        }
        int32_t R;
        const int32_t z = tree_member(i, R);
        if (ld(link + z) != z || z == G) return;
        const int32_t sz = ld(size + z);
        st(repk + z, rep_key(sz, z));
        bool parks = false;
        if (to < 0 && sz >= tune.big_min && is_open(z) && get(&c->big) < 0 &&
            hd::atomic_cas(&c->big, -1, z) == -1) {
            put(&c->bcount, 0), put(&c->bsorted, 0), put(&c->hot, 0);
            put(&c->theta, RankKeys::kNone);
            put(&c->parks, get(&c->parks) + 1);
            parks = true;
        }
        cold_leave(z, !is_open(z) || z == to || parks);
    }

    // Representative P's cold members all leave the pool (P closed, parked or taking the
    // parked cluster's place): cold_move this round.
    TESSERA_HOSTDEV void cold_leave(int32_t P, bool leaves) const {
        if (leaves && ld(ctheta + P) != RankKeys::kNone) {
            st(ctheta + P, RankKeys::kNone);
            put(&counts->cmove, 1);
        }
    }

    // Each open cluster after search: when the minimum of its listed members is not below its
    // ctheta, its cold members are searched too (cold_search) and listed again.
    TESSERA_HOSTDEV void cold_check(int32_t i) const {
        const int32_t x = ld(open[counts_round() & 1] + i);
        const uint64_t t = ld(ctheta + x);
        if (t == RankKeys::kNone || ld(best + x) < t) return;
        st(cstamp + x, counts_round());
        st(ctheta + x, RankKeys::kNone);
        put(&counts->cfull, 1);
    }

    TESSERA_HOSTDEV int32_t* cold_pool(int which) const { return cpool[(get(&counts->csel) + which) & 1]; }
    TESSERA_HOSTDEV void cold_keep(int32_t v) const { st(cold_pool(1) + hd::claim_slot(&counts->ccount_next), v); }

    // A pool entry: searched and listed (this round's active list, so relabel takes it) when its
    // cluster's cold members are searched, else kept.
    TESSERA_HOSTDEV void cold_search(int32_t i) const {
        const int32_t v = ld(cold_pool(0) + i);
        if (ld(cstamp + ld(label + v)) != counts_round()) return cold_keep(v);
        search_node(v);
        st(active[counts_round() & 1] + hd::claim_slot(&counts->active), v);
    }

    // A pool entry after merge and fix: P's label; kept while P is open and not parked, else
    // joined to P (the parked cluster's members, or none listed: closed or the ground).
    TESSERA_HOSTDEV void cold_move(int32_t i) const {
        const int32_t v = ld(cold_pool(0) + i);
        const int32_t P = ld(link + ld(label + v));
        if (P != get(&counts->big) && is_open(P)) {
            st(label + v, P);
            return cold_keep(v);
        }
        join(v, P);
    }

    // One thread, after a pool scan (scanned: the scan ran; full: coldsrch's, else coldmove's):
    // what stayed is the pool. The flags stay set until finish_round: a step never changes the
    // counts its own step_count reads (the drivers' threads read them while thread 0 runs it).
    TESSERA_HOSTDEV void cold_turn(bool scanned, bool full) const {
        RoundCounts* c = counts;
        if (!scanned) return;
        put(&c->cold_scanned, get(&c->cold_scanned) + get(&c->ccount));
        put(&c->csel, get(&c->csel) ^ 1);
        put(&c->ccount, get(&c->ccount_next)), put(&c->ccount_next, 0);
        if (full) put(&c->cfulls, get(&c->cfulls) + 1);
        else put(&c->cmoves, get(&c->cmoves) + 1);
    }

    // Node v of cluster R joins P: its label, and the next round's lists.
    TESSERA_HOSTDEV void join(int32_t v, int32_t P) const {
        st(label + v, P);
        if (P == get(&counts->big)) {
            const int32_t at = hd::claim_slot(&counts->bcount);
            if (at >= nodes()) return fail(8);
            st(bmem + at, v);
        } else if (is_open(P)) {
            add_next(v, P);
        }
    }

    TESSERA_HOSTDEV void add_next(int32_t v, int32_t R) const {
        const int32_t next = (counts_round() + 1) & 1;
        const int32_t at = hd::claim_slot(&counts->next_active);
        if (at > n + L) return fail(6);
        st(active[next] + at, v);
        list_next(R);
    }

    // Open cluster R on the next round's open list.
    TESSERA_HOSTDEV void list_next(int32_t R) const {
        const int32_t next = (counts_round() + 1) & 1;
        // The first of R's members here lists R; the read spares the others an atomic.
        const int32_t next_round = counts_round() + 1;
        if (ld(stamp + R) != next_round && hd::atomic_exch(stamp + R, next_round) != next_round) {
            st(best + R, RankKeys::kNone);
            st(open[next] + hd::atomic_add(&counts->next_open, 1), R);
        }
    }

    // A closed root joined: its members (still labelled R) join P, unless they are bmem's
    // already (R was parked at the round's start) or a scan wakes them. alone: the only
    // thread listing members (link_one): the slots counted without atomics.
    TESSERA_HOSTDEV void wake(int32_t i, bool alone = false) const {
        const int32_t R = ld(reopened + i);
        if (R == get(&counts->big_prev) || ld(scan_stamp + R) == counts_round()) return;
        const int32_t P = ld(link + R);
        if (P == R && !is_open(P) && P != get(&counts->big)) return;
        const int32_t end = ld(old_tail + R);
        int32_t steps = 0;
        int32_t at = alone ? get(&counts->woken) : 0;
        for (int32_t v = R;;) {
            if (v < 0 || ++steps > n + L + 1) return fail(7);
            st(wbuf + (alone ? at++ : hd::claim_slot(&counts->woken)), v);
            if (v == end) break;
            v = ld(next_member + v);
        }
        if (alone) put(&counts->woken, at);
    }

    // One open cluster (the tail's usual round): pick, jump, settle, elect, merge, fix and
    // wake on one thread, in order (at most two clusters to merge and fix, one root to wake).
    // None of them reads or writes what sift does (sift: keys, theta, hot and new, next_hot;
    // these: links, charges, sizes, member lists, cuts, wbuf and the parked slot, which fix
    // takes only when none is parked, when sift has nothing to do), so the one-block kernel
    // runs this beside sift (the serial loop: after it).
    TESSERA_HOSTDEV bool one_open() const { return get(&counts->open) == 1; }
    TESSERA_HOSTDEV void link_one() const {
        RoundCounts* c = counts;
        put(&c->linked_one, get(&c->linked_one) + 1);
        // The usual round: x takes an edge to a closed root y (not the ground, on no one's
        // list): the steps' effects with the two clusters' words read once, side by side.
        const int32_t round = counts_round();
        const int32_t x = ld(open[round & 1]);
        const uint64_t k = ld(best + x);
        const uint64_t rkx = ld(repk + x);
        const int32_t size_x = ld(size + x), charge_x = ld(charge + x), tail_x = ld(tail + x);
        if (k != RankKeys::kNone) {
            st(bound + x, k);
            const int32_t lo = keys.lo(k), hi = keys.hi(k);
            const int32_t llo = ld(label + lo);
            const int32_t y = llo == x ? ld(label + hi_node(hi)) : llo;
            if (y != G && y != x && ld(link + y) == y && ld(stamp + y) != round && ld(reopen_stamp + y) != round &&
                link_pair(x, y, lo, hi, rkx, size_x, charge_x, tail_x))
                return;
        }
        // Otherwise (the ground, a cluster closing; or a state the usual round does not
        // have): the steps one after another.
        for (int s = kPick; s <= kFix; ++s) {
            const RoundStep which = static_cast<RoundStep>(s);
            for (int32_t i = 0, e = step_count(which); i < e; ++i) step(which, i);
            if (get(&c->broken)) return;
        }
        for (int32_t i = 0, e = get(&c->reopened); i < e; ++i) wake(i, true);
    }

    // link_one's usual round: pick (x takes lo-hi, no one takes it back: y is not open), jump
    // and settle (x links to y, a root), elect (y listed reopened: the round's only), merge
    // (the larger of x and y represents the pair), fix, wake (y's members into wbuf).
    // False (nothing written) when x's or y's representative key is not its own.
    TESSERA_HOSTDEV bool link_pair(int32_t x, int32_t y, int32_t lo, int32_t hi, uint64_t rkx, int32_t size_x,
                                   int32_t charge_x, int32_t tail_x) const {
        RoundCounts* c = counts;
        const int32_t round = counts_round();
        const uint64_t rky0 = ld(repk + y);
        const int32_t size_y = ld(size + y), charge_y = ld(charge + y), tail_y = ld(tail + y);
        if (static_cast<int32_t>(static_cast<uint32_t>(rky0)) != y || static_cast<int32_t>(static_cast<uint32_t>(rkx)) != x)
            return false;
        put(&c->linked_pair, get(&c->linked_pair) + 1);
        // pick
        if (hi < n || hi == n + L + 1) {
            const int32_t at = get(&c->cuts);
            put(&c->cuts, at + 1);
            st(cuts + at, cut_code(lo, hi < n ? hi : -1));
            if (hi >= n) put(&c->ground_cuts, get(&c->ground_cuts) + 1);
        } else {
            put(&c->lake_joins, get(&c->lake_joins) + 1);
        }
        st(link + x, y);
        // elect
        const uint64_t rky = rkx > rky0 ? rkx : rky0;
        st(repk + y, rky);
        st(reopen_stamp + y, round);
        const int32_t at = get(&c->reopened);
        st(reopened + at, y);
        put(&c->reopened, at + 1);
        st(old_tail + y, tail_y);
        const bool scanned = y != get(&c->big_prev) && size_y > tune.walk_max;
        if (scanned) {
            st(scan_stamp + y, round);
            put(&c->scan, 1);
        }
        // merge: P the larger; the other's charge, size and list to P
        const int32_t P = static_cast<int32_t>(static_cast<uint32_t>(rky));
        const int32_t z = P == x ? y : x;
        const int32_t size_p = size_x + size_y, charge_p = charge_x + charge_y;
        st(link + x, P);  // P == x: the representative was linked to its root
        if (z == y) st(link + y, P);
        st(charge + P, charge_p);
        if (z == get(&c->big)) put(&c->big_to, P);
        const uint64_t tz = ld(ctheta + z);  // y is closed: none of its members is cold
        if (tz != RankKeys::kNone) {
            st(ctheta + P, tz);
            put(&c->cmove, 1);
        }
        st(size + P, size_p);
        const int32_t tail_p = P == x ? tail_x : tail_y;
        st(tail + P, z == x ? tail_x : tail_y);
        st(next_member + tail_p, z);
        // fix: the parked cluster absorbed: P takes bmem over; P's key; P may park
        const int32_t to = get(&c->big_to);
        if (to >= 0) {
            put(&c->hand_from, get(&c->big));
            put(&c->hand, get(&c->bcount));
            put(&c->big, to);
        }
        st(repk + P, rep_key(size_p, P));
        bool parks = false;
        if (to < 0 && size_p >= tune.big_min && charge_p != 0 && get(&c->big) < 0) {
            put(&c->big, P);
            put(&c->bcount, 0), put(&c->bsorted, 0), put(&c->hot, 0);
            put(&c->theta, RankKeys::kNone);
            put(&c->parks, get(&c->parks) + 1);
            parks = true;
        }
        cold_leave(P, charge_p == 0 || to >= 0 || parks);
        // wake: y's members (as they were before the merge: y .. its old tail)
        if (y == get(&c->big_prev) || scanned) return true;
        if (P == y && charge_p == 0 && y != get(&c->big)) return true;
        int32_t w = get(&c->woken), steps = 0;
        for (int32_t v = y;;) {
            if (v < 0 || ++steps > n + L + 1) {
                fail(7);
                return true;
            }
            st(wbuf + w++, v);
            if (v == tail_y) break;
            v = ld(next_member + v);
        }
        put(&c->woken, w);
        return true;
    }

    // A member of a walked closed root R (still labelled R) joins R's representative.
    TESSERA_HOSTDEV void wake_join(int32_t i) const {
        const int32_t v = ld(wbuf + i);
        join(v, ld(link + ld(label + v)));
    }

    TESSERA_HOSTDEV void scan(int32_t v) const {
        const int32_t R = ld(label + v);
        if (R == G || ld(scan_stamp + R) != counts_round()) return;
        const int32_t P = ld(link + R);
        if (P == R && !is_open(P) && P != get(&counts->big)) return;
        join(v, P);
    }

    TESSERA_HOSTDEV void relabel(int32_t i) const {
        const int32_t a = get(&counts->active);
        if (i >= a) {  // the parked cluster's members, handed to its successor
            st(label + ld(bmem + (i - a)), get(&counts->big_to));
            return;
        }
        const int32_t v = ld(active[counts_round() & 1] + i);
        const int32_t R = ld(label + v), P = ld(link + R);
        // A member whose key lies above its cluster's minimum by more than the margin goes cold.
        if (tune.cold_margin >= 0 && counts_round() >= tune.cold_from && P != get(&counts->big) && is_open(P)) {
            const uint64_t k = ld(key + v), b = ld(bound + R);
            if (k != RankKeys::kNone && keys.w(k) > keys.w(b) + tune.cold_margin) {
                st(label + v, P);
                st(cold_pool(0) + hd::claim_slot(&counts->ccount), v);
                if (k < ld(ctheta + P)) hd::atomic_min(ctheta + P, k);
                return list_next(P);
            }
        }
        join(v, P);
    }

    TESSERA_HOSTDEV void fail(int32_t step) const { put(&counts->broken, step); }

    // After a round (one thread): the next round's lists become current.
    // Counts that atomics changed are read through L2: an SM's L1 may hold a stale copy.
    TESSERA_HOSTDEV void finish_round() const {
        RoundCounts* c = counts;
        if (get(&c->open) == 0) return;  // none open: no round was run
        put(&c->searched, get(&c->searched) + get(&c->active) +
                                    (get(&c->bopen) ? get(&c->hot) + get(&c->bsorted_next) - get(&c->bsorted) : 0) +
                                    (get(&c->full) ? get(&c->bcount) : 0));
        if (get(&c->bopen)) {
            put(&c->hot, get(&c->next_hot)), put(&c->bsorted, get(&c->bsorted_next));
        }
        put(&c->next_hot, 0), put(&c->full, 0), put(&c->cfull, 0), put(&c->cmove, 0);
        if (get(&c->big_to) >= 0 && get(&c->big) < 0) {  // the parked cluster joined the ground
            put(&c->bcount, 0), put(&c->bsorted, 0), put(&c->hot, 0);
            put(&c->theta, RankKeys::kNone);
        }
        if (get(&c->scan)) put(&c->scans, get(&c->scans) + 1);
        put(&c->walked, get(&c->walked) + get(&c->woken)), put(&c->woken, 0);
        if (probes) st(probes + 3, ld(probes + 3) + ld(probes + 2)), st(probes + 2, uint64_t{0});
        put(&c->big_to, -1), put(&c->hand_from, -1), put(&c->hand, 0), put(&c->scan, 0);
        int32_t big = get(&c->big);
        if (big >= 0 && !is_open(big)) {  // closed: the slot is freed (its member list stays whole)
            big = -1;
            put(&c->big, -1), put(&c->bcount, 0), put(&c->bsorted, 0), put(&c->hot, 0);
            put(&c->theta, RankKeys::kNone);
        }
        const int32_t round = get(&c->round);
        put(&c->active, get(&c->next_active));
        int32_t open_next = get(&c->next_open);
        put(&c->bopen, 0);
        if (big >= 0 && is_open(big)) {
            st(stamp + big, round + 1);
            st(best + big, RankKeys::kNone);
            st(open[(round + 1) & 1] + open_next, big);
            ++open_next;
            put(&c->bopen, 1);
        }
        put(&c->open, open_next);
        put(&c->big_prev, big);
        put(&c->next_active, 0), put(&c->next_open, 0), put(&c->reopened, 0);
        put(&c->round, round + 1);
    }
};

}  // namespace tessera
