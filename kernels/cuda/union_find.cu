// Weighted union-find over the own window on the device (ARCHITECTURE.md sections 4 and 8).
//
// The result is canonical (each pixel's root is its component's smallest own-local index, k
// relative to it, whether reached in one hop or through its tile root), so the driver's offset
// solve gives the same k and labels as the CPU's per-tile union-find plus cross-tile
// constraints, whatever the device's tiling.
//
// A full-image kernel over tiles of 64 x 32 pixels (one block of 256 threads per tile; Geo),
// then a kernel over the tile roots it lists (or, where they overflow the list, a second
// full-image pass):
//
//  A. tile_kernel (tiles taken in raster order from an atomic ticket):
//     1. load phase and flags; the runs joined by unblocked right edges inside each 32-pixel
//        row segment become stars around their first pixel (ballot + segmented scan of -n);
//     2. the remaining in-tile edges (segment boundaries, vertical edges) go to a block-wide
//        job list and are united in parallel in SHARED memory with a 64-bit atomicCAS hooking
//        the larger root under the smaller; a vertical edge whose left neighbours close a
//        square of unblocked edges is skipped;
//     3. flatten in shared memory (hooked run starts walk to their root, then every pixel
//        one hop);
//     4. verify every in-tile edge against the tile potentials (exact: the tile's relative
//        potentials are the final ones) and write nodes[l] = pack(tile root, k - k(tile root));
//        then publish the tile (release flag);
//     5. count the reliable pixels under each tile root in shared memory and append the tile
//        roots that have any to the tile-root list (pack(tile root, count));
//     6. the edges across the tile's left and top borders (the neighbours were published
//        earlier: their tickets are smaller) are united in global memory, one CAS unite per
//        run of border edges that join the same pair of (neighbour parent, tile root); every
//        other edge of the run gets its relation from the run's first edge, so each border
//        edge is still checked against the final potentials.
//  B. root_kernel: every listed tile root -> (root, k) (a word store, as a find's), its count
//     added to the root word's high half; the first count of a root appends it to a small
//     list. The pixels keep pointing at their tile roots: two levels, resolved by apply
//     (mark_tile_roots) and resolve_words, not by a pass over every pixel. Where the tile-root
//     list overflows (more than cap tile components), flatten_count_kernel does the same for
//     every pixel instead: each -> (root, k), counts summed per tile parent in shared memory.
//     harvest_kernel then moves (root, count) into the list (and resets the root words;
//     harvest_records writes the counts back once the list is taken).
//
// union_find_components then sorts the list (on the host when short, else a CUB radix sort)
// and downloads it; more components than the list holds fall back to a selection over all
// pixels.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <climits>

#include "kernels/cuda/common.cuh"
#include "kernels/invariant.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

constexpr unsigned kFull = 0xffffffffu;

// Tile geometry: TW columns (multiple of 32: whole warp segments) by TH = 32 rows (the left
// border is one warp); NT threads, thread tid owns column tid % TW of rows
// tid / TW + j * ROWSTEP (j < PER), so that a warp reads whole 32-pixel row segments.
template <int TW_, int NT_>
struct Geo {
    static constexpr int TW = TW_, TH = 32, TP = TW * TH, NT = NT_, PER = TP / NT, ROWSTEP = NT / TW, NW = NT / 32;
    static constexpr int MINB = 1536 / NT;  // resident blocks per SM asked of the register allocator
    static_assert(TW % 32 == 0 && NT % TW == 0 && TP % NT == 0 && TW / 32 + 1 <= NW && TP <= 8192, "tile geometry");
    // Kernel A's dynamic shared memory: words, phase, job queue, flags.
    static constexpr size_t kSmemA = static_cast<size_t>(TP) * (8 + 4 + 2 + 1);
};

// Device scratch of one tile_union_find call.
struct Scratch {
    unsigned long long* conflicts = nullptr;
    unsigned long long* nroots = nullptr;  // roots appended (may exceed cap: then list is partial)
    unsigned int* ticket = nullptr;
    unsigned int* done = nullptr;  // one flag per tile
    uint64_t* list = nullptr;      // cap entries: root, then pack(root, count)
    unsigned long long cap = 0;
    unsigned long long* ntroots = nullptr;  // tile roots appended (more than cap: flatten every pixel)
    uint64_t* troots = nullptr;             // cap entries: pack(tile root, its reliable pixels)
};

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---- union-find in global memory (the same invariants in shared memory below) ----

// Root of x and k(x) - k(root), with path halving. Only words whose parent is not
// themselves are ever overwritten by a plain store (a non-root never becomes a root again,
// and every value stored points at an ancestor with the right potential), so concurrent
// finds and hooks stay consistent; roots change only through the CAS in unite.
__device__ uint32_t find(uint64_t* nodes, uint32_t x, int32_t& k) {
    int32_t acc = 0;
    uint64_t w = dev::load(nodes + x);
    while (dev::parent(w) != x) {
        const uint32_t p = dev::parent(w);
        const uint64_t wp = dev::load(nodes + p);
        const uint32_t pp = dev::parent(wp);
        if (pp == p) {  // p is a root
            acc += dev::potential(w);
            x = p;
            w = wp;
        } else {
            const int32_t pot = dev::potential(w) + dev::potential(wp);
            dev::store(nodes + x, dev::pack(pp, pot));
            acc += pot;
            x = pp;
            w = dev::load(nodes + pp);
        }
    }
    k = acc;
    return x;
}

