// The rule's rounds on the device (kernels/cut_rounds.h): on a cooperative grid, round after
// round in one launch, grid syncs between the steps (the large first rounds, and long tails of
// many clusters: seams of a mosaic, each open cluster taking one neighbour a round); once few
// nodes are open (the serial tail) one block runs round after round, __syncthreads between the
// steps; one kernel a step over the round's lists where a cooperative launch is refused.
#include <cooperative_groups.h>
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cut_rounds.h"
#include "kernels/cut_rounds_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kBlockThreads = 1024;
// Rounds with at most kBlockFrom active nodes go to the one-block kernel, which keeps them
// until more than kBlockUpTo are active; larger rounds to the cooperative grid (one kernel a
// step only where it cannot launch, or above TESSERA_GRID_UP_TO). H100,
// bench/results/gpu_h100_grid_rounds.md: the 16384² topo mosaic's tail of many open clusters
// took 1.7 ms a round in one block from 32768, 0.1 ms on the grid; holes 32768²'s rounds of
// 2-4 M active nodes 1.9 ms as kernels, 1.3 on the grid; one open cluster's tail stays in one block.
constexpr int32_t kBlockFrom = 8192, kBlockUpTo = 32768, kGridUpTo = std::numeric_limits<int32_t>::max();
// Rounds on the grid up to this size run on a quarter of its blocks (the 34848² mosaic's tail of ~900 open
// clusters, the cold pool on: the rule 981 ms on 132 blocks, 831 on 66, 760 on 33; bench/results/gpu_h100_cold_pool.md).
constexpr int32_t kSmallGridUpTo = 65536;
constexpr int kWideBatch = 4;

__global__ void step_kernel(RoundState s, RoundStep which) {
    const int32_t n = s.step_count(which);
    for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s.step(which, i);
}

__global__ void single_kernel(RoundState s, RoundStep which) { s.step(which, 0); }

using SampleSort = cub::BlockRadixSort<unsigned long long, kBlockThreads, kThetaSample / kBlockThreads>;
static_assert(kThetaSample % kBlockThreads == 0);

// The parked cluster's key sample sorted by one block of kBlockThreads (after a full search).
__device__ void sort_sample(const RoundState& s, SampleSort::TempStorage& temp) {
    if (!s.get(&s.counts->full)) return;
    const int32_t S = s.sample_size();
    constexpr int kItems = kThetaSample / kBlockThreads;
    unsigned long long k[kItems];
    for (int j = 0; j < kItems; ++j) {
        const int32_t at = threadIdx.x * kItems + j;
        k[j] = at < S ? hd::load(s.sample + at) : RankKeys::kNone;
    }
    SampleSort(temp).Sort(k);
    for (int j = 0; j < kItems; ++j) {
        const int32_t at = threadIdx.x * kItems + j;
        if (at < S) hd::store(s.sample + at, static_cast<uint64_t>(k[j]));
    }
}

__global__ void __launch_bounds__(kBlockThreads) sort_kernel(RoundState s) {
    __shared__ SampleSort::TempStorage temp;
    sort_sample(s, temp);
}

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int32_t kSlowMax = 2048;  // nodes a tail round's search hands to warps (more: a thread each)

__device__ uint64_t warp_sum(uint64_t x) {
    for (int d = 16; d > 0; d /= 2) x += __shfl_down_sync(kFullMask, x, d);
    return __shfl_sync(kFullMask, x, 0);
}

// The position j places after (w, k) in the ring walk's order (rings of 1, 4, 8, ... positions).
__device__ inline void walk_advance(int32_t& w, int32_t& k, int32_t j) {
    int32_t positions = w == 0 ? 1 : 4 * w;
    k += j;
    while (k >= positions) k -= positions, ++w, positions = 4 * w;
}

// next_pair (kernels/cut_numerics.h) walked by a warp, 32 * H positions at a time across ring
// ends (TESSERA_WARP_WALK=H: 1, 2 or 4; 2 by default): lane l takes positions l, l + 32, ... from
// the cursor, each lane its plaquette's residues (the first lane from the cursor's residue on); each position's bitmap word, its
// residue range and its first residue's label are loaded for all H before any is used. The
// first position in walk order with a residue outside rv gives the answer and the cursor, as
// the walk of one thread would; none up to ring `limit`: the cursor at (limit + 1, 0, 0).
template <int H>
__device__ int32_t warp_next_pair(const RoundState& s, int32_t v, int32_t rv, RingCursor& cu, int64_t limit,
                                       int64_t& w_out, uint64_t& tested) {
    const int lane = threadIdx.x & 31;
    const PlaquetteBits& occ = s.occ;
    const int64_t ar = s.rr[v], ac = s.rc[v];
    uint64_t t = 0;
    if (cu.w >= 1 && cu.k == 0 && cu.s == 0) {  // every lane: the same jump over empty rings
        const int64_t d = occ.nearest_occupied(ar, ac, cu.w, limit);
        if (d > cu.w) cu.w = static_cast<int32_t>(hd::min(d, limit + 1));
    }
    int32_t found = -1;
    while (cu.w <= limit) {
        int32_t pw[H], pk[H], x0[H], end[H], lab[H];
#pragma unroll
        for (int h = 0; h < H; ++h) {
            pw[h] = cu.w, pk[h] = cu.k;
            walk_advance(pw[h], pk[h], lane + 32 * h);
            x0[h] = 0, end[h] = 0;
            if (pw[h] <= limit) {
                int64_t dr, dc;
                ring_offset(pw[h], pk[h], dr, dc);
                const int64_t r = ar + dr, c = ac + dc;
                if (occ.inside(r, c)) {
                    const int64_t b = occ.bit(r, c);
                    if (occ.test(b)) occ.residues(b, x0[h], end[h]);
                }
            }
        }
        int32_t base[H];
#pragma unroll
        for (int h = 0; h < H; ++h) {
            base[h] = x0[h];
            if (h == 0 && lane == 0) x0[h] += cu.s;
            lab[h] = x0[h] < end[h] ? s.ld(s.label + x0[h]) : rv;
        }
        int32_t j[H];
#pragma unroll
        for (int h = 0; h < H; ++h) {
            j[h] = -1;
            for (int32_t x = x0[h]; x < end[h];) {
                ++t;
                if (x != v && lab[h] != rv) {
                    j[h] = x;
                    break;
                }
                if (++x < end[h]) lab[h] = s.ld(s.label + x);
            }
        }
        bool hit_any = false;
#pragma unroll
        for (int h = 0; h < H; ++h) {
            const unsigned hit = __ballot_sync(kFullMask, j[h] >= 0);
            if (hit && !hit_any) {
                const int fl = __ffs(hit) - 1;
                found = __shfl_sync(kFullMask, j[h], fl);
                cu.w = __shfl_sync(kFullMask, pw[h], fl), cu.k = __shfl_sync(kFullMask, pk[h], fl);
                cu.s = __shfl_sync(kFullMask, j[h] - base[h], fl);
                w_out = cu.w;
                hit_any = true;
            }
        }
        if (hit_any) break;
        walk_advance(cu.w, cu.k, 32 * H), cu.s = 0;
        if (cu.w > limit) cu.w = static_cast<int32_t>(limit + 1), cu.k = 0;
    }
    if (s.probes) tested += warp_sum(t);
    return found;
}

