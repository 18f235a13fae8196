// Matching phase A's candidate search (ARCHITECTURE.md section 3) on the device: one thread
// per queried residue, the exact image of best_candidate() in kernels/cpu/residue_grid.cpp
// (same cell rings and pruning, same EdgeKey order (weight, lower id, higher id), same ground
// weight). The answer is a minimum under a strict total order, so it equals the host's.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

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

__device__ __forceinline__ int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

__device__ __forceinline__ void scan_cell(const DeviceResidue* __restrict__ res, const uint8_t* __restrict__ matched,
                                          const DeviceResidueGrid& g, const DeviceResidue& a, int64_t y, int64_t x,
                                          int64_t limit, Best& best) {
    if (y < 0 || y >= g.crows || x < 0 || x >= g.ccols) return;
    const int64_t cidx = y * g.ccols + x;
    const int64_t t1 = g.start[cidx + 1];
    for (int64_t t = g.start[cidx]; t < t1; ++t) {
        const int32_t j = g.items[t];
        const DeviceResidue b = res[j];
        if (b.sign == a.sign || matched[j]) continue;
        const int64_t w = abs64(int64_t{b.r} - a.r) + abs64(int64_t{b.c} - a.c);
        if (w > limit || w > best.w) continue;
        // pair_key(w, a.id, b.id)
        const int64_t lo = a.id < b.id ? a.id : b.id, hi = a.id < b.id ? b.id : a.id;
        if (key_less(w, lo, hi, best)) best = Best{w, lo, hi, j};
    }
}

__global__ void candidates_kernel(const DeviceResidue* __restrict__ res, const uint8_t* __restrict__ matched,
                                  DeviceResidueGrid g, const int32_t* __restrict__ which, int64_t m, int64_t limit,
                                  int64_t H, int64_t W, DeviceCandidate* __restrict__ out) {
    const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= m) return;
    const DeviceResidue a = res[which[k]];
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
    DeviceCandidate o;
    o.w = best.w;
    o.lo = best.lo;
    o.hi = best.hi;
    o.partner = best.partner;
    o.pad = 0;
    out[k] = o;
}

}  // namespace

void best_candidates(const DeviceResidue* res, const uint8_t* matched, const DeviceResidueGrid& grid,
                     const int32_t* which, int64_t m, int64_t limit, int64_t H, int64_t W, DeviceCandidate* out,
                     cudaStream_t s) {
    if (m <= 0) return;
    constexpr int kThreads = 128;
    const int64_t blocks = (m + kThreads - 1) / kThreads;
    if (blocks > 0x7fffffff) throw std::runtime_error("best_candidates: too many residues for one launch");
    candidates_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(res, matched, grid, which, m, limit, H, W,
                                                                          out);
    check(cudaGetLastError(), "best_candidates (launch)");
}

}  // namespace tessera::cuda