// Adds k(b) - k(a) = d and returns k(b) - k(a) as the structure has it for good: d after a
// hook, the existing relation when a and b were already connected (a conflict if it is not d).
__device__ int32_t unite_rel(uint64_t* nodes, uint32_t a, uint32_t b, int32_t d) {
    for (;;) {
        int32_t ka, kb;
        const uint32_t ra = find(nodes, a, ka);
        const uint32_t rb = find(nodes, b, kb);
        // ra was a root at both finds, hence in between: both relations are to the same root.
        if (ra == rb) return kb - ka;
        const int32_t diff = d + ka - kb;  // k(rb) - k(ra)
        // Always hook the larger index under the smaller (section 4): the CAS succeeds only
        // while that root is still a root (its word is pack(self, 0)).
        if (ra < rb) {
            if (dev::cas(nodes + rb, dev::pack(rb, 0), dev::pack(ra, diff)) == dev::pack(rb, 0)) return d;
        } else {
            if (dev::cas(nodes + ra, dev::pack(ra, 0), dev::pack(rb, -diff)) == dev::pack(ra, 0)) return d;
        }
    }
}

// Root of x and k(x) - k(root) without writing (kernel B: no hooks any more, every word read
// is a valid (ancestor, potential) pair whenever it is read).
__device__ __forceinline__ uint32_t walk(const uint64_t* nodes, uint32_t x, int32_t& acc) {
    for (;;) {
        const uint64_t w = __ldcg(reinterpret_cast<const unsigned long long*>(nodes + x));
        const uint32_t p = dev::parent(w);
        if (p == x) return x;
        acc += dev::potential(w);
        x = p;
    }
}

// ---- union-find in shared memory ----