// A node's search past its cached key by a warp (lane 0 stores): the lake's shore and the
// ring, 32 candidates at a time.
__device__ void warp_search(const RoundState& s, int32_t v, int walk) {
    const int lane = threadIdx.x & 31;
    const int32_t rv = s.ld(s.label + v);
    const uint64_t k = s.node_search(
        v, rv, lane == 0,
        [&](int32_t l, int32_t cur) {
            const int32_t end = s.adj_start[l + 1];
            for (; cur < end; cur += 32) {
                const int32_t x = cur + lane;
                const unsigned hit = __ballot_sync(kFullMask, x < end && s.ld(s.label + s.adj[x]) != rv);
                if (hit) return cur + __ffs(hit) - 1;
            }
            return end;
        },
        [&](RingCursor& cu, int64_t need, int64_t& w, uint64_t& tested) {
            if (walk == 4) return warp_next_pair<4>(s, v, rv, cu, need, w, tested);
            if (walk == 2) return warp_next_pair<2>(s, v, rv, cu, need, w, tested);
            return warp_next_pair<1>(s, v, rv, cu, need, w, tested);
        });
    if (lane == 0 && k != RankKeys::kNone && k < s.ld(s.best + rv)) hd::atomic_min(s.best + rv, k);
}

// Work of a tail round's large steps handed to the helper blocks of block_rounds (mode 3).
struct HelpJob {
    int32_t seq = 0;   // the leader's job number; a helper runs each new one
    int32_t step = -1;  // -1: stop
    int32_t n = 0;
    int32_t done = 0;  // helpers finished with the job
};

// Steps whose threads change no counts (search_node: keys, targets, cursors, atomic minima),
// so blocks other than the one holding the counts can run them from a copy.
// Mode 3 shares searches and full searches, mode 4 full searches only (a tail round's search
// is one long ring walk's latency, which more blocks do not shorten).
__device__ bool helpable(RoundStep which, int mode) { return which == kFull || (which == kSearch && mode == 3); }

// A helper block: waits for the leader's jobs and runs its share of each (grid-strided, as the
// leader's own block does), through L2; the counts from the leader's copy (read only).
__device__ void help_rounds(RoundState s, HelpJob* job, RoundCounts* mirror) {
    __shared__ int32_t job_step, job_n;
    s.counts = mirror;
    s.local = false;
    int32_t seen = 0;
    for (;;) {
        if (threadIdx.x == 0) {
            int32_t q;
            while ((q = *reinterpret_cast<volatile int32_t*>(&job->seq)) == seen) {
            }
            seen = q;
            __threadfence();
            job_step = *reinterpret_cast<volatile int32_t*>(&job->step);
            job_n = *reinterpret_cast<volatile int32_t*>(&job->n);
        }
        __syncthreads();
        const int32_t step = job_step, n = job_n;
        if (step < 0) return;
        const int32_t stride = gridDim.x * blockDim.x;
        for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s.step(static_cast<RoundStep>(step), i);
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) atomicAdd(&job->done, 1);
    }
}

