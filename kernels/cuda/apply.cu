// Final pixel pass (ARCHITECTURE.md section 4) on the device: k = potential + offset of the
// pixel's component record, u = phi + 6.2831855f * k (float32, no contraction), labels; by row
// bands, so that a band's download can start while the next is computed.
//
// No per-pixel record map is needed: a root's word is redundant after the union-find
// (parent = self, k = 0), so mark_roots stores the record's (label, offset) in it and sets
// kRootMark in the root's flags; apply_offsets then reads its root's word. Neither pass writes
// a word or flag that another thread of the same pass reads.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/label_width.h"

namespace tessera::cuda {

namespace {

__global__ void mark_kernel(DeviceArrays a, Window own, uint64_t* nodes, const DeviceRootRecord* recs, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const DeviceRootRecord rec = recs[i];
    // Word: label in the low half, offset in the high half.
    nodes[rec.local] = dev::pack(rec.label, rec.offset);
    const int64_t y = rec.local / own.cols, x = rec.local % own.cols;
    const int64_t off = a.index(own.row0 + y, own.col0 + x);
    a.flags[off] = static_cast<uint8_t>(a.flags[off] | kRootMark);
}

// A listed tile root that is not a root: its word (root, k) becomes its root's (label, offset)
// with k added. Reads only root words (mark_kernel's, not written here).
__global__ void mark_tile_kernel(DeviceArrays a, Window own, uint64_t* nodes, const uint64_t* entries, int64_t n) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const uint32_t t = dev::parent(entries[i]);
        const int64_t y = t / own.cols, x = t % own.cols;
        const int64_t off = a.index(own.row0 + y, own.col0 + x);
        const uint8_t f = a.flags[off];
        if (f & kRootMark) continue;  // a root: mark_kernel's already
        const uint64_t w = nodes[t];
        const uint64_t rec = nodes[dev::parent(w)];
        nodes[t] = dev::pack(dev::parent(rec), dev::potential(rec) + dev::potential(w));
        a.flags[off] = static_cast<uint8_t>(f | kRootMark);
    }
}

// One pixel's final values (w: its word; rec: its root's, holding (label, offset)).
template <class L>
__device__ __forceinline__ void apply_pixel(DeviceArrays& a, int64_t i, int64_t l, uint8_t f, uint64_t w, uint64_t rec,
                                            L* label, int32_t* cycles) {
    if (f & kUnreliable) {  // invalid or low coherence: NaN, label 0, k 0
        a.phase[i] = __int_as_float(0x7fc00000);  // std::numeric_limits<float>::quiet_NaN()
        label[l] = 0;
        if (cycles) cycles[l] = 0;
        return;
    }
    int32_t k;
    if (f & kRootMark) {  // a root: k = 0 + offset
        rec = w;
        k = 0;
        a.flags[i] = static_cast<uint8_t>(f & ~kRootMark);
    } else {
        k = dev::potential(w);
    }
    k += dev::potential(rec);
    // Section 4: u = phi + 6.2831855f * k, float32, each operation rounded, no FMA.
    a.phase[i] = __fadd_rn(a.phase[i], __fmul_rn(kTwoPiF, __int2float_rn(k)));
    label[l] = static_cast<L>(dev::parent(rec));  // apply() chose L wide enough for every label
    if (cycles) cycles[l] = k;
}

// A warp takes kApplyRun consecutive pixels of a row, each thread every 32nd: all loads of a
// thread are issued before its first use (memory-level parallelism for a bandwidth-bound pass).
constexpr int kApplyPer = 4, kApplyRun = 32 * kApplyPer;