// While the unites of step 2 run, every access to a word is atomic (shared-memory atomics are
// cheap, and compute-sanitizer's racecheck then sees no hazard); the other steps are separated
// by barriers and read or write disjoint words.
__device__ __forceinline__ uint64_t sld(uint64_t* p) {
    return atomicAdd(reinterpret_cast<unsigned long long*>(p), 0ull);
}
__device__ __forceinline__ void sst(uint64_t* p, uint64_t v) {
    (void)atomicExch(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

__device__ uint32_t sfind(uint64_t* s, uint32_t x, int32_t& k) {
    int32_t acc = 0;
    uint64_t w = sld(s + x);
    while (dev::parent(w) != x) {
        const uint32_t p = dev::parent(w);
        const uint64_t wp = sld(s + p);
        const uint32_t pp = dev::parent(wp);
        if (pp == p) {
            acc += dev::potential(w);
            x = p;
            w = wp;
        } else {
            const int32_t pot = dev::potential(w) + dev::potential(wp);
            sst(s + x, dev::pack(pp, pot));
            acc += pot;
            x = pp;
            w = sld(s + pp);
        }
    }
    k = acc;
    return x;
}

__device__ void sunite(uint64_t* s, uint32_t a, uint32_t b, int32_t d) {
    for (;;) {
        int32_t ka, kb;
        const uint32_t ra = sfind(s, a, ka);
        const uint32_t rb = sfind(s, b, kb);
        if (ra == rb) return;  // in-tile edges are verified after the flatten
        const int32_t diff = d + ka - kb;
        const uint32_t hi = ra < rb ? rb : ra, lo = ra < rb ? ra : rb;
        const int32_t pot = ra < rb ? diff : -diff;
        const unsigned long long expect = dev::pack(hi, 0);
        if (atomicCAS(reinterpret_cast<unsigned long long*>(s + hi), expect,
                      static_cast<unsigned long long>(dev::pack(lo, pot))) == expect)
            return;
    }
}

// One warp's border edges (lane i: edge i along the border). open: the edge exists and is
// unblocked; pg/qg: own-local indices of its outer and inner pixel (k(q) - k(p) = d); wn: the
// outer pixel's word as read; wq: the inner pixel's tile word (tile-local root, k). Returns
// the warp's number of edges that disagree with the final potentials.
__device__ unsigned border_edges(uint64_t* nodes, bool open, int32_t d, uint32_t pg, uint32_t qg, uint64_t wn,
                                 uint64_t wq, unsigned lane) {
    const uint32_t P = dev::parent(wn), T = dev::parent(wq);
    const int32_t kp = dev::potential(wn), kq = dev::potential(wq);
    const bool open_prev = __shfl_up_sync(kFull, static_cast<int>(open), 1) != 0;
    const uint32_t P_prev = __shfl_up_sync(kFull, P, 1), T_prev = __shfl_up_sync(kFull, T, 1);
    // Within a run (consecutive open edges whose outer pixels share the parent P and inner
    // pixels the tile root T) k(p) - k(P) and k(q) - k(T) are fixed for good, so the run's
    // first edge connects them all and gives every edge's relation.
    const bool start = open && (lane == 0 || !open_prev || P_prev != P || T_prev != T);
    int32_t rel = start ? unite_rel(nodes, pg, qg, d) : 0;
    const unsigned starts = __ballot_sync(kFull, start);
    const unsigned upto = lane == 31 ? kFull : ((2u << lane) - 1u);
    const unsigned m = starts & upto;
    const int st = m ? 31 - __clz(static_cast<int>(m)) : 0;
    const int32_t rel_s = __shfl_sync(kFull, rel, st);
    const int32_t kq_s = __shfl_sync(kFull, kq, st), kp_s = __shfl_sync(kFull, kp, st);
    if (open && !start) rel = rel_s + (kq - kq_s) - (kp - kp_s);  // k(q) - k(p)
    return __reduce_add_sync(kFull, (open && rel != d) ? 1u : 0u);
}

// Exclusive offset of this thread's c items in a block-wide list, and the list's total.
// Ends with every thread past a barrier; s_warp must not be rewritten before the next barrier.
template <int NW>
__device__ __forceinline__ unsigned block_offset(unsigned c, unsigned* s_warp, unsigned& total) {
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    unsigned x = c;
#pragma unroll
    for (unsigned o = 1; o < 32; o <<= 1) {
        const unsigned y = __shfl_up_sync(kFull, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) s_warp[warp] = x;
    __syncthreads();
    unsigned before = 0, sum = 0;
#pragma unroll
    for (int w = 0; w < NW; ++w) {
        const unsigned v = s_warp[w];
        sum += v;
        before += static_cast<unsigned>(w) < warp ? v : 0u;
    }
    total = sum;
    return before + x - c;
}

constexpr uint16_t kJobLeft = 1u << 14, kJobUp = 1u << 15, kJobIndex = kJobLeft - 1u;

template <class G>
__global__ void __launch_bounds__(G::NT, G::MINB) tile_kernel(DeviceArrays a, Window own, uint64_t* nodes, Scratch sc,
                                                      unsigned tiles_x) {
    constexpr int TW = G::TW, TH = G::TH, TP = G::TP, NT = G::NT, PER = G::PER, ROWSTEP = G::ROWSTEP;
    extern __shared__ __align__(16) unsigned char smem[];
    uint64_t* s_node = reinterpret_cast<uint64_t*>(smem);
    float* s_ph = reinterpret_cast<float*>(smem + 8 * TP);
    uint16_t* s_q = reinterpret_cast<uint16_t*>(smem + 12 * TP);
    uint8_t* s_fl = smem + 14 * TP;
    __shared__ unsigned s_tile, s_warp[G::NW];
    const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    if (tid == 0) {
        s_tile = atomicAdd(sc.ticket, 1u);  // raster order of start: the neighbours waited for run
    }
    __syncthreads();
    const unsigned tile = s_tile;
    const int64_t ty0 = static_cast<int64_t>(tile / tiles_x) * TH, tx0 = static_cast<int64_t>(tile % tiles_x) * TW;
    const int tw = static_cast<int>(min(static_cast<int64_t>(TW), own.cols - tx0));
    const int th = static_cast<int>(min(static_cast<int64_t>(TH), own.rows - ty0));
    const int tx = static_cast<int>(tid % TW), ty_first = static_cast<int>(tid / TW);
    const int64_t cols = own.cols;

    // 1. Load, then stars over the runs of each 32-pixel row segment. Pixels outside own
    //    (a partial tile) stay isolated roots and are never written.
    float ph[PER];
    uint8_t fl[PER];
    {
        const int64_t i0 = a.index(own.row0 + ty0 + ty_first, own.col0 + tx0 + tx);
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int ty = ty_first + j * ROWSTEP;
            ph[j] = 0.0f;
            fl[j] = kBlockRight | kBlockDown;
            if (tx < tw && ty < th) {
                const int64_t i = i0 + static_cast<int64_t>(j * ROWSTEP) * a.buf.cols;
                ph[j] = a.phase[i];
                fl[j] = a.flags[i];
            }
        }
    }
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int ty = ty_first + j * ROWSTEP, t = ty * TW + tx;
        const bool in = tx < tw && ty < th;
        const float ph_l = __shfl_up_sync(kFull, ph[j], 1);
        const unsigned fl_l = __shfl_up_sync(kFull, static_cast<unsigned>(fl[j]), 1);
        const bool join = in && lane > 0 && !(fl_l & kBlockRight);
        // k(c) - k(c-1) = -n(c-1 -> c) (section 2).
        int32_t s = join ? -dev::wrap_count(ph_l, ph[j]) : 0;
#pragma unroll
        for (unsigned o = 1; o < 32; o <<= 1) {
            const int32_t v = __shfl_up_sync(kFull, s, o);
            if (lane >= o) s += v;
        }
        const unsigned starts = __ballot_sync(kFull, !join);
        const unsigned upto = lane == 31 ? kFull : ((2u << lane) - 1u);
        const unsigned st = 31u - static_cast<unsigned>(__clz(static_cast<int>(starts & upto)));
        const int32_t s_st = __shfl_sync(kFull, s, static_cast<int>(st));
        s_node[t] = dev::pack(static_cast<uint32_t>(t) - lane + st, s - s_st);
        s_ph[t] = ph[j];
        s_fl[t] = fl[j];
    }
    __syncthreads();

    // 2. The other in-tile edges (segment boundaries, vertical edges) as a block-wide job list,
    //    so that they are united in parallel. Up-left -> up, up-left -> left and left -> here
    //    all open: already connected (by induction to the left), no job.
    unsigned jobs = 0, njobs = 0;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int ty = ty_first + j * ROWSTEP, t = ty * TW + tx;
        if (!(tx < tw && ty < th)) continue;
        const bool left_open = tx > 0 && !(s_fl[t - 1] & kBlockRight);
        const bool left = lane == 0 && left_open;
        bool up = false;
        if (ty > 0 && !(s_fl[t - TW] & kBlockDown))
            up = !(left_open && !(s_fl[t - TW - 1] & (kBlockRight | kBlockDown)));
        jobs |= (left ? 1u : 0u) << (2 * j);
        jobs |= (up ? 2u : 0u) << (2 * j);
        njobs += (left || up) ? 1u : 0u;
    }
    unsigned total;
    unsigned off = block_offset<G::NW>(njobs, s_warp, total);
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const unsigned b = (jobs >> (2 * j)) & 3u;
        if (b) {
            const int t = (ty_first + j * ROWSTEP) * TW + tx;
            s_q[off++] = static_cast<uint16_t>(t | ((b & 1u) ? kJobLeft : 0u) | ((b & 2u) ? kJobUp : 0u));
        }
    }
    __syncthreads();
    for (unsigned i = tid; i < total; i += NT) {
        const unsigned e = s_q[i], t = e & kJobIndex;
        if (e & kJobLeft) sunite(s_node, t - 1, t, -dev::wrap_count(s_ph[t - 1], s_ph[t]));
        if (e & kJobUp) sunite(s_node, t - TW, t, -dev::wrap_count(s_ph[t - TW], s_ph[t]));
    }
    __syncthreads();

    // 3. Flatten. Every node that ever was a root is a run start (a star's centre), and every
    //    parent ever stored is such a node: the hooked run starts (a list again) walk to their
    //    root first (reading only, then writing after a barrier) ...
    unsigned walks = 0, nwalks = 0;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int ty = ty_first + j * ROWSTEP, t = ty * TW + tx;
        if (!(tx < tw && ty < th)) continue;
        const bool start = lane == 0 || (s_fl[t - 1] & kBlockRight);
        if (start && dev::parent(s_node[t]) != static_cast<uint32_t>(t)) {
            walks |= 1u << j;
            ++nwalks;
        }
    }
    off = block_offset<G::NW>(nwalks, s_warp, total);