// Rounds in one block while at most max_active nodes are active (round_work), at most 4 x tune.block_open
// clusters are open and some is.
// mode 0: the steps as the wide kernels run them (counts in global memory, loads through L2,
// every step and its __syncthreads each round); mode 1: the counts in shared memory (thread 0
// loads them at the start and stores them back at the end), plain loads and stores (L1: one
// block's __syncthreads publish its writes), a step with nothing to do skipped with its
// barrier (its count is read from shared memory by every thread: uniform); mode 2: mode 1
// with loads through L2; mode 3: mode 2 on a cooperative grid, block 0 leading: a search (or
// full search) of at least help_min nodes is shared with the other blocks (a job in global
// memory, a copy of the counts; they report back through an atomic counter, the leader's
// fence after it makes their writes visible to its block's plain loads); mode 4 (default):
// mode 1 (plain loads in block 0) with full searches shared as in mode 3.
// clk (TESSERA_TRACE): block 0's SM clocks per step and the number of times each step ran.
__global__ void __launch_bounds__(kBlockThreads) block_rounds(RoundState s, int32_t max_active, int mode,
                                                               unsigned long long* clk, HelpJob* job,
                                                               RoundCounts* mirror, int32_t help_min, int warp_walk,
                                                               int fuse_one) {
    if (blockIdx.x != 0) return help_rounds(s, job, mirror);
    __shared__ int32_t slow[kSlowMax];
    __shared__ int32_t n_slow;
    __shared__ SampleSort::TempStorage temp;
    __shared__ alignas(RoundCounts) unsigned char counts_bytes[sizeof(RoundCounts)];  // no constructor in __shared__
    RoundCounts& shared_counts = *reinterpret_cast<RoundCounts*>(counts_bytes);
    __shared__ unsigned long long t_step[2 * kRoundSteps];
    RoundCounts* const global_counts = s.counts;
    const bool fast = mode != 0;
    const bool helped = gridDim.x > 1;
    const bool fuse = fast && fuse_one;  // one open cluster: pick..wake on thread 0 beside sift
    int32_t seq = 0;
    if (fast) {
        if (threadIdx.x == 0) shared_counts = *const_cast<const RoundCounts*>(global_counts);
        s.counts = &shared_counts;
        s.local = mode == 1 || mode == 4;
    }
    if (threadIdx.x < 2 * kRoundSteps) t_step[threadIdx.x] = 0;
    if (threadIdx.x == 0) n_slow = 0;
    __syncthreads();
    long long t0 = clock64();
    for (;;) {
        const int32_t open = s.get(&s.counts->open), work = s.work();
        const bool stop = open == 0 || work > max_active || open / 4 > s.tune.block_open || s.get(&s.counts->broken) ||
                          s.at_limit();
        // Every thread has read the counts before thread 0 changes them. Fused (TESSERA_FUSE_ONE):
        // no barrier: the first step to change these counts (check, single; fix's park, after
        // pick's barrier) comes after a barrier anyway (search's, or its own when none ran).
        if (!fuse) __syncthreads();
        if (stop) break;
        bool synced = true;
        for (int k = 0; k < kRoundSteps; ++k) {
            const RoundStep which = static_cast<RoundStep>(k);
            const bool single = single_step(which);
            const int32_t n = which == kSort ? s.get(&s.counts->full) : s.step_count(which);
            if (fast && n == 0 && !(which == kSift && fuse && s.one_open())) {
                synced = false;
                continue;
            }
            if (single && !synced) __syncthreads();  // thread 0 changes counts others may still read
            if (which == kSift && fuse && s.one_open()) {
                // One cluster open: thread 0 runs pick..wake (link_one: none of sift's state)
                // while warps 1.. sift; one barrier for eight steps. No barrier before it: the
                // counts other threads may still read for the steps skipped since check's barrier
                // (full, open, bopen, hot, bsorted, bsorted_next) are none that link_one writes
                // (it parks a cluster, writing hot and bsorted, only when none is parked: bopen 0,
                // whose sift count reads neither).
                if (threadIdx.x == 0) {
                    s.link_one();
                } else if (threadIdx.x >= 32) {
                    for (int32_t i = threadIdx.x - 32; i < n; i += blockDim.x - 32) s.step(kSift, i);
                }
                __syncthreads();
                synced = true;
                if (clk && threadIdx.x == 0) {
                    const long long t1 = clock64();
                    t_step[kPick] += static_cast<unsigned long long>(t1 - t0), t_step[kRoundSteps + kPick] += 1;
                    t0 = t1;
                }
                k = kWake;
                continue;
            }
            if (which == kSort) {
                sort_sample(s, temp);
            } else if (single) {
                if (threadIdx.x == 0) s.step(which, 0);
            } else if (which == kSearch && warp_walk && fast && !(helped && helpable(which, mode) && n >= help_min)) {
                // Cached keys that stand: a thread each; the others' walks: a warp each.
                for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
                    const int32_t v = s.search_vertex(i), rv = s.ld(s.label + v);
                    uint64_t key;
                    if (s.cached_best(v, rv, key)) {
                        if (key < s.ld(s.best + rv)) hd::atomic_min(s.best + rv, key);
                    } else {
                        const int32_t at = atomicAdd(&n_slow, 1);
                        if (at < kSlowMax) slow[at] = v;
                        else s.search_node(v);
                    }
                }
                __syncthreads();
                const int32_t m = min(n_slow, kSlowMax);
                for (int32_t j = threadIdx.x / 32; j < m; j += blockDim.x / 32) warp_search(s, slow[j], warp_walk);
                __syncthreads();
                if (threadIdx.x == 0) n_slow = 0;  // read again after the step's barrier, next round
            } else if (helped && helpable(which, mode) && n >= help_min) {
                // The block's writes visible to the helpers, then the job (counts copied).
                __threadfence();
                __syncthreads();
                if (threadIdx.x == 0) {
                    *mirror = shared_counts;
                    job->step = which, job->n = n;
                    atomicExch(&job->done, 0);
                    __threadfence();
                    *reinterpret_cast<volatile int32_t*>(&job->seq) = ++seq;
                }
                const int32_t stride = gridDim.x * blockDim.x;
                for (int32_t i = threadIdx.x; i < n; i += stride) s.step(which, i);
                __syncthreads();
                if (threadIdx.x == 0) {
                    while (*reinterpret_cast<volatile int32_t*>(&job->done) < static_cast<int32_t>(gridDim.x) - 1) {
                    }
                    __threadfence();
                }
            } else {
                for (int32_t i = threadIdx.x; i < n; i += blockDim.x) s.step(which, i);
            }
            __syncthreads();
            synced = true;
            if (clk && threadIdx.x == 0) {
                const long long t1 = clock64();
                t_step[k] += static_cast<unsigned long long>(t1 - t0), t_step[kRoundSteps + k] += 1;
                t0 = t1;
            }
        }
    }
    if (threadIdx.x == 0) {
        if (fast) *global_counts = shared_counts;
        if (helped) {
            job->step = -1;
            __threadfence();
            *reinterpret_cast<volatile int32_t*>(&job->seq) = ++seq;
        }
    }
    if (clk && threadIdx.x < 2 * kRoundSteps) clk[threadIdx.x] += t_step[threadIdx.x];
}

