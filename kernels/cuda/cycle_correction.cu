// Section 4.1 on the device: every pixel decided from u before any correction (one kernel),
// then the decisions applied (another).
#include "kernels/cuda/cycle_correction.h"

#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/cycle_decision.h"

namespace tessera::cuda {

namespace {

__global__ void decide_kernel(const float* u, int64_t stride, int64_t rows, int64_t cols, int32_t* decided,
                              unsigned long long* count, int64_t keep) {
    const int64_t n = rows * cols;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t r = i / cols, c = i % cols;
        const float v = u[r * stride + c];
        int32_t d = 0;
        if (v == v && i != keep) {
            float nb[8];
            int k = 0;
            for (int dr = -1; dr <= 1; ++dr)
                for (int dc = -1; dc <= 1; ++dc) {
                    if (dr == 0 && dc == 0) continue;
                    const int64_t rr = r + dr, cc = c + dc;
                    nb[k++] = (rr >= 0 && rr < rows && cc >= 0 && cc < cols) ? u[rr * stride + cc]
                                                                             : __int_as_float(0x7fc00000);
                }
            d = cycle_correction(v, nb);
            if (d != 0) atomicAdd(count, 1ull);
        }
        decided[i] = d;
    }
}

__global__ void apply_kernel(float* u, int64_t stride, int64_t rows, int64_t cols, const int32_t* decided) {
    const int64_t n = rows * cols;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int32_t d = decided[i];
        if (d != 0) {
            float* p = u + (i / cols) * stride + i % cols;
            *p = corrected_u(*p, d);
        }
    }
}

}  // namespace

int64_t correct_cycles(float* u, int64_t stride, int64_t rows, int64_t cols, int32_t* decided,
                       unsigned long long* count, int64_t keep, cudaStream_t s) {
    const int64_t n = rows * cols;
    if (n == 0) return 0;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    check(cudaMemsetAsync(count, 0, sizeof(unsigned long long), s), "cycle correction (cudaMemsetAsync)");
    decide_kernel<<<blocks, threads, 0, s>>>(u, stride, rows, cols, decided, count, keep);
    apply_kernel<<<blocks, threads, 0, s>>>(u, stride, rows, cols, decided);
    check(cudaGetLastError(), "cycle correction (launch)");
    unsigned long long host = 0;
    check(cudaMemcpyAsync(&host, count, sizeof host, cudaMemcpyDeviceToHost, s), "cycle correction (count)");
    check(cudaStreamSynchronize(s), "cycle correction (cudaStreamSynchronize)");
    return static_cast<int64_t>(host);
}

}  // namespace tessera::cuda