#pragma unroll
    for (int j = 0; j < PER; ++j)
        if ((walks >> j) & 1u) s_q[off++] = static_cast<uint16_t>((ty_first + j * ROWSTEP) * TW + tx);
    __syncthreads();
    uint64_t root_of[PER];
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const unsigned i = tid + static_cast<unsigned>(k * NT);
        root_of[k] = 0;
        if (i < total) {
            const uint32_t t = s_q[i];
            uint64_t w = s_node[t];
            uint32_t x = dev::parent(w);
            int32_t acc = dev::potential(w);
            for (;;) {
                w = s_node[x];
                if (dev::parent(w) == x) break;
                acc += dev::potential(w);
                x = dev::parent(w);
            }
            root_of[k] = dev::pack(x, acc);
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const unsigned i = tid + static_cast<unsigned>(k * NT);
        if (i < total) s_node[s_q[i]] = root_of[k];
    }
    __syncthreads();
    // ... then every other pixel is one hop from its root.
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int ty = ty_first + j * ROWSTEP, t = ty * TW + tx;
        if (!(tx < tw && ty < th)) continue;
        const bool start = lane == 0 || (s_fl[t - 1] & kBlockRight);
        if (start) continue;
        const uint64_t w = s_node[t];
        const uint32_t p = dev::parent(w);
        const uint64_t wp = s_node[p];
        if (dev::parent(wp) != p) s_node[t] = dev::pack(dev::parent(wp), dev::potential(w) + dev::potential(wp));
    }
    __syncthreads();

    // 4. Verify the in-tile edges and write the tile: own-local tile root, k relative to it.
    //    An edge inside a star holds by construction (the star's k are its wrap counts summed).
    unsigned bad = 0;
    {
        const int64_t l0 = (ty0 + ty_first) * cols + tx0 + tx;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int ty = ty_first + j * ROWSTEP, t = ty * TW + tx;
            if (!(tx < tw && ty < th)) continue;
            const uint64_t w = s_node[t];
            if (lane == 31 && tx + 1 < tw && !(fl[j] & kBlockRight)) {
                const uint64_t w2 = s_node[t + 1];
                bad += dev::parent(w2) != dev::parent(w) ||
                       dev::potential(w2) - dev::potential(w) != -dev::wrap_count(ph[j], s_ph[t + 1]);
            }
            if (ty + 1 < th && !(fl[j] & kBlockDown)) {
                const uint64_t w2 = s_node[t + TW];
                bad += dev::parent(w2) != dev::parent(w) ||
                       dev::potential(w2) - dev::potential(w) != -dev::wrap_count(ph[j], s_ph[t + TW]);
            }
            const uint32_t r = dev::parent(w);
            const int64_t rg = (ty0 + r / TW) * cols + tx0 + r % TW;
            nodes[l0 + static_cast<int64_t>(j * ROWSTEP) * cols] =
                dev::pack(static_cast<uint32_t>(rg), dev::potential(w));
        }
    }
    bad = __reduce_add_sync(kFull, bad);
    if (lane == 0 && bad) atomicAdd(sc.conflicts, static_cast<unsigned long long>(bad));  // conflicts are rare
    // Step 6's phases (the tile's left column, top row), before step 5 reuses their memory.
    float ph_edge = 0.0f;
    if (warp == 0 && static_cast<int>(lane) < th)
        ph_edge = s_ph[lane * TW];
    else if (warp >= 1 && warp <= static_cast<unsigned>(TW / 32) && static_cast<int>((warp - 1) * 32 + lane) < tw)
        ph_edge = s_ph[(warp - 1) * 32 + lane];
    __threadfence();
    __syncthreads();
    if (tid == 0) st_release(sc.done + tile, 1u);

    // 5. Reliable pixels per tile root (the phase's shared memory, read for the last time above,
    //    becomes the counters); each tile root that has some goes on the tile-root list, so that
    //    root_kernel, not a pass over every pixel, resolves and counts the components.
    uint32_t* s_cnt = reinterpret_cast<uint32_t*>(s_ph);
