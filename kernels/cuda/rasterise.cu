// Invalid-edge blocking and branch-cut rasterisation (ARCHITECTURE.md section 3) on the
// device, a mirror of kernels/cpu/rasterise.cpp with the tile replaced by the own window.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

// Each thread takes kBlockPer pixels of a row, every 32nd (a warp covers 32 * kBlockPer
// consecutive pixels), and issues all its loads before its first store: a byte-wide pass is
// bound by latency, not bandwidth. Each thread writes only its own flag bytes; it reads the
// kUnreliable bits (kInvalid, kLowCoherence) of their right and lower neighbours, which no
// thread changes.
constexpr int kBlockPer = 4;

__global__ void block_invalid_kernel(DeviceArrays a, Window own) {
    const int64_t x0 = static_cast<int64_t>(blockIdx.x) * (kBlockX * kBlockPer) + threadIdx.x;
    if (x0 >= own.cols) return;
    for (int64_t y = static_cast<int64_t>(blockIdx.y) * kBlockY + threadIdx.y; y < own.rows;
         y += static_cast<int64_t>(gridDim.y) * kBlockY) {
        const int64_t r = own.row0 + y;
        const int64_t i0 = a.index(r, own.col0 + x0);
        uint8_t f[kBlockPer], right[kBlockPer], down[kBlockPer];
#pragma unroll
        for (int j = 0; j < kBlockPer; ++j) {
            const int64_t c = own.col0 + x0 + 32 * j;
            const bool in = x0 + 32 * j < own.cols;
            f[j] = in ? a.flags[i0 + 32 * j] : 0;
            right[j] = in && c + 1 < a.W ? a.flags[i0 + 32 * j + 1] : kUnreliable;
            down[j] = in && r + 1 < a.H ? a.flags[i0 + 32 * j + a.buf.cols] : kUnreliable;
        }
#pragma unroll
        for (int j = 0; j < kBlockPer; ++j) {
            if (x0 + 32 * j >= own.cols) break;
            // Invalid and low-coherence pixels are not integrated through: all their edges blocked.
            uint8_t v = f[j] & kUnreliable;
            const bool bad = v != 0;
            if (bad || (right[j] & kUnreliable)) v |= kBlockRight;  // past the last column: kUnreliable
            if (bad || (down[j] & kUnreliable)) v |= kBlockDown;
            a.flags[i0 + 32 * j] = v;
        }
    }
}

// The same on flags known to be all zero: only the edges past the image's last column and
// row exist to block. Thread t < rows: own row t's last pixel; else own column t - rows's.
__global__ void block_border_kernel(DeviceArrays a, Window own, bool right, bool down) {
    const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    // Atomic: the corner pixel gets a bit from each pass.
    if (t < own.rows) {
        if (right) dev::flag_or(a.flags, a.index(own.row0 + t, a.W - 1), kBlockRight);
    } else if (t < own.rows + own.cols) {
        if (down) dev::flag_or(a.flags, a.index(a.H - 1, own.col0 + (t - own.rows)), kBlockDown);
    }
}

__device__ __forceinline__ void block(const DeviceArrays& a, const Window& own, int64_t r, int64_t c, uint8_t bit) {
    if (dev::contains(own, r, c)) dev::flag_or(a.flags, a.index(r, c), bit);
}

