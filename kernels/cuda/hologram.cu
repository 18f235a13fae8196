// Device kernels of the CUDA hologram demodulation; see kernels/cuda/hologram_kernels.h. The
// per-element arithmetic is in hologram_math.h (shared with the host, tested there against
// the CPU backend). Every kernel is deterministic: no floating-point atomics, the carrier
// search reduces an order-independent 64-bit maximum.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/cuda/hologram_kernels.h"
#include "kernels/cuda/hologram_math.h"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kBlockX = 32, kBlockY = 8;

__device__ __forceinline__ unsigned long long max_key(unsigned long long a, unsigned long long b) {
    return a > b ? a : b;
}

// Grid-stride maximum of carrier_key over the half spectrum: warp shuffles, one shared slot
// per warp, one atomicMax per block.
__global__ void carrier_search_kernel(const float2* __restrict__ half, int64_t rows, int64_t cols, double dc2,
                                      unsigned long long* key) {
    const int64_t n = rows * (cols / 2 + 1);
    unsigned long long best = 0;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        best = max_key(best, carrier_key(half, rows, cols, dc2, i));
    for (int off = 16; off > 0; off >>= 1) best = max_key(best, __shfl_down_sync(0xffffffffu, best, off));
    __shared__ unsigned long long warp_best[kThreads / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_best[warp] = best;
    __syncthreads();
    if (warp == 0) {
        best = lane < kThreads / 32 ? warp_best[lane] : 0ull;
        for (int off = 16; off > 0; off >>= 1) best = max_key(best, __shfl_down_sync(0xffffffffu, best, off));
        if (lane == 0 && best != 0) atomicMax(key, best);
    }
}

__global__ void carrier_finish_kernel(const float2* __restrict__ half, int64_t rows, int64_t cols, bool detected,
                                      int64_t given_row, int64_t given_col, double given_radius, DeviceCarrier* c) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int64_t row = -1, col = -1;
    if (!detected) {
        row = given_row;
        col = given_col;
    } else if (c->key != 0) {
        decode_carrier_key(c->key, cols, row, col);
    }
    c->row = row;
    c->col = col;
    if (row < 0) {  // no bin: sideband() writes zeros, the host reports it
        c->radius = 0.5;
        c->re = 0.0f;
        c->im = 0.0f;
        return;
    }
    const float2 v = spectrum_bin(half, rows, cols, row - rows / 2, col - cols / 2);
    c->re = v.x;
    c->im = v.y;
    c->radius = sideband_radius(given_radius, rows, cols, row, col);
}

// One thread per element (coalesced along the row), grid-stride over the rows; every element
// written (the zeros too: no separate memset pass).
__global__ void sideband_kernel(const float2* __restrict__ half, const DeviceCarrier* __restrict__ c, int64_t rows,
                                int64_t cols, float scale, bool hann, float2* __restrict__ out) {
    const int64_t x = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (x >= cols) return;
    const int64_t crow = c->row, ccol = c->col;
    const double radius = c->radius;
    for (int64_t y = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; y < rows;
         y += static_cast<int64_t>(gridDim.y) * blockDim.y)
        out[y * cols + x] = sideband_value(half, rows, cols, crow, ccol, radius, scale, hann, y, x);
}

__global__ void finish_field_kernel(float2* __restrict__ field, const float2* __restrict__ ref,
                                    float* __restrict__ phase, float* __restrict__ amplitude, int64_t n) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        float2 f = field[i];
        if (ref) {
            const float2 r = ref[i];
            float re, im;
            divide_field(f.x, f.y, r.x, r.y, re, im);
            f = make_float2(re, im);
            field[i] = f;
        }
        phase[i] = phase_of(f.y, f.x);
        if (amplitude) amplitude[i] = hypotf(f.x, f.y);
    }
}

// Blocks for a grid-stride loop over n items: enough to fill the GPU, never more than needed.
unsigned blocks_for(int64_t n, int64_t most) {
    const int64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(std::clamp<int64_t>(b, 1, most));
}

}  // namespace

void carrier_search(const float2* half, int64_t rows, int64_t cols, double dc2, unsigned long long* key,
                    cudaStream_t s) {
    const int64_t n = rows * (cols / 2 + 1);
    carrier_search_kernel<<<blocks_for(n, 2048), kThreads, 0, s>>>(half, rows, cols, dc2, key);
    check(cudaGetLastError(), "carrier_search (launch)");
}

void carrier_finish(const float2* half, int64_t rows, int64_t cols, bool detected, int64_t given_row,
                    int64_t given_col, double given_radius, DeviceCarrier* c, cudaStream_t s) {
    carrier_finish_kernel<<<1, 32, 0, s>>>(half, rows, cols, detected, given_row, given_col, given_radius, c);
    check(cudaGetLastError(), "carrier_finish (launch)");
}

void sideband(const float2* half, const DeviceCarrier* c, int64_t rows, int64_t cols, float scale, bool hann,
              float2* spectrum, cudaStream_t s) {
    const int64_t gx = (cols + kBlockX - 1) / kBlockX;
    const int64_t gy = std::min<int64_t>((rows + kBlockY - 1) / kBlockY, 65535);
    if (gx > 0x7fffffff) throw std::invalid_argument("sideband: frame too wide");
    sideband_kernel<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(kBlockX, kBlockY), 0, s>>>(
        half, c, rows, cols, scale, hann, spectrum);
    check(cudaGetLastError(), "sideband (launch)");
}

void finish_field(float2* field, const float2* ref, float* phase, float* amplitude, int64_t n, cudaStream_t s) {
    if (n <= 0) return;
    finish_field_kernel<<<blocks_for(n, 65535), kThreads, 0, s>>>(field, ref, phase, amplitude, n);
    check(cudaGetLastError(), "finish_field (launch)");
}

}  // namespace tessera::cuda