#pragma unroll
    for (int j = 0; j < PER; ++j) s_cnt[(ty_first + j * ROWSTEP) * TW + tx] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int ty = ty_first + j * ROWSTEP, t = ty * TW + tx;
        const bool rel = tx < tw && ty < th && !(fl[j] & kUnreliable);
        const uint32_t r = rel ? dev::parent(s_node[t]) : 0xffffffffu;
        const uint32_t r0 = __shfl_sync(kFull, r, 0);
        if (__all_sync(kFull, r == r0)) {  // the usual case: one root for the warp's 32 pixels
            if (lane == 0 && r0 != 0xffffffffu) atomicAdd(&s_cnt[r0], 32u);
        } else if (rel) {
            atomicAdd(&s_cnt[r], 1u);
        }
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int ty = ty_first + j * ROWSTEP, t = ty * TW + tx;
        if (!(tx < tw && ty < th) || dev::parent(s_node[t]) != static_cast<uint32_t>(t)) continue;
        const uint32_t c = s_cnt[t];
        if (c == 0) continue;  // unreliable pixels only: isolated, nobody's parent
        const unsigned long long i = atomicAdd(sc.ntroots, 1ull);
        if (i < sc.cap) sc.troots[i] = dev::pack(static_cast<uint32_t>((ty0 + t / TW) * cols + tx0 + t % TW), static_cast<int32_t>(c));
    }

    // 6. The edges across the left border (warp 0, lane = row) and the top border (warps 1..,
    //    lane = column), once the neighbour tile is published. Last: the other warps may be
    //    done (no barrier after this).
    if (warp == 0 && tx0 > 0) {
        const int ty = static_cast<int>(lane);
        bool open = false;
        int32_t d = 0;
        uint32_t pg = 0;
        if (ty < th) {
            const int64_t i = a.index(own.row0 + ty0 + ty, own.col0 + tx0);
            open = !(a.flags[i - 1] & kBlockRight);
            d = -dev::wrap_count(a.phase[i - 1], ph_edge);
            pg = static_cast<uint32_t>((ty0 + ty) * cols + tx0 - 1);
        }
        if (lane == 0)
            while (ld_acquire(sc.done + tile - 1) == 0) {
            }
        __syncwarp();
        const uint64_t wn = open ? dev::load(nodes + pg) : 0, wq = open ? s_node[ty * TW] : 0;
        bad = border_edges(nodes, open, d, pg, pg + 1, wn, wq, lane);
        if (lane == 0 && bad) atomicAdd(sc.conflicts, static_cast<unsigned long long>(bad));
    } else if (warp >= 1 && warp <= static_cast<unsigned>(TW / 32) && ty0 > 0) {
        const int x = static_cast<int>((warp - 1) * 32 + lane);
        bool open = false;
        int32_t d = 0;
        uint32_t pg = 0, qg = 0;
        if (x < tw) {
            const int64_t up = a.index(own.row0 + ty0 - 1, own.col0 + tx0 + x);
            open = !(a.flags[up] & kBlockDown);
            d = -dev::wrap_count(a.phase[up], ph_edge);
            pg = static_cast<uint32_t>((ty0 - 1) * cols + tx0 + x);
            qg = static_cast<uint32_t>(ty0 * cols + tx0 + x);
        }
        if (lane == 0)
            while (ld_acquire(sc.done + tile - tiles_x) == 0) {
            }
        __syncwarp();
        const uint64_t wn = open ? dev::load(nodes + pg) : 0, wq = open ? s_node[x] : 0;
        bad = border_edges(nodes, open, d, pg, qg, wn, wq, lane);
        if (lane == 0 && bad) atomicAdd(sc.conflicts, static_cast<unsigned long long>(bad));
    }
}

constexpr uint32_t kNeed = 0x80000000u;

// Adds c reliable pixels to root R's count (its word's high half); the first count of a root
// appends it to the list.
__device__ __forceinline__ void add_count(uint64_t* nodes, const Scratch& sc, uint32_t R, uint32_t c) {
    const unsigned long long old =
        atomicAdd(reinterpret_cast<unsigned long long*>(nodes + R), static_cast<unsigned long long>(c) << 32);
    if ((old >> 32) == 0) {
        const unsigned long long i = atomicAdd(sc.nroots, 1ull);
        if (i < sc.cap) sc.list[i] = R;
    }
}

// The listed tile roots (all of them, when the list held them): each word -> (its root, k
// relative to it), and its reliable pixels added to the root's count. Every parent a pixel's
// word names is a listed tile root (only tile roots were ever roots, and a find stores only
// ancestors), so every pixel is then at most two hops from its root.
__global__ void root_kernel(uint64_t* nodes, Scratch sc) {
    const unsigned long long n = *sc.ntroots;
    if (n > sc.cap) return;  // flatten_count_kernel does it all
    for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
        const uint64_t e = sc.troots[i];
        const uint32_t T = dev::parent(e);
        int32_t k = 0;
        const uint32_t R = walk(nodes, T, k);
        if (R != T) dev::store(nodes + T, dev::pack(R, k));  // an ancestor and its k, like a find's
        add_count(nodes, sc, R, static_cast<uint32_t>(dev::potential(e)));
    }
}