// Rounds on a cooperative grid (every block resident) while more than min_work (or more than
// tune.block_open open clusters) and at most
// max_work nodes are active and a cluster is open: the wide steps in order, a grid sync after
// each step that runs, empty steps skipped (counts in global memory, read by every thread after
// a sync: uniform), as block_rounds does in one block. Saves the ~17 launches of a wide round.
// A search (or full search) keeps the cached keys that stand, a thread each, and lists the
// others (slow, n_slow: zero between rounds), which warps then walk (warp_search): a round's
// search is its longest walk, 32 * walk ring positions a step instead of one.
// clk (TESSERA_TRACE): thread 0's SM clocks from a step's start to the sync after it, and runs.
__global__ void __launch_bounds__(kBlockThreads) grid_rounds(RoundState s, int32_t min_work, int32_t open_max,
                                                              int32_t max_work, int32_t* slow, int32_t* n_slow,
                                                              int warp_walk, unsigned long long* clk) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    __shared__ SampleSort::TempStorage temp;
    const int32_t stride = static_cast<int32_t>(gridDim.x * blockDim.x);
    const int32_t me = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
    long long t0 = clock64();
    for (;;) {
        const int32_t open = s.get(&s.counts->open), work = s.work();
        const bool stop = open == 0 || (work <= min_work && open <= open_max) || work > max_work ||
                          s.get(&s.counts->broken) || s.at_limit();
        grid.sync();  // every thread has read the counts before any step changes them
        if (stop) return;
        bool synced = true;
        for (int k = 0; k < kRoundSteps; ++k) {
            const RoundStep which = static_cast<RoundStep>(k);
            const bool single = single_step(which);
            const int32_t n = which == kSort ? s.get(&s.counts->full) : s.step_count(which);
            if (n == 0) {
                synced = false;
                continue;
            }
            if (single && !synced) grid.sync();  // thread 0 changes counts others may still read
            if (which == kSort) {
                if (blockIdx.x == 0) sort_sample(s, temp);
            } else if (single) {
                if (me == 0) s.step(which, 0);
            } else if ((which == kSearch || which == kFull) && warp_walk) {
                for (int32_t i = me; i < n; i += stride) {
                    const int32_t v = which == kSearch ? s.search_vertex(i) : s.ld(s.bmem + i), rv = s.ld(s.label + v);
                    uint64_t key;
                    if (s.cached_best(v, rv, key)) {
                        if (key < s.ld(s.best + rv)) hd::atomic_min(s.best + rv, key);
                    } else {
                        hd::store(slow + hd::claim_slot(n_slow), v);
                    }
                }
                grid.sync();
                const int32_t m = *static_cast<volatile int32_t*>(n_slow);
                for (int32_t j = me / 32; j < m; j += stride / 32) warp_search(s, hd::load(slow + j), warp_walk);
                grid.sync();  // every thread has read n_slow
                if (me == 0) *static_cast<volatile int32_t*>(n_slow) = 0;
            } else {
                for (int32_t i = me; i < n; i += stride) s.step(which, i);
            }
            grid.sync();
            synced = true;
            if (clk && me == 0) {
                const long long t1 = clock64();
                clk[k] += static_cast<unsigned long long>(t1 - t0), clk[kRoundSteps + k] += 1;
                t0 = t1;
            }
        }
        if (clk && me == 0) t0 = clock64();  // the round's head (its sync) is not a step's
    }
}

__global__ void init_kernel(RoundState s, const int32_t* sign) {
    const int32_t N = s.n + s.L + 1;
    for (int32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < N; v += gridDim.x * blockDim.x) {
        s.label[v] = s.tail[v] = s.link[v] = v;
        s.charge[v] = v < s.n ? sign[v] : 0;
        s.size[v] = 1;
        s.repk[v] = v == s.G ? RankKeys::kNone : rep_key(1, v);
        s.target[v] = -1, s.next_member[v] = -1, s.old_tail[v] = -1, s.wbuf[v] = -1;
        s.key[v] = RankKeys::kNone, s.best[v] = RankKeys::kNone, s.ctheta[v] = RankKeys::kNone, s.bound[v] = RankKeys::kNone;
        s.cstamp[v] = 0;
        s.stamp[v] = v < s.n ? 1 : 0, s.reopen_stamp[v] = 0, s.scan_stamp[v] = 0;
        if (v < s.n) {
            s.cursor[v] = RingCursor{};
            s.active[1][v] = s.open[1][v] = v;  // round 1's lists
        } else if (v < s.n + s.L) {
            s.lake_cursor[v - s.n] = s.adj_start[v - s.n];
        }
    }
}

// The plaquette bitmap (kernels/plaquette_bitmap.h) on the device, from the residues (sorted
// by id, so a plaquette's residues are contiguous): bits, a plaquette's first residue flagged.
__global__ void occupy_kernel(const int32_t* rr, const int32_t* rc, int32_t n, PlaquetteBits occ,
                              unsigned long long* bits, int32_t* flag) {
    for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int64_t b = occ.bit(rr[i], rc[i]);
        atomicOr(bits + (b >> 6), 1ull << (b & 63));
        flag[i] = i == 0 || occ.bit(rr[i - 1], rc[i - 1]) != b;
    }
}

__global__ void popcount_kernel(const uint64_t* bits, int64_t words, int32_t* out) {
    for (int64_t w = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; w < words;
         w += static_cast<int64_t>(gridDim.x) * blockDim.x)
        out[w] = __popcll(bits[w]);
}

// first[k]: the first residue of the k-th occupied plaquette; n after the last.
__global__ void first_kernel(const int32_t* flag, const int32_t* at, int32_t n, int32_t* first) {
    for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (flag[i]) first[at[i]] = i;
        if (i == n - 1) first[at[i] + flag[i]] = n;
    }
}

int grid_for(int64_t n) {
    return static_cast<int>(std::min<int64_t>(std::max<int64_t>((n + kThreads - 1) / kThreads, 1), 132 * 16));
}

template <class T>
StreamBuffer<T> upload(const T* src, size_t n, cudaStream_t s) {
    StreamBuffer<T> d(n, s, "cut rounds: cudaMallocAsync");
    if (n) check(cudaMemcpyAsync(d.get(), src, n * sizeof(T), cudaMemcpyHostToDevice, s), "cut rounds: upload");
    return d;
}

// A wide step's threads, from the host's last look at the counts (up to kWideBatch rounds old:
// the threads loop to the device's counts).
int64_t wide_estimate(const RoundCounts& c, RoundStep which, int64_t N) {
    switch (which) {
        case kSearch: return c.active + c.hot + c.bcount - c.bsorted;
        case kFull: case kSift: return c.bcount;
        case kSample: return kThetaSample;
        case kScan: return N;
        case kRelabel: return c.active + c.bcount;
        case kMerge: case kFix: case kWake: return 2 * static_cast<int64_t>(c.open);
        case kWakeJoin: return N / 4;
        case kColdSearch: case kColdMove: return c.ccount;
        default: return c.open;
    }
}

