// Matching phase A's rounds on the device (ARCHITECTURE.md section 3): the residue grid is
// binned here, and each round's search, decisions and marking run as kernels over the bound
// residue set, one thread per residue; only the count of active residues (and, between ranks,
// border states) leaves the device. Every kernel is the image of HostPhaseARounds
// (kernels/cpu/phase_a.cpp) and best_candidate (kernels/cpu/residue_grid.cpp).
#include <cub/device/device_scan.cuh>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

constexpr int kThreads = 128;

unsigned blocks_for(int64_t n, const char* what) {
    const int64_t b = (n + kThreads - 1) / kThreads;
    if (b > 0x7fffffff) throw std::runtime_error(std::string(what) + ": too many residues for one launch");
    return static_cast<unsigned>(b);
}

__device__ __forceinline__ int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

// Window::contains over the grid's area, as ResidueGrid::build tests it.
__device__ __forceinline__ bool inside(const DeviceResidueGrid& g, const DeviceResidue& x) {
    return x.r >= g.row0 && x.r < g.row0 + g.rows && x.c >= g.col0 && x.c < g.col0 + g.cols;
}
__device__ __forceinline__ int64_t cell_of(const DeviceResidueGrid& g, const DeviceResidue& x) {
    return ((x.r - g.row0) / g.cell) * g.ccols + (x.c - g.col0) / g.cell;
}

__global__ void count_cells(const DeviceResidue* __restrict__ res, int64_t n, DeviceResidueGrid g, int32_t* count) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const DeviceResidue x = res[i];
    if (!inside(g, x)) return;
    atomicAdd(count + cell_of(g, x), 1);
}

__global__ void fill_cells(const DeviceResidue* __restrict__ res, int64_t n, DeviceResidueGrid g, int32_t* cursor) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const DeviceResidue x = res[i];
    if (!inside(g, x)) return;
    const int64_t cidx = cell_of(g, x);
    g.items[g.start[cidx] + atomicAdd(cursor + cidx, 1)] = static_cast<int32_t>(i);
}

struct Best {
    int64_t w = kDeviceNoWeight, lo = kDeviceGroundId, hi = kDeviceGroundId;
    int32_t partner = kDevicePartnerNone;
};

// EdgeKey's operator<.
__device__ __forceinline__ bool key_less(int64_t w, int64_t lo, int64_t hi, const Best& b) {
    if (w != b.w) return w < b.w;
    if (lo != b.lo) return lo < b.lo;
    return hi < b.hi;
}

__device__ __forceinline__ void scan_cell(const DeviceResidue* __restrict__ res, const uint8_t* __restrict__ matched,
                                          const DeviceResidueGrid& g, const DeviceResidue& a, int64_t y, int64_t x,
                                          int64_t limit, Best& best) {
    if (y < 0 || y >= g.crows || x < 0 || x >= g.ccols) return;
    const int64_t cidx = y * g.ccols + x;
    const int32_t t1 = g.start[cidx + 1];
    for (int32_t t = g.start[cidx]; t < t1; ++t) {
        const int32_t j = g.items[t];
        const DeviceResidue b = res[j];
        if (b.sign == a.sign || matched[j]) continue;
        const int64_t w = abs64(int64_t{b.r} - a.r) + abs64(int64_t{b.c} - a.c);
        if (w > limit || w > best.w) continue;
        const int64_t lo = a.id < b.id ? a.id : b.id, hi = a.id < b.id ? b.id : a.id;  // pair_key
        if (key_less(w, lo, hi, best)) best = Best{w, lo, hi, j};
    }
}