template <class G>
__global__ void __launch_bounds__(G::NT, G::MINB) flatten_count_kernel(DeviceArrays a, Window own, uint64_t* nodes, Scratch sc,
                                                              unsigned tiles_x) {
    constexpr int kTW = G::TW, kTH = G::TH, kTP = G::TP, kPer = G::PER, kRowStep = G::ROWSTEP;
    __shared__ uint64_t s_res[kTP];   // per tile-local parent: (root, k(parent) - k(root))
    // Per tile-local parent: bit 31 = some pixel points at it, bits 0..30 = reliable pixels that do.
    __shared__ uint32_t s_cnt[kTP];
    if (*sc.ntroots <= sc.cap) return;  // the tile roots were listed: root_kernel does it
    const unsigned tid = threadIdx.x, lane = tid & 31u;
    const unsigned tile = blockIdx.x;
    const int64_t ty0 = static_cast<int64_t>(tile / tiles_x) * kTH, tx0 = static_cast<int64_t>(tile % tiles_x) * kTW;
    const int tw = static_cast<int>(min(static_cast<int64_t>(kTW), own.cols - tx0));
    const int th = static_cast<int>(min(static_cast<int64_t>(kTH), own.rows - ty0));
    const int tx = static_cast<int>(tid % kTW), ty_first = static_cast<int>(tid / kTW);
    const uint32_t cols = static_cast<uint32_t>(own.cols);
    const uint32_t base = static_cast<uint32_t>(ty0 * own.cols + tx0);  // own-local index of tile pixel 0

    uint64_t w[kPer];
    unsigned reliable = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
        const int ty = ty_first + j * kRowStep, t = ty * kTW + tx;
        s_cnt[t] = 0;
        w[j] = 0;
        if (tx < tw && ty < th) {
            w[j] = __ldcg(reinterpret_cast<const unsigned long long*>(nodes + base + static_cast<uint32_t>(ty) * cols + tx));
            if (!(a.flags[a.index(own.row0 + ty0 + ty, own.col0 + tx0 + tx)] & kUnreliable)) reliable |= 1u << j;
        }
    }
    __syncthreads();

    // Group the pixels by their parent: inside the tile (almost always the tile root) in
    // shared memory, else (`far`, a border pixel whose word a find compressed) one by one.
    uint32_t tp[kPer];
    unsigned far = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
        const int ty = ty_first + j * kRowStep;
        const bool in = tx < tw && ty < th;
        const uint32_t p = dev::parent(w[j]);
        const uint32_t off = p - base, pr = off / cols, pc = off - pr * cols;
        const bool inside = in && p >= base && pr < static_cast<uint32_t>(th) && pc < static_cast<uint32_t>(tw);
        tp[j] = inside ? pr * kTW + pc : 0xffffffffu;
        if (in && !inside) far |= 1u << j;
        const bool rel = inside && ((reliable >> j) & 1u);
        const unsigned rmask = __ballot_sync(kFull, rel);
        const uint32_t k0 = __shfl_sync(kFull, tp[j], 0);
        if (__all_sync(kFull, tp[j] == k0)) {
            if (lane == 0 && k0 != 0xffffffffu) {
                atomicOr(&s_cnt[k0], kNeed);
                if (rmask) atomicAdd(&s_cnt[k0], static_cast<unsigned>(__popc(rmask)));
            }
        } else if (inside) {
            atomicOr(&s_cnt[tp[j]], kNeed);
            if (rel) atomicAdd(&s_cnt[tp[j]], 1u);
        }
    }
    __syncthreads();

    // Resolve every parent once (thread of pixel t resolves t), count, and the far pixels.
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
        const int ty = ty_first + j * kRowStep, t = ty * kTW + tx;
        if (!(tx < tw && ty < th)) continue;
        const uint32_t lg = base + static_cast<uint32_t>(ty) * cols + static_cast<uint32_t>(tx);
        const uint32_t p = dev::parent(w[j]);
        const uint32_t cnt = s_cnt[t];
        if (cnt & kNeed) {
            int32_t k = 0;
            uint32_t R = lg;
            if (p != lg) {
                k = dev::potential(w[j]);
                R = walk(nodes, p, k);
            }
            s_res[t] = dev::pack(R, k);
            const uint32_t c = cnt & ~kNeed;
            if (c) add_count(nodes, sc, R, c);
        }
        if ((far >> j) & 1u) {
            int32_t k = dev::potential(w[j]);
            const uint32_t R = walk(nodes, p, k);
            if ((reliable >> j) & 1u) add_count(nodes, sc, R, 1u);
            const uint64_t fin = dev::pack(R, k);
            if (fin != w[j]) dev::store(nodes + lg, fin);
        }
    }
    __syncthreads();

    // Every pixel with its parent in the tile: one hop. Roots keep their words (their high
    // halves are taking counts now).
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
        const int ty = ty_first + j * kRowStep, t = ty * kTW + tx;
        if (tp[j] == 0xffffffffu || tp[j] == static_cast<uint32_t>(t)) continue;
        const uint64_t r = s_res[tp[j]];
        const uint64_t fin = dev::pack(dev::parent(r), dev::potential(w[j]) + dev::potential(r));
        if (fin != w[j]) dev::store(nodes + base + static_cast<uint32_t>(ty) * cols + static_cast<uint32_t>(tx), fin);
    }
}

// The listed roots: list[i] = pack(root, count), root word back to pack(root, 0). Nothing when
// the list overflowed (the host then selects over all pixels).
__global__ void harvest_kernel(uint64_t* nodes, Scratch sc) {
    const unsigned long long n = *sc.nroots;
    if (n > sc.cap) return;
    for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
        const uint32_t R = static_cast<uint32_t>(sc.list[i]);
        const uint64_t w = nodes[R];
        sc.list[i] = w;
        nodes[R] = dev::pack(R, 0);
    }
}

// nodes[root] = pack(root, 0) (reset) or = the record itself (restore), for n records.
__global__ void root_words_kernel(uint64_t* nodes, const uint64_t* recs, int64_t n, bool restore) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const uint64_t r = recs[i];
        nodes[dev::parent(r)] = restore ? r : dev::pack(dev::parent(r), 0);
    }
}

// ---- more components than the root list holds: a selection over all pixels ----

// Index -> pack(index, count) for a counted root, 0 otherwise.
struct RootCountOf {
    const uint64_t* nodes;
    __device__ uint64_t operator()(int64_t i) const {
        const uint64_t w = nodes[i];
        return (dev::parent(w) == static_cast<uint32_t>(i) && (w >> 32) != 0) ? w : 0;
    }
};

struct NonZero {
    __device__ bool operator()(uint64_t w) const { return w != 0; }
};