double ms_since(std::chrono::steady_clock::time_point& t) {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - t).count();
    t = now;
    return ms;
}

// The state's node arrays (N int32 each, then the lakes' cursors, in one allocation) and its
// 64-bit arrays (N each, then the theta sample), in their order there.
std::array<int32_t**, 23> node_arrays(RoundState& s) {
    return {&s.label, &s.charge, &s.target, &s.next_member, &s.tail, &s.old_tail, &s.link, &s.stamp,
            &s.reopen_stamp, &s.active[0], &s.active[1], &s.open[0], &s.open[1], &s.reopened, &s.size,
            &s.scan_stamp, &s.bmem, &s.hot[0], &s.hot[1], &s.wbuf, &s.cstamp, &s.cpool[0], &s.cpool[1]};
}
std::array<uint64_t**, 7> key_arrays(RoundState& s) {
    return {&s.key, &s.best, &s.cuts, &s.repk, &s.ctheta, &s.bound, &s.sample};
}

// TESSERA_TRACE: a driver's clocks per step (kRoundSteps times, then runs), read back; the SM clock in kHz.
int step_clocks(const unsigned long long* dev, unsigned long long (&c)[2 * kRoundSteps]) {
    check(cudaMemcpy(c, dev, sizeof c, cudaMemcpyDeviceToHost), "cut rounds: trace");
    int d = 0, khz = 1;
    cudaGetDevice(&d);
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d);
    return khz;
}
void print_step_clocks(const unsigned long long (&c)[2 * kRoundSteps], int khz, bool steps_not_run) {
    for (int k = 0; k < kRoundSteps; ++k)
        if (steps_not_run || c[kRoundSteps + k])
            std::fprintf(stderr, "tessera:   %-8s %9.2f ms  %7llu runs  %7.2f us a run\n", kStepNames[k], c[k] / (khz * 1.0),
                         c[kRoundSteps + k], c[kRoundSteps + k] ? 1e3 * c[k] / khz / c[kRoundSteps + k] : 0.0);
}

// TESSERA_CHECK_ROUNDS: the state between rounds checked on the host (kernels/cut_rounds_check.h),
// the device's arrays copied and the host's pointers set at the same offsets.
std::string device_state_fault(const RoundState& st, const RoundCounts& counts, const int32_t* i32, size_t n32,
                               const uint64_t* u64, size_t n64, cudaStream_t s) {
    std::vector<int32_t> h32(n32);
    std::vector<uint64_t> h64(n64);
    check(cudaMemcpyAsync(h32.data(), i32, n32 * sizeof(int32_t), cudaMemcpyDeviceToHost, s), "cut rounds: check");
    check(cudaMemcpyAsync(h64.data(), u64, n64 * sizeof(uint64_t), cudaMemcpyDeviceToHost, s), "cut rounds: check");
    check(cudaStreamSynchronize(s), "cut rounds: check");
    RoundState h = st;
    RoundCounts c = counts;
    h.counts = &c;
    for (int32_t** a : node_arrays(h)) *a = h32.data() + (*a - i32);
    h.lake_cursor = h32.data() + (h.lake_cursor - i32);
    for (uint64_t** a : key_arrays(h)) *a = h64.data() + (*a - u64);
    return round_state_fault(h);
}

}  // namespace