// best_candidate(grid, res, matched, i, limit, H, W).partner
__device__ int32_t best_partner(const DeviceResidue* __restrict__ res, const uint8_t* __restrict__ matched,
                                const DeviceResidueGrid& g, int64_t i, int64_t limit, int64_t H, int64_t W) {
    const DeviceResidue a = res[i];
    Best best;
    // ground_choice(a.r, a.c, H, W).weight (kernels/residue.h; the side does not enter the key).
    const int64_t r = a.r, c = a.c;
    int64_t gw = r + 1;
    if (H - 1 - r < gw) gw = H - 1 - r;
    if (c + 1 < gw) gw = c + 1;
    if (W - 1 - c < gw) gw = W - 1 - c;
    if (gw <= limit) best = Best{gw, a.id, kDeviceGroundId, kDevicePartnerGround};
    const int64_t ci = (r - g.row0) / g.cell, cj = (c - g.col0) / g.cell;
    int64_t max_ring = ci;
    if (cj > max_ring) max_ring = cj;
    if (g.crows - 1 - ci > max_ring) max_ring = g.crows - 1 - ci;
    if (g.ccols - 1 - cj > max_ring) max_ring = g.ccols - 1 - cj;
    for (int64_t ring = 0; ring <= max_ring; ++ring) {
        // Any pixel in ring `ring` is at least (ring-1)*cell+1 away in one coordinate.
        const int64_t lower = ring == 0 ? 0 : (ring - 1) * g.cell + 1;
        if (lower > limit || lower > best.w) break;
        if (ring == 0) {
            scan_cell(res, matched, g, a, ci, cj, limit, best);
            continue;
        }
        for (int64_t x = cj - ring; x <= cj + ring; ++x) {
            scan_cell(res, matched, g, a, ci - ring, x, limit, best);
            scan_cell(res, matched, g, a, ci + ring, x, limit, best);
        }
        for (int64_t y = ci - ring + 1; y <= ci + ring - 1; ++y) {
            scan_cell(res, matched, g, a, y, cj - ring, limit, best);
            scan_cell(res, matched, g, a, y, cj + ring, limit, best);
        }
    }
    return best.partner;
}

__global__ void search_kernel(DevicePhaseA st, DeviceResidueGrid g, int64_t limit, int64_t H, int64_t W,
                              unsigned long long* active) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    bool counts = false;
    if (i < st.n && st.owned[i] && !st.matched[i]) {
        int32_t p = st.partner[i];
        if (p == kDevicePartnerUnsearched || (p >= 0 && st.matched[p])) {
            p = best_partner(st.res, st.matched, g, i, limit, H, W);
            st.partner[i] = p;
        }
        counts = p != kDevicePartnerNone;
    }
    // One atomic per warp (every thread of the block reaches the ballot).
    const unsigned ballot = __ballot_sync(0xffffffffu, counts);
    if ((threadIdx.x & 31) == 0 && ballot) atomicAdd(active, static_cast<unsigned long long>(__popc(ballot)));
}

__global__ void decide_kernel(DevicePhaseA st, bool halo) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= st.n || st.matched[i]) return;
    const bool own_i = st.owned[i] != 0;
    if (!halo && !own_i) return;
    const int32_t j = st.partner[i];
    if (j == kDevicePartnerGround) {
        if (!halo || !own_i) {
            st.mate[i] = kDevicePartnerGround;
            st.accepted[i] = 1;
        }
    } else if (j >= 0 && (halo ? !(own_i && st.owned[j]) : st.owned[j] != 0) && !st.matched[j] &&
               st.partner[j] == static_cast<int32_t>(i) && st.res[i].id < st.res[j].id) {
        // Only i's thread writes j's entries: j points at i, so j accepts nothing itself.
        st.mate[i] = j;
        st.mate[j] = static_cast<int32_t>(i);
        st.accepted[i] = 1;
        st.accepted[j] = 1;
    }
}

__global__ void reset_kernel(DevicePhaseA st) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= st.n) return;
    st.matched[i] = 0;
    st.accepted[i] = 0;
    st.partner[i] = kDevicePartnerUnsearched;
    st.mate[i] = kDevicePartnerNone;
}

__global__ void commit_kernel(DevicePhaseA st) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= st.n || !st.accepted[i]) return;
    st.matched[i] = 1;
    st.accepted[i] = 0;
}