// Selects the counted roots in ascending order (n of them, at *recs) into a fresh stream-ordered
// allocation, returned.
StreamBuffer<char> select_counted_roots(const Window& own, const uint64_t* nodes, int64_t n, uint64_t** recs,
                                        cudaStream_t s) {
    auto in = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RootCountOf{nodes});
    size_t temp_bytes = 0;
    check(cub::DeviceSelect::If(nullptr, temp_bytes, in, static_cast<uint64_t*>(nullptr),
                                static_cast<int64_t*>(nullptr), own.size(), NonZero{}, s),
          "component_records (temp size)");
    // One allocation: n output words, the selected count, then CUB's temporary storage.
    const size_t out_bytes = ((static_cast<size_t>(n) * sizeof(uint64_t) + sizeof(int64_t) + 255) / 256) * 256;
    StreamBuffer<char> mem(out_bytes + temp_bytes, s, "component_records (cudaMallocAsync)");
    char* buf = mem.get();
    uint64_t* d_out = reinterpret_cast<uint64_t*>(buf);
    int64_t* d_num = reinterpret_cast<int64_t*>(buf + static_cast<size_t>(n) * sizeof(uint64_t));
    cudaError_t e = cub::DeviceSelect::If(buf + out_bytes, temp_bytes, in, d_out, d_num, own.size(), NonZero{}, s);
    int64_t num = 0;
    if (e == cudaSuccess) e = cudaMemcpyAsync(&num, d_num, sizeof(num), cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess || num != n) {
        check(e, "component_records (select)");
        TESSERA_INVARIANT(false, "component_records: root count and selection disagree");
    }
    *recs = d_out;
    return mem;
}

// What the union-find found: the n records pack(root, count) in device memory (inside `mem`),
// ascending when `sorted`.
struct Pending {
    StreamBuffer<char> mem;
    uint64_t* recs = nullptr;
    int64_t n = 0;
    bool sorted = false;
};

constexpr int64_t kHostSortMax = 4096;  // records sorted on the host up to this many

// The tiles' union-find, the tile roots' resolution (or the flatten) and the counts; the roots'
// records into p, the tile roots into tr.
int64_t union_find_pass(const DeviceArrays& a, const Window& own, uint64_t* nodes, Pending& p, TileRoots& tr,
                        cudaStream_t s) {
    using G = Geo<64, 256>;
    const int64_t tiles_x = (own.cols + G::TW - 1) / G::TW, tiles_y = (own.rows + G::TH - 1) / G::TH;
    const int64_t ntiles = tiles_x * tiles_y;
    if (ntiles > INT_MAX || own.size() > static_cast<int64_t>(UINT32_MAX))
        throw std::runtime_error("CUDA backend: own window too large for union_find");
    // Root list capacity: more components than this fall back to a selection over all pixels.
    const int64_t cap = std::min<int64_t>(own.size(), own.size() / 128 + 4096);
    // Header: conflicts, roots, ticket, tile roots (32 bytes); the tile flags; the root list.
    // The tile-root list apart: it lives on until apply (mark_tile_roots).
    const size_t flags_end = 32 + static_cast<size_t>(ntiles) * sizeof(unsigned);
    const size_t list_off = (flags_end + 255) / 256 * 256;
    StreamBuffer<char> guard(list_off + static_cast<size_t>(cap) * sizeof(uint64_t), s, "union_find (cudaMallocAsync)");
    char* buf = guard.get();
    StreamBuffer<uint64_t> troots_guard(static_cast<size_t>(cap), s, "union_find (cudaMallocAsync tile roots)");
    uint64_t* troots = troots_guard.get();
    Scratch sc;
    sc.conflicts = reinterpret_cast<unsigned long long*>(buf);
    sc.nroots = reinterpret_cast<unsigned long long*>(buf + 8);
    sc.ticket = reinterpret_cast<unsigned int*>(buf + 16);
    sc.done = reinterpret_cast<unsigned int*>(buf + 32);
    sc.list = reinterpret_cast<uint64_t*>(buf + list_off);
    sc.cap = static_cast<unsigned long long>(cap);
    sc.ntroots = reinterpret_cast<unsigned long long*>(buf + 24);
    sc.troots = troots;
    check(cudaMemsetAsync(buf, 0, flags_end, s), "union_find (cudaMemsetAsync)");

    const unsigned nt = static_cast<unsigned>(ntiles), tx = static_cast<unsigned>(tiles_x);
    check(cudaFuncSetAttribute(tile_kernel<G>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(G::kSmemA)),
          "union_find tiles (shared memory)");
    tile_kernel<G><<<nt, G::NT, G::kSmemA, s>>>(a, own, nodes, sc, tx);
    check(cudaGetLastError(), "union_find tiles (launch)");
    // One of the two runs, as the tile-root list held them all or not (both read its count).
    const int list_blocks = static_cast<int>(std::min<int64_t>((cap + 255) / 256, 1024));
    root_kernel<<<list_blocks, 256, 0, s>>>(nodes, sc);
    check(cudaGetLastError(), "union_find tile roots (launch)");
    flatten_count_kernel<G><<<nt, G::NT, 0, s>>>(a, own, nodes, sc, tx);
    check(cudaGetLastError(), "union_find flatten (launch)");
    harvest_kernel<<<list_blocks, 256, 0, s>>>(nodes, sc);
    check(cudaGetLastError(), "union_find harvest (launch)");
    unsigned long long h[4] = {0, 0, 0, 0};
    check(cudaMemcpyAsync(h, buf, sizeof(h), cudaMemcpyDeviceToHost, s), "union_find (download counters)");
    check(cudaStreamSynchronize(s), "union_find (sync)");
    const int64_t n = static_cast<int64_t>(h[1]);
    tr = {};
    if (h[3] > 0 && h[3] <= static_cast<unsigned long long>(cap)) {
        tr.n = static_cast<int64_t>(h[3]);
        tr.entries = troots;
        tr.mem = troots_guard.release();
    }

    p.n = n;
    if (n > cap) {
        // The list overflowed (more than own/128 components): the counts are in the root
        // words; select them in order, then reset the roots.
        p.mem = select_counted_roots(own, nodes, n, &p.recs, s);
        root_words_kernel<<<static_cast<int>(std::min<int64_t>((n + 255) / 256, 1024)), 256, 0, s>>>(nodes, p.recs,
                                                                                                      n, false);
        check(cudaGetLastError(), "union_find reset (launch)");
        p.sorted = true;
    } else if (n > 0) {
        p.mem = std::move(guard);
        p.recs = sc.list;
        p.sorted = false;
    }
    return static_cast<int64_t>(h[0]);
}