void run_rounds(const RoundArrays& in, std::vector<uint64_t>& codes, RoundCounts& counts, RoundTimes& times,
                cudaStream_t s) {
    codes.clear();
    counts = RoundCounts{};
    times = RoundTimes{};
    if (in.n == 0) return;
    auto t = std::chrono::steady_clock::now();
    const size_t n = static_cast<size_t>(in.n), N = n + static_cast<size_t>(in.L) + 1;
    auto rr = upload(in.rr, n, s), rc = upload(in.rc, n, s), sign = upload(in.sign, n, s);
    auto lake_node = upload(in.lake_node, 2 * n, s);
    auto adj_start = upload(in.adj_start, static_cast<size_t>(in.L) + 1, s);
    auto adj = upload(in.adj, static_cast<size_t>(in.n_adj), s);
    // The bitmap: the caller's, or built here from rr, rc and the box.
    const int64_t n_words = in.bits ? in.n_words : (in.rows * in.cols + 63) / 64;
    StreamBuffer<uint64_t> bits(static_cast<size_t>(n_words), s, "cut rounds: bitmap");
    StreamBuffer<int32_t> word_rank(static_cast<size_t>(n_words), s, "cut rounds: word ranks");
    StreamBuffer<int32_t> first(in.bits ? static_cast<size_t>(in.n_first) : n + 1, s, "cut rounds: first residues");
    const PlaquetteBits box{nullptr, nullptr, nullptr, in.r0, in.c0, in.rows, in.cols};
    if (in.bits) {
        check(cudaMemcpyAsync(bits.get(), in.bits, static_cast<size_t>(n_words) * 8, cudaMemcpyHostToDevice, s), "cut rounds: upload");
        check(cudaMemcpyAsync(word_rank.get(), in.word_rank, static_cast<size_t>(n_words) * 4, cudaMemcpyHostToDevice, s),
              "cut rounds: upload");
        check(cudaMemcpyAsync(first.get(), in.first, static_cast<size_t>(in.n_first) * 4, cudaMemcpyHostToDevice, s),
              "cut rounds: upload");
    } else {
        check(cudaMemsetAsync(bits.get(), 0, static_cast<size_t>(n_words) * 8, s), "cut rounds: bitmap");
        StreamBuffer<int32_t> flag(n, s, "cut rounds: flags"), at(n, s, "cut rounds: flags"),
            pop(static_cast<size_t>(n_words), s, "cut rounds: popcounts");
        occupy_kernel<<<grid_for(in.n), kThreads, 0, s>>>(rr.get(), rc.get(), in.n, box,
                                                          reinterpret_cast<unsigned long long*>(bits.get()), flag.get());
        popcount_kernel<<<grid_for(n_words), kThreads, 0, s>>>(bits.get(), n_words, pop.get());
        size_t b1 = 0, b2 = 0;
        check(cub::DeviceScan::ExclusiveSum(nullptr, b1, pop.get(), word_rank.get(), n_words, s), "cut rounds: scan");
        check(cub::DeviceScan::ExclusiveSum(nullptr, b2, flag.get(), at.get(), in.n, s), "cut rounds: scan");
        StreamBuffer<char> temp(std::max(b1, b2), s, "cut rounds: scan space");
        check(cub::DeviceScan::ExclusiveSum(temp.get(), b1, pop.get(), word_rank.get(), n_words, s), "cut rounds: scan");
        check(cub::DeviceScan::ExclusiveSum(temp.get(), b2, flag.get(), at.get(), in.n, s), "cut rounds: scan");
        first_kernel<<<grid_for(in.n), kThreads, 0, s>>>(flag.get(), at.get(), in.n, first.get());
        check(cudaGetLastError(), "cut rounds: bitmap");
    }
    StreamBuffer<int32_t> i32(N * 23 + static_cast<size_t>(in.L) + 1, s, "cut rounds: node arrays");
    StreamBuffer<uint64_t> u64(N * 6 + kThetaSample, s, "cut rounds: keys");
    StreamBuffer<RingCursor> cursor(n, s, "cut rounds: cursors");
    StreamBuffer<RoundCounts> dcounts(1, s, "cut rounds: counts");

    RoundState st;
    st.n = in.n, st.L = in.L, st.G = in.n + in.L, st.H = in.H, st.W = in.W, st.radius = in.radius, st.keys = in.keys;
    st.rr = rr.get(), st.rc = rc.get(), st.lake_node = lake_node.get(), st.adj_start = adj_start.get(), st.adj = adj.get();
    st.occ = PlaquetteBits{bits.get(), word_rank.get(), first.get(), in.r0, in.c0, in.rows, in.cols};
    (void)box;
    int32_t* p = i32.get();
    for (int32_t** a : node_arrays(st)) *a = p, p += N;
    st.lake_cursor = p;
    uint64_t* q = u64.get();
    for (uint64_t** a : key_arrays(st)) *a = q, q += N;
    st.tune = in.tune;
    // TESSERA_COLD_MARGIN, TESSERA_COLD_FROM: the cold pool's margin and first round, for A/B studies
    // (margin -1: every member listed).
    if (const char* margin = std::getenv("TESSERA_COLD_MARGIN")) st.tune.cold_margin = std::atoi(margin);
    if (const char* from = std::getenv("TESSERA_COLD_FROM")) st.tune.cold_from = std::atoi(from);
    // TESSERA_BLOCK_OPEN: the one-block kernel's bound on open clusters, for A/B studies.
    if (const char* open = std::getenv("TESSERA_BLOCK_OPEN")) st.tune.block_open = std::max(0, std::atoi(open));
    st.cursor = cursor.get();
    st.counts = dcounts.get();
    counts.active = counts.open = in.n;
    check(cudaMemcpyAsync(dcounts.get(), &counts, sizeof counts, cudaMemcpyHostToDevice, s), "cut rounds: counts");
    init_kernel<<<grid_for(static_cast<int64_t>(N)), kThreads, 0, s>>>(st, sign.get());
    check(cudaGetLastError(), "cut rounds: init");
    check(cudaStreamSynchronize(s), "cut rounds: setup");
    times.upload = ms_since(t);

    const bool trace = std::getenv("TESSERA_TRACE") != nullptr;
    // TESSERA_CHECK_ROUNDS: the state checked after each launch (one round a launch of the wide steps).
    const bool check_rounds = std::getenv("TESSERA_CHECK_ROUNDS") != nullptr;
    const char* mode_env = std::getenv("TESSERA_BLOCK_MODE");
    const int block_mode = mode_env ? std::atoi(mode_env) : 4;
    // Mode 3: helper blocks, as many as stay resident beside the leader (cooperative launch).
    int help_blocks = 1;
    if (block_mode >= 3) {
        int dev = 0, sms = 0, per_sm = 0, coop = 0;
        check(cudaGetDevice(&dev), "cut rounds: device");
        check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cut rounds: device");
        check(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev), "cut rounds: device");
        check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, block_rounds, kBlockThreads, 0), "cut rounds: occupancy");
        const char* blocks_env = std::getenv("TESSERA_HELP_BLOCKS");
        help_blocks = coop ? std::max(1, std::min(sms * per_sm, blocks_env ? std::atoi(blocks_env) : sms)) : 1;
    }
    const char* warp_env = std::getenv("TESSERA_WARP_WALK");
    // 1, 2 (default), 4: 32, 64, 128 positions a step across rings (H100, holes 16384²: 2 gave
    // 16.6 us a tail round's search, 4 17.5, the earlier 32-position walk within a ring 18.0).
    int warp_walk = warp_env ? std::atoi(warp_env) : 2;
    // TESSERA_FUSE_ONE=0: one open cluster's pick..wake as separate steps (as before).
    const char* fuse_env = std::getenv("TESSERA_FUSE_ONE");
    int fuse_one = fuse_env ? std::atoi(fuse_env) : 1;
    // TESSERA_GRID_ROUNDS=0: every round above the one-block kernel's as wide kernels (as before);
    // TESSERA_BLOCK_FROM: the one-block kernel's threshold (tests: small, so the wide forms run).
    const char* grid_env = std::getenv("TESSERA_GRID_ROUNDS");
    const char* from_env = std::getenv("TESSERA_BLOCK_FROM");
    const int32_t block_from = from_env ? std::max(0, std::atoi(from_env)) : kBlockFrom;
    const int32_t block_up_to = from_env ? 4 * block_from : kBlockUpTo;
    const char* grid_up_env = std::getenv("TESSERA_GRID_UP_TO");  // rounds above it: one kernel a step
    const int32_t grid_up_to = grid_up_env ? std::atoi(grid_up_env) : kGridUpTo;
    int grid_blocks = 0, small_blocks = 0;
    if (!grid_env || std::atoi(grid_env) != 0) {
        int dev = 0, sms = 0, per_sm = 0, coop = 0;
        check(cudaGetDevice(&dev), "cut rounds: device");
        check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cut rounds: device");
        check(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev), "cut rounds: device");
        check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_rounds, kBlockThreads, 0), "cut rounds: occupancy");
        grid_blocks = coop ? sms * per_sm : 0;
        // TESSERA_GRID_BLOCKS, TESSERA_SMALL_GRID_BLOCKS: fewer blocks on the grid (studies of the sync's cost).
        if (const char* nb = std::getenv("TESSERA_GRID_BLOCKS")) grid_blocks = std::min(grid_blocks, std::max(1, std::atoi(nb)));
        small_blocks = std::max(1, grid_blocks / 4);
        if (const char* nb = std::getenv("TESSERA_SMALL_GRID_BLOCKS")) small_blocks = std::min(grid_blocks, std::max(1, std::atoi(nb)));
    }
    StreamBuffer<int32_t> slow(grid_blocks > 0 ? N + 1 : 0, s, "cut rounds: searches for warps");
    if (grid_blocks > 0) check(cudaMemsetAsync(slow.get() + N, 0, sizeof(int32_t), s), "cut rounds: searches for warps");
    const char* help_env = std::getenv("TESSERA_HELP_MIN");
    int32_t help_min = help_env ? std::atoi(help_env) : kBlockThreads / 4;
    StreamBuffer<HelpJob> job(1, s, "cut rounds: help job");
    StreamBuffer<RoundCounts> mirror(1, s, "cut rounds: counts copy");
    const HelpJob job0{};
    check(cudaMemcpyAsync(job.get(), &job0, sizeof job0, cudaMemcpyHostToDevice, s), "cut rounds: help job");
    StreamBuffer<unsigned long long> clk(trace ? 2 * kRoundSteps : 0, s, "cut rounds: trace clocks");
    StreamBuffer<unsigned long long> gclk(trace ? 2 * kRoundSteps : 0, s, "cut rounds: trace clocks");
    if (trace) check(cudaMemsetAsync(clk.get(), 0, 2 * kRoundSteps * sizeof(unsigned long long), s), "cut rounds: trace");
    if (trace) check(cudaMemsetAsync(gclk.get(), 0, 2 * kRoundSteps * sizeof(unsigned long long), s), "cut rounds: trace");
    int trace_lines = 0;
    // TESSERA_TRACE_PROBES (with TESSERA_TRACE): each search past its cached key counts its ring
    // positions and label probes (three global atomics a search: it slows the wide rounds).
    const bool trace_probes = trace && std::getenv("TESSERA_TRACE_PROBES") != nullptr;
    StreamBuffer<uint64_t> probes(trace_probes ? 4 : 0, s, "cut rounds: trace probes");
    uint64_t tail_probes[4] = {0, 0, 0, 0};
    if (trace_probes) {
        check(cudaMemsetAsync(probes.get(), 0, 4 * sizeof(uint64_t), s), "cut rounds: trace");
        st.probes = probes.get();
    }
    for (;;) {
        if (counts.open == 0) break;
        const int32_t work = round_work(counts.active, counts.bopen ? counts.hot : 0, counts.ccount);
        if (check_rounds) st.round_limit = counts.round + 1;  // one round a launch, checked after it
        const bool block = work <= block_from && counts.open <= st.tune.block_open;
        bool gridded = false;
        if (!block && grid_blocks > 0 && work <= grid_up_to) {
            // Small rounds (a long tail of many open clusters) on fewer blocks: a grid sync costs less.
            const bool small = work <= kSmallGridUpTo;
            int32_t min_work = small ? block_from : kSmallGridUpTo, max_work = small ? kSmallGridUpTo : grid_up_to;
            int32_t open_max = small ? st.tune.block_open : std::numeric_limits<int32_t>::max();
            int32_t* slow_p = slow.get();
            int32_t* n_slow_p = slow.get() + N;
            unsigned long long* gclk_p = trace ? gclk.get() : nullptr;
            void* args[] = {&st, &min_work, &open_max, &max_work, &slow_p, &n_slow_p, &warp_walk, &gclk_p};
            const cudaError_t e = cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(grid_rounds),
                                                              dim3(small ? small_blocks : grid_blocks),
                                                              dim3(kBlockThreads), args, 0, s);
            if (e == cudaErrorCooperativeLaunchTooLarge) {
                (void)cudaGetLastError();  // fewer SMs than the device has (MPS, a partition): wide kernels
                grid_blocks = 0;
            } else {
                check(e, "cut rounds: cooperative launch");
                gridded = true;
                ++times.grid_launches;
            }
        }
        if (gridded) {
            // The grid ran rounds until theirs left its range: the counts below say where to go on.
        } else if (block) {
            if (trace_probes) check(cudaMemsetAsync(probes.get(), 0, 4 * sizeof(uint64_t), s), "cut rounds: trace");
            int32_t max_active = block_up_to;
            unsigned long long* clk_p = trace ? clk.get() : nullptr;
            HelpJob* job_p = job.get();
            RoundCounts* mirror_p = mirror.get();
            int mode = block_mode;
            if (help_blocks > 1) {
                check(cudaMemcpyAsync(job.get(), &job0, sizeof job0, cudaMemcpyHostToDevice, s), "cut rounds: help job");
                void* args[] = {&st, &max_active, &mode, &clk_p, &job_p, &mirror_p, &help_min, &warp_walk, &fuse_one};
                const cudaError_t e = cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(block_rounds),
                                                                  dim3(help_blocks), dim3(kBlockThreads), args, 0, s);
                if (e == cudaErrorCooperativeLaunchTooLarge) {
                    // Fewer SMs than the device has (MPS, a partition): the leader alone, the same cuts.
                    (void)cudaGetLastError();
                    help_blocks = 1;
                    block_rounds<<<1, kBlockThreads, 0, s>>>(st, max_active, mode, clk_p, job_p, mirror_p, help_min,
                                                              warp_walk, fuse_one);
                } else {
                    check(e, "cut rounds: cooperative launch");
                }
            } else {
                block_rounds<<<1, kBlockThreads, 0, s>>>(st, max_active, mode, clk_p, job_p, mirror_p, help_min, warp_walk,
                                                          fuse_one);
            }
            ++times.block_launches;
        } else {
            // A few rounds between looks at the counts: the steps read their counts on the
            // device (grid-stride loops, sized by the last counts seen), a round after the
            // last one does nothing.
            for (int r = 0; r < (check_rounds ? 1 : kWideBatch); ++r) {
                for (int k = 0; k < kRoundSteps; ++k) {
                    const RoundStep which = static_cast<RoundStep>(k);
                    if (which == kSort) {
                        sort_kernel<<<1, kBlockThreads, 0, s>>>(st);
                    } else if (single_step(which)) {
                        single_kernel<<<1, 1, 0, s>>>(st, which);
                    } else {
                        step_kernel<<<grid_for(wide_estimate(counts, which, static_cast<int64_t>(N))), kThreads, 0, s>>>(st, which);
                    }
                }
            }
        }
        check(cudaGetLastError(), "cut rounds: rounds");
        const int32_t round_before = counts.round;
        check(cudaMemcpyAsync(&counts, dcounts.get(), sizeof counts, cudaMemcpyDeviceToHost, s), "cut rounds: counts");
        check(cudaStreamSynchronize(s), "cut rounds: rounds");
        const double ms = ms_since(t);
        (gridded ? times.grid : block ? times.block : times.wide) += ms;
        if (trace_probes && block) {
            uint64_t p[4];
            check(cudaMemcpy(p, probes.get(), sizeof p, cudaMemcpyDeviceToHost), "cut rounds: trace");
            for (int j = 0; j < 4; ++j) tail_probes[j] += p[j];
        }
        if (gridded) times.grid_rounds += counts.round - round_before;
        else if (block) times.block_rounds += counts.round - round_before;
        if (trace && ++trace_lines <= 200)
            std::fprintf(stderr,
                         "tessera: device rule %s to round %d: %d active, %d open, %d cuts, parked %d (%d members, %d hot; "
                         "%d full searches, %d scans, %d parks), %d cold (%d searched, %d moved rounds), %.2f ms\n",
                         gridded ? "grid" : block ? "one block" : "wide", counts.round, counts.active, counts.open, counts.cuts, counts.big,
                         counts.bcount, counts.hot, counts.fulls, counts.scans, counts.parks, counts.ccount, counts.cfulls,
                         counts.cmoves, ms);
        if (counts.broken)
            throw std::runtime_error("cut rounds: step " + std::to_string(counts.broken) + " found the state broken in round " +
                                     std::to_string(counts.round));
        if (check_rounds) {
            const std::string fault = device_state_fault(st, counts, i32.get(), i32.size(), u64.get(), u64.size(), s);
            if (!fault.empty())
                throw std::runtime_error(std::string("cut rounds: the state after a ") + (gridded ? "grid" : block ? "one-block" : "wide") +
                                         " launch: " + fault);
        }
    }
    times.rounds = counts.round - 1;
    times.wide_rounds = times.rounds - times.block_rounds - times.grid_rounds;
    times.searched = counts.searched;
    if (trace && times.block_launches) {
        unsigned long long c[2 * kRoundSteps];
        const int khz = step_clocks(clk.get(), c);
        double total = 0;
        for (int k = 0; k < kRoundSteps; ++k) total += c[k] / (khz * 1.0);
        std::fprintf(stderr, "tessera: one-block rounds (mode %d): %d rounds, %.2f ms by SM clock (%d kHz), %.2f us a round; "
                             "%lld members walked, %d scans; %d blocks, help from %d nodes, warp walks %d; "
                     "%d rounds with one open cluster fused (pick: sift + pick..wake there)\n",
                     block_mode, times.block_rounds, total, khz, 1e3 * total / std::max(1, times.block_rounds),
                     static_cast<long long>(counts.walked), counts.scans, help_blocks, help_min, warp_walk,
                     fuse_one ? counts.linked_one : 0);
        if (trace_probes)
            std::fprintf(stderr, "tessera: one-block searches: %llu ring positions, %llu label probes and lake steps; "
                             "the largest search of each round summed: %llu (%.1f a round)\n",
                     static_cast<unsigned long long>(tail_probes[0]), static_cast<unsigned long long>(tail_probes[1]),
                     static_cast<unsigned long long>(tail_probes[3]),
                     static_cast<double>(tail_probes[3]) / std::max(1, times.block_rounds));
        print_step_clocks(c, khz, true);
    }
    if (trace && times.grid_launches) {
        unsigned long long c[2 * kRoundSteps];
        const int khz = step_clocks(gclk.get(), c);
        std::fprintf(stderr, "tessera: grid rounds: %d rounds on %d blocks (up to %d nodes: %d), by thread 0's SM clock (each step "
                             "to the sync after it):\n",
                     times.grid_rounds, grid_blocks, kSmallGridUpTo, small_blocks);
        print_step_clocks(c, khz, false);
    }

    const int32_t m = counts.cuts;
    StreamBuffer<uint64_t> sorted(static_cast<size_t>(m), s, "cut rounds: sorted cuts");
    size_t temp_bytes = 0;
    check(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, st.cuts, sorted.get(), m, 0, 64, s), "cut rounds: sort");
    StreamBuffer<char> temp(temp_bytes, s, "cut rounds: sort space");
    check(cub::DeviceRadixSort::SortKeys(temp.get(), temp_bytes, st.cuts, sorted.get(), m, 0, 64, s), "cut rounds: sort");
    check(cudaStreamSynchronize(s), "cut rounds: sort");
    times.sort = ms_since(t);
    codes.resize(static_cast<size_t>(m));
    if (m) check(cudaMemcpyAsync(codes.data(), sorted.get(), codes.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, s),
                 "cut rounds: download");
    check(cudaStreamSynchronize(s), "cut rounds: download");
    times.download = ms_since(t);
}

}  // namespace tessera::cuda
