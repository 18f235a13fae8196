// Final pixel pass (ARCHITECTURE.md section 4) on the device: k = potential + offset of the
// pixel's component record, u = phi + 6.2831855f * k (float32, no contraction), labels; by row
// bands, so that a band's download can start while the next is computed.
//
// No per-pixel record map is needed: a root's word is redundant after the union-find
// (parent = self, k = 0), so mark_roots stores the record's (label, offset) in it and sets
// kRootMark in the root's flags; apply_offsets then reads its root's word. Neither pass writes
// a word or flag that another thread of the same pass reads.
#include <cstring>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/kernels.h"

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

__global__ void apply_kernel(DeviceArrays a, Window own, int64_t y0, int64_t y1, const uint64_t* nodes, uint32_t* label,
                             int32_t* cycles) {
    const int64_t x = static_cast<int64_t>(blockIdx.x) * kBlockX + threadIdx.x;
    if (x >= own.cols) return;
    const float nan = __int_as_float(0x7fc00000);  // std::numeric_limits<float>::quiet_NaN()
    for (int64_t y = y0 + static_cast<int64_t>(blockIdx.y) * kBlockY + threadIdx.y; y < y1;
         y += static_cast<int64_t>(gridDim.y) * kBlockY) {
        const int64_t i = a.index(own.row0 + y, own.col0 + x);
        const int64_t l = y * own.cols + x;
        const uint8_t f = a.flags[i];
        if (f & kUnreliable) {  // invalid or low coherence: NaN, label 0, k 0
            a.phase[i] = nan;
            label[l] = 0;
            if (cycles) cycles[l] = 0;
            continue;
        }
        const uint64_t w = nodes[l];
        int32_t k;
        uint64_t rec;
        if (f & kRootMark) {  // a root: k = 0 + offset
            rec = w;
            k = 0;
            a.flags[i] = static_cast<uint8_t>(f & ~kRootMark);
        } else {
            rec = nodes[dev::parent(w)];
            k = dev::potential(w);
        }
        k += dev::potential(rec);
        // Section 4: u = phi + 6.2831855f * k, float32, each operation rounded, no FMA.
        a.phase[i] = __fadd_rn(a.phase[i], __fmul_rn(kTwoPiF, __int2float_rn(k)));
        label[l] = dev::parent(rec);
        if (cycles) cycles[l] = k;
    }
}

}  // namespace

void mark_roots(const DeviceArrays& a, const Window& own, uint64_t* nodes, const DeviceRootRecord* d_recs, int64_t n,
                cudaStream_t s) {
    if (n == 0) return;
    constexpr int kThreads = 256;
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    mark_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(a, own, nodes, d_recs, n);
    check(cudaGetLastError(), "mark_roots (launch)");
}

void apply_offsets(const DeviceArrays& a, const Window& own, int64_t y0, int64_t y1, const uint64_t* nodes,
                   uint32_t* label, int32_t* cycles, cudaStream_t s) {
    if (own.cols <= 0 || y1 <= y0) return;
    const Window band{own.row0 + y0, own.col0, y1 - y0, own.cols};
    apply_kernel<<<pixel_grid(band), dim3(kBlockX, kBlockY), 0, s>>>(a, own, y0, y1, nodes, label, cycles);
    check(cudaGetLastError(), "apply_offsets (launch)");
}

}  // namespace tessera::cuda
