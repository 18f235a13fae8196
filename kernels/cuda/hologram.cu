// Device kernels of the CUDA hologram demodulation; see kernels/cuda/hologram_kernels.h.
// Every kernel is deterministic: no floating-point atomics, the carrier search reduces an
// order-independent 64-bit maximum.
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

__device__ __forceinline__ int64_t mod(int64_t a, int64_t n) {
    const int64_t r = a % n;
    return r < 0 ? r + n : r;
}

// Signed frequency of unshifted index i of an axis of n bins: [-n/2, (n-1)/2].
__device__ __forceinline__ int64_t signed_freq(int64_t i, int64_t n) { return i <= (n - 1) / 2 ? i : i - n; }

// Spectrum value at any unshifted bin (ky, kx) of a real image's half spectrum, through
// F(-k) = conj(F(k)) for the left half (HologramPlan::bin on the CPU).
__device__ __forceinline__ float2 bin(const float2* half, int64_t rows, int64_t cols, int64_t ky, int64_t kx) {
    ky = mod(ky, rows);
    kx = mod(kx, cols);
    const int64_t hc = cols / 2 + 1;
    if (kx < hc) return half[ky * hc + kx];
    const float2 v = half[mod(-ky, rows) * hc + (cols - kx)];
    return make_float2(v.x, -v.y);
}

__global__ void carrier_search_kernel(const float2* __restrict__ half, int64_t rows, int64_t cols, double dc2,
                                      unsigned long long* key) {
    const int64_t hc = cols / 2 + 1;
    const int64_t n = rows * hc;
    unsigned long long best = 0;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        // n < 2^31 (checked by the plan): 32-bit division.
        const auto iu = static_cast<uint32_t>(i), hu = static_cast<uint32_t>(hc);
        const int64_t iy = iu / hu, ix = iu % hu;
        // Self-conjugate columns (zero frequency, Nyquist of an even width): one bin of each
        // mirrored pair, the one with row frequency >= 0.
        const bool self_conjugate = ix == 0 || (cols % 2 == 0 && ix == cols / 2);
        if (self_conjugate && iy > mod(-iy, rows)) continue;
        const int64_t ky = signed_freq(iy, rows), kx = signed_freq(ix, cols);
        if (static_cast<double>(ky * ky + kx * kx) <= dc2) continue;
        const float2 v = half[i];
        const float m = hm::fadd(hm::fmul(v.x, v.x), hm::fmul(v.y, v.y));  // std::norm
        if (isnan(m)) continue;  // never wins on the CPU (no comparison is true)
        const auto idx = static_cast<unsigned long long>((ky + rows / 2) * cols + (kx + cols / 2));
        // m >= +0: its bits order as the values; the low half orders smaller indices higher.
        const unsigned long long k =
            (static_cast<unsigned long long>(__float_as_uint(m)) << 32) | (0xffffffffull - idx);
        best = k > best ? k : best;
    }
    for (int off = 16; off > 0; off >>= 1) {
        const unsigned long long o = __shfl_down_sync(0xffffffffu, best, off);
        best = o > best ? o : best;
    }
    __shared__ unsigned long long warp_best[kThreads / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_best[warp] = best;
    __syncthreads();
    if (warp == 0) {
        best = lane < kThreads / 32 ? warp_best[lane] : 0ull;
        for (int off = 16; off > 0; off >>= 1) {
            const unsigned long long o = __shfl_down_sync(0xffffffffu, best, off);
            best = o > best ? o : best;
        }
        if (lane == 0 && best != 0) atomicMax(key, best);
    }
}

__global__ void carrier_finish_kernel(const float2* __restrict__ half, int64_t rows, int64_t cols, bool detected,
                                      int64_t given_row, int64_t given_col, double given_radius, DeviceCarrier* c) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int64_t row = -1, col = -1;
    if (detected) {
        const unsigned long long k = c->key;
        if (k != 0) {
            const auto idx = static_cast<int64_t>(0xffffffffull - (k & 0xffffffffull));
            row = idx / cols;
            col = idx % cols;
        }
    } else {
        row = given_row;
        col = given_col;
    }
    c->row = row;
    c->col = col;
    if (row < 0) {
        c->radius = 0.5;
        c->re = 0.0f;
        c->im = 0.0f;
        return;
    }
    const float2 v = bin(half, rows, cols, row - rows / 2, col - cols / 2);
    c->re = v.x;
    c->im = v.y;
    c->radius = sideband_radius(given_radius, rows, cols, row, col);
}

// One thread per element of the output spectrum (grid-stride over rows). Element (y, x) is
// the disc's offset (dy, dx) from the carrier, with dy = y or y - rows (likewise dx): the
// disc spans 2r+1 < min(rows, cols) bins (filter_radius caps it), so each offset has one
// element. Written as the CPU's band (HologramPlan::synthesise): bin * w, w in float.
__global__ void sideband_kernel(const float2* __restrict__ half, const DeviceCarrier* __restrict__ c, int64_t rows,
                                int64_t cols, float scale, bool hann, float2* __restrict__ out) {
    const int64_t x = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (x >= cols) return;
    const int64_t crow = c->row, ccol = c->col;
    const double radius = c->radius;
    const auto ri = static_cast<int64_t>(floor(radius));
    const double r2 = hm::dmul(radius, radius);
    const int64_t cy = crow - rows / 2, cx = ccol - cols / 2;
    const int64_t dx = x <= ri ? x : (x >= cols - ri ? x - cols : cols);  // cols: outside the disc
    for (int64_t y = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; y < rows;
         y += static_cast<int64_t>(gridDim.y) * blockDim.y) {
        float2 v = make_float2(0.0f, 0.0f);
        const int64_t dy = y <= ri ? y : (y >= rows - ri ? y - rows : rows);
        if (crow >= 0 && dx != cols && dy != rows) {
            const double d2 = static_cast<double>(dy * dy + dx * dx);
            if (!(d2 > r2)) {
                float w = scale;
                if (hann) {
                    // static_cast<float>(0.5 * (1.0 + cos(pi * sqrt(d2) / radius))) * scale
                    const double h = hm::dmul(0.5, hm::dadd(1.0, cos(hm::ddiv(hm::dmul(hm::kPiD, hm::dsqrt(d2)), radius))));
                    w = hm::fmul(__double2float_rn(h), scale);
                }
                const float2 b = bin(half, rows, cols, cy + dy, cx + dx);
                v = make_float2(hm::fmul(b.x, w), hm::fmul(b.y, w));
            }
        }
        out[y * cols + x] = v;
    }
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
unsigned blocks_for(int64_t n) {
    const int64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(std::clamp<int64_t>(b, 1, 65535));
}

}  // namespace

void carrier_search(const float2* half, int64_t rows, int64_t cols, double dc2, unsigned long long* key,
                    cudaStream_t s) {
    const int64_t n = rows * (cols / 2 + 1);
    carrier_search_kernel<<<std::min(blocks_for(n), 2048u), kThreads, 0, s>>>(half, rows, cols, dc2, key);
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
    finish_field_kernel<<<blocks_for(n), kThreads, 0, s>>>(field, ref, phase, amplitude, n);
    check(cudaGetLastError(), "finish_field (launch)");
}

}  // namespace tessera::cuda