template <class L>
__global__ void apply_kernel(DeviceArrays a, Window own, int64_t y0, int64_t y1, const uint64_t* nodes, L* label,
                             int32_t* cycles) {
    const int64_t x0 = static_cast<int64_t>(blockIdx.x) * kApplyRun + threadIdx.x;
    if (x0 >= own.cols) return;
    for (int64_t y = y0 + static_cast<int64_t>(blockIdx.y) * kBlockY + threadIdx.y; y < y1;
         y += static_cast<int64_t>(gridDim.y) * kBlockY) {
        const int64_t i0 = a.index(own.row0 + y, own.col0 + x0);
        const int64_t l0 = y * own.cols + x0;
        uint8_t f[kApplyPer];
        uint64_t w[kApplyPer], rec[kApplyPer];
#pragma unroll
        for (int j = 0; j < kApplyPer; ++j) {
            const bool in = x0 + 32 * j < own.cols;
            f[j] = in ? a.flags[i0 + 32 * j] : kUnreliable;
            w[j] = in && !(f[j] & kUnreliable) ? nodes[l0 + 32 * j] : 0;
        }
#pragma unroll
        for (int j = 0; j < kApplyPer; ++j)
            rec[j] = (f[j] & (kUnreliable | kRootMark)) ? w[j] : nodes[dev::parent(w[j])];
#pragma unroll
        for (int j = 0; j < kApplyPer; ++j)
            if (x0 + 32 * j < own.cols) apply_pixel(a, i0 + 32 * j, l0 + 32 * j, f[j], w[j], rec[j], label, cycles);
    }
}

// One block per row: out[y - y0] = (1 << 32) | label when the row holds one label, else 0.
template <class L>
__global__ void uniform_rows_kernel(const L* label, int64_t cols, int64_t y0, uint64_t* out) {
    const int64_t y = y0 + blockIdx.x;
    const L* row = label + y * cols;
    const L first = row[0];
    bool same = true;
    for (int64_t x = threadIdx.x; x < cols && same; x += blockDim.x) same = row[x] == first;
    same = __syncthreads_and(same) != 0;
    if (threadIdx.x == 0) out[blockIdx.x] = same ? ((uint64_t{1} << 32) | static_cast<uint64_t>(first)) : 0;
}

}  // namespace

void uniform_label_rows(const void* label, int label_bytes, const Window& own, int64_t y0, int64_t y1, uint64_t* out,
                        cudaStream_t s) {
    if (y1 <= y0 || own.cols <= 0) return;
    const unsigned rows = static_cast<unsigned>(y1 - y0);
    with_label_type(label_bytes, [&](auto l) {
        uniform_rows_kernel<<<rows, 256, 0, s>>>(static_cast<const decltype(l)*>(label), own.cols, y0, out);
    });
    check(cudaGetLastError(), "uniform_label_rows (launch)");
}

void mark_roots(const DeviceArrays& a, const Window& own, uint64_t* nodes, const DeviceRootRecord* d_recs, int64_t n,
                cudaStream_t s) {
    if (n == 0) return;
    constexpr int kThreads = 256;
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    mark_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(a, own, nodes, d_recs, n);
    check(cudaGetLastError(), "mark_roots (launch)");
}

void mark_tile_roots(const DeviceArrays& a, const Window& own, uint64_t* nodes, const TileRoots& tile_roots,
                     cudaStream_t s) {
    if (tile_roots.n == 0) return;
    const int blocks = static_cast<int>(std::min<int64_t>((tile_roots.n + 255) / 256, 1024));
    mark_tile_kernel<<<blocks, 256, 0, s>>>(a, own, nodes, tile_roots.entries, tile_roots.n);
    check(cudaGetLastError(), "mark_tile_roots (launch)");
}

void apply_offsets(const DeviceArrays& a, const Window& own, int64_t y0, int64_t y1, const uint64_t* nodes,
                   void* label, int label_bytes, int32_t* cycles, cudaStream_t s) {
    if (own.cols <= 0 || y1 <= y0) return;
    const Window band{own.row0 + y0, own.col0, y1 - y0, (own.cols + kApplyPer - 1) / kApplyPer};
    const dim3 grid = pixel_grid(band), block(kBlockX, kBlockY);
    with_label_type(label_bytes, [&](auto l) {
        apply_kernel<<<grid, block, 0, s>>>(a, own, y0, y1, nodes, static_cast<decltype(l)*>(label), cycles);
    });
    check(cudaGetLastError(), "apply_offsets (launch)");
}

}  // namespace tessera::cuda