__global__ void export_kernel(DevicePhaseA st, const int32_t* __restrict__ locals, int64_t m, int32_t* partner,
                              uint8_t* matched) {
    const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= m) return;
    const int32_t l = locals[k];
    partner[k] = st.partner[l];
    matched[k] = st.matched[l];
}

__global__ void import_kernel(DevicePhaseA st, const int32_t* __restrict__ locals, int64_t m,
                              const int32_t* __restrict__ partner, const uint8_t* __restrict__ matched) {
    const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= m) return;
    const int32_t l = locals[k];
    st.partner[l] = partner[k];
    st.matched[l] = matched[k];
}

}  // namespace

size_t residue_grid_scratch_bytes(int64_t cells) {
    size_t bytes = 0;
    check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
                                        static_cast<int64_t>(cells + 1)),
          "residue grid (scan size)");
    return bytes;
}

void build_residue_grid(const DeviceResidue* res, int64_t n, const DeviceResidueGrid& g, int32_t* cursor,
                        void* scratch, size_t scratch_bytes, cudaStream_t s) {
    const int64_t cells = g.crows * g.ccols;
    const size_t words = static_cast<size_t>(cells + 1) * sizeof(int32_t);
    check(cudaMemsetAsync(cursor, 0, words, s), "residue grid (clear)");
    if (n > 0) {
        count_cells<<<blocks_for(n, "residue grid"), kThreads, 0, s>>>(res, n, g, cursor);
        check(cudaGetLastError(), "residue grid (count)");
    }
    check(cub::DeviceScan::ExclusiveSum(scratch, scratch_bytes, cursor, g.start, cells + 1, s), "residue grid (scan)");
    check(cudaMemsetAsync(cursor, 0, words, s), "residue grid (clear cursor)");
    if (n > 0) {
        fill_cells<<<blocks_for(n, "residue grid"), kThreads, 0, s>>>(res, n, g, cursor);
        check(cudaGetLastError(), "residue grid (fill)");
    }
}

void phase_a_reset(const DevicePhaseA& st, cudaStream_t s) {
    if (st.n <= 0) return;
    reset_kernel<<<blocks_for(st.n, "phase A reset"), kThreads, 0, s>>>(st);
    check(cudaGetLastError(), "phase A reset (launch)");
}

void phase_a_search(const DevicePhaseA& st, const DeviceResidueGrid& g, int64_t limit, int64_t H, int64_t W,
                    unsigned long long* active, cudaStream_t s) {
    if (st.n <= 0) return;
    search_kernel<<<blocks_for(st.n, "phase A search"), kThreads, 0, s>>>(st, g, limit, H, W, active);
    check(cudaGetLastError(), "phase A search (launch)");
}

void phase_a_decide(const DevicePhaseA& st, bool halo, cudaStream_t s) {
    if (st.n <= 0) return;
    decide_kernel<<<blocks_for(st.n, "phase A decide"), kThreads, 0, s>>>(st, halo);
    check(cudaGetLastError(), "phase A decide (launch)");
}

void phase_a_commit(const DevicePhaseA& st, cudaStream_t s) {
    if (st.n <= 0) return;
    commit_kernel<<<blocks_for(st.n, "phase A commit"), kThreads, 0, s>>>(st);
    check(cudaGetLastError(), "phase A commit (launch)");
}

void phase_a_export(const DevicePhaseA& st, const int32_t* locals, int64_t m, int32_t* partner, uint8_t* matched,
                    cudaStream_t s) {
    if (m <= 0) return;
    export_kernel<<<blocks_for(m, "phase A export"), kThreads, 0, s>>>(st, locals, m, partner, matched);
    check(cudaGetLastError(), "phase A export (launch)");
}

void phase_a_import(const DevicePhaseA& st, const int32_t* locals, int64_t m, const int32_t* partner,
                    const uint8_t* matched, cudaStream_t s) {
    if (m <= 0) return;
    import_kernel<<<blocks_for(m, "phase A import"), kThreads, 0, s>>>(st, locals, m, partner, matched);
    check(cudaGetLastError(), "phase A import (launch)");
}

}  // namespace tessera::cuda