// Section 3: a horizontal dual step from P(r,c) in direction s crosses the down-edge of
// pixel (r, c + (s > 0)); a vertical step crosses the right-edge of pixel (r + (s > 0), c).
__device__ void rasterise_pair(const DeviceArrays& a, const Window& own, const DeviceCut& cut) {
    const int64_t dr = int64_t{cut.rb} - cut.ra, dc = int64_t{cut.cb} - cut.ca;
    const int64_t adr = dr < 0 ? -dr : dr, adc = dc < 0 ? -dc : dc;
    const int64_t sr = dr > 0 ? 1 : -1, sc = dc > 0 ? 1 : -1;
    // The path stays inside the bounding box of its two plaquettes; the edges it blocks
    // belong to pixels in rows [r0, r1 + 1] and columns [c0, c1 + 1].
    const int64_t r0 = min(int64_t{cut.ra}, int64_t{cut.rb}), r1 = max(int64_t{cut.ra}, int64_t{cut.rb}) + 1;
    const int64_t c0 = min(int64_t{cut.ca}, int64_t{cut.cb}), c1 = max(int64_t{cut.ca}, int64_t{cut.cb}) + 1;
    if (r1 < own.row0 || r0 >= own.row0 + own.rows || c1 < own.col0 || c0 >= own.col0 + own.cols) return;
    int64_t r = cut.ra, c = cut.ca, h = 0, v = 0;
    while (h < adc || v < adr) {
        // Canonical digital line: horizontal iff (2h+1)|dr| <= (2v+1)|dc| (ties horizontal).
        if ((2 * h + 1) * adr <= (2 * v + 1) * adc) {
            block(a, own, r, c + (sc > 0), kBlockDown);
            c += sc;
            ++h;
        } else {
            block(a, own, r + (sr > 0), c, kBlockRight);
            r += sr;
            ++v;
        }
    }
}

__device__ void rasterise_ground(const DeviceArrays& a, const Window& own, const DeviceCut& cut) {
    const int64_t r = cut.ra, c = cut.ca;
    const int64_t tr0 = own.row0, tr1 = own.row0 + own.rows, tc0 = own.col0, tc1 = own.col0 + own.cols;
    switch (cut.side) {
        case 0:  // kTop: right-edges of pixels (0..r, c)
            if (c >= tc0 && c < tc1)
                for (int64_t y = max(int64_t{0}, tr0); y <= min(r, tr1 - 1); ++y)
                    dev::flag_or(a.flags, a.index(y, c), kBlockRight);
            break;
        case 1:  // kBottom: right-edges of pixels (r+1..H-1, c)
            if (c >= tc0 && c < tc1)
                for (int64_t y = max(r + 1, tr0); y < min(a.H, tr1); ++y)
                    dev::flag_or(a.flags, a.index(y, c), kBlockRight);
            break;
        case 2:  // kLeft: down-edges of pixels (r, 0..c)
            if (r >= tr0 && r < tr1)
                for (int64_t x = max(int64_t{0}, tc0); x <= min(c, tc1 - 1); ++x)
                    dev::flag_or(a.flags, a.index(r, x), kBlockDown);
            break;
        case 3:  // kRight: down-edges of pixels (r, c+1..W-1)
            if (r >= tr0 && r < tr1)
                for (int64_t x = max(c + 1, tc0); x < min(a.W, tc1); ++x)
                    dev::flag_or(a.flags, a.index(r, x), kBlockDown);
            break;
        default:
            break;
    }
}

__global__ void rasterise_kernel(DeviceArrays a, Window own, const DeviceCut* cuts, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const DeviceCut cut = cuts[i];
    if (cut.side < 0)
        rasterise_pair(a, own, cut);
    else
        rasterise_ground(a, own, cut);
}

}  // namespace

void block_invalid_edges(const DeviceArrays& a, const Window& own, bool flags_clear, cudaStream_t s) {
    if (own.size() == 0) return;
    if (flags_clear) {  // a full pass would read and write every flag for these few bits
        const bool right = own.col0 + own.cols == a.W, down = own.row0 + own.rows == a.H;
        if (!right && !down) return;
        constexpr int kThreads = 256;
        const int64_t blocks = (own.rows + own.cols + kThreads - 1) / kThreads;
        block_border_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(a, own, right, down);
    } else {
        const Window cols_by_per{own.row0, own.col0, own.rows, (own.cols + kBlockPer - 1) / kBlockPer};
        block_invalid_kernel<<<pixel_grid(cols_by_per), dim3(kBlockX, kBlockY), 0, s>>>(a, own);
    }
    check(cudaGetLastError(), "block_invalid_edges (launch)");
}

void rasterise_cuts(const DeviceArrays& a, const Window& own, const DeviceCut* d_cuts, int64_t n, cudaStream_t s) {
    if (n == 0 || own.size() == 0) return;
    constexpr int kThreads = 128;
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 0x7fffffff) throw std::runtime_error("rasterise_cuts: too many cuts");
    rasterise_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(a, own, d_cuts, n);
    check(cudaGetLastError(), "rasterise_cuts (launch)");
}

}  // namespace tessera::cuda