// The records of p, ascending by root, onto the host; the counts back into the root words.
void harvest_records(uint64_t* nodes, Pending& p, std::vector<uint64_t>& out, cudaStream_t s) {
    const StreamBuffer<char> mem = std::move(p.mem);
    if (p.n == 0) return;
    const int blocks = static_cast<int>(std::min<int64_t>((p.n + 255) / 256, 1024));
    root_words_kernel<<<blocks, 256, 0, s>>>(nodes, p.recs, p.n, true);
    check(cudaGetLastError(), "component_records restore (launch)");
    const uint64_t* src = p.recs;
    StreamBuffer<char> sort_mem;
    if (!p.sorted && p.n > kHostSortMax) {
        // Radix sort on the root (the low 32 bits) on the device.
        size_t temp_bytes = 0;
        check(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, p.recs, static_cast<uint64_t*>(nullptr),
                                             static_cast<int>(p.n), 0, 32, s),
              "component_records (sort temp size)");
        const size_t out_bytes = (static_cast<size_t>(p.n) * sizeof(uint64_t) + 255) / 256 * 256;
        sort_mem = StreamBuffer<char>(out_bytes + temp_bytes, s, "component_records (cudaMallocAsync)");
        uint64_t* sorted = reinterpret_cast<uint64_t*>(sort_mem.get());
        check(cub::DeviceRadixSort::SortKeys(sort_mem.get() + out_bytes, temp_bytes, p.recs, sorted,
                                             static_cast<int>(p.n), 0, 32, s),
              "component_records (sort)");
        src = sorted;
    }
    out.resize(static_cast<size_t>(p.n));
    check(cudaMemcpyAsync(out.data(), src, static_cast<size_t>(p.n) * sizeof(uint64_t), cudaMemcpyDeviceToHost, s),
          "component_records (download)");
    check(cudaStreamSynchronize(s), "component_records (sync)");
    if (!p.sorted && p.n <= kHostSortMax)
        std::sort(out.begin(), out.end(),
                  [](uint64_t x, uint64_t y) { return static_cast<uint32_t>(x) < static_cast<uint32_t>(y); });
}

// (root, k relative to it) of own-local pixel l: at most two hops after union_find_components.
__device__ inline uint64_t resolved_word(const uint64_t* nodes, uint32_t l) {
    const uint64_t v = nodes[l];
    const uint32_t p = dev::parent(v);
    uint64_t r = dev::pack(l, 0);
    if (p != l) {
        const uint64_t vp = nodes[p];
        r = dev::parent(vp) == p ? dev::pack(p, dev::potential(v))
                                 : dev::pack(dev::parent(vp), dev::potential(v) + dev::potential(vp));
    }
    return r;
}

// out[y * w.cols + x] = (root, k relative to it) of own pixel (w.row0 + y, w.col0 + x) (own-local
// window w): at most two hops (union_find_components); a root's potential half is its count.
__global__ void resolve_kernel(const uint64_t* nodes, int64_t own_cols, Window w, uint64_t* out) {
    const int64_t n = w.rows * w.cols;
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t y = i / w.cols, x = i % w.cols;
        const uint32_t l = static_cast<uint32_t>((w.row0 + y) * own_cols + w.col0 + x);
        out[i] = resolved_word(nodes, l);
    }
}

__global__ void resolve_strip_kernel(const uint64_t* nodes, int64_t own_cols, Window w, const uint8_t* flags,
                                     const float* phase, int64_t buf_cols, uint64_t* out_words, uint8_t* out_flags,
                                     float* out_phase) {
    const int64_t n = w.rows * w.cols;
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t y = i / w.cols, x = i % w.cols;
        const uint32_t l = static_cast<uint32_t>((w.row0 + y) * own_cols + w.col0 + x);
        out_words[i] = resolved_word(nodes, l);
        out_flags[i] = flags[y * buf_cols + x];
        out_phase[i] = phase[y * buf_cols + x];
    }
}

}  // namespace

void resolve_strip(const uint64_t* nodes, const Window& own, const Window& w, const uint8_t* flags, const float* phase,
                   int64_t buf_cols, uint64_t* out_words, uint8_t* out_flags, float* out_phase, cudaStream_t s) {
    if (w.size() <= 0) return;
    const int blocks = static_cast<int>(std::min<int64_t>((w.size() + 255) / 256, 1024));
    resolve_strip_kernel<<<blocks, 256, 0, s>>>(nodes, own.cols, w, flags, phase, buf_cols, out_words, out_flags, out_phase);
    check(cudaGetLastError(), "resolve_strip (launch)");
}

void resolve_words(const uint64_t* nodes, const Window& own, const Window& w, uint64_t* out, cudaStream_t s) {
    if (w.size() <= 0) return;
    const int blocks = static_cast<int>(std::min<int64_t>((w.size() + 255) / 256, 1024));
    resolve_kernel<<<blocks, 256, 0, s>>>(nodes, own.cols, w, out);
    check(cudaGetLastError(), "resolve_words (launch)");
}

int64_t union_find_components(const DeviceArrays& a, const Window& own, uint64_t* nodes, std::vector<uint64_t>& out,
                              TileRoots& tile_roots, cudaStream_t s) {
    out.clear();
    tile_roots = {};
    if (own.size() == 0) return 0;
    Pending p;
    const int64_t conflicts = union_find_pass(a, own, nodes, p, tile_roots, s);
    harvest_records(nodes, p, out, s);
    return conflicts;
}

}  // namespace tessera::cuda
