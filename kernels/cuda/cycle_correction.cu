// Section 4.1 on the device: every pixel decided from u before any correction (one kernel,
// the corrected pixels listed), then the decisions applied (another).
#include "kernels/cuda/cycle_correction.h"

#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cycle_decision.h"

namespace tessera::cuda {

namespace {

__device__ __forceinline__ uint32_t label_of(const void* label, int bytes, int64_t l) {
    if (bytes == 1) return static_cast<const uint8_t*>(label)[l];
    if (bytes == 2) return static_cast<const uint16_t*>(label)[l];
    return static_cast<const uint32_t*>(label)[l];
}

__global__ void decide_kernel(DeviceArrays d, Window own, const void* label, int label_bytes, const float* halo,
                              const uint32_t* halo_label, int32_t* decided, int64_t keep, uint32_t* list,
                              unsigned long long* count, unsigned long long cap) {
    constexpr int64_t K = kCorrectionReach;
    const int64_t R = own.rows, C = own.cols, n = R * C, wide = C + 2 * K;
    // Halo offsets (kernels/cycle_correction.h's layout): above, below (K rows of C + 2K each),
    // left, right (R x K each).
    auto halo_at = [&](int64_t i, int64_t j) -> int64_t {
        if (i < 0) return (i + K) * wide + j + K;
        if (i >= R) return K * wide + (i - R) * wide + j + K;
        if (j < 0) return 2 * K * wide + i * K + j + K;
        return 2 * K * wide + R * K + i * K + (j - C);  // j >= C
    };
    auto inside = [&](int64_t i, int64_t j) { return i >= 0 && i < R && j >= 0 && j < C; };
    auto u_at = [&](int64_t i, int64_t j) -> float {  // own-local; beyond: the halo
        return inside(i, j) ? d.phase[d.index(own.row0 + i, own.col0 + j)] : halo[halo_at(i, j)];
    };
    auto label_at = [&](int64_t i, int64_t j) -> uint32_t {
        return inside(i, j) ? label_of(label, label_bytes, i * C + j) : halo_label[halo_at(i, j)];
    };
    for (int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; l < n;
         l += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t i = l / C, j = l % C;
        const float u = u_at(i, j);
        int32_t dd = 0;
        // A nonzero decision needs kCorrectionFarFewest neighbours 3 or more above u, or below
        // (NaN compares false): the labels and the decision only there.
        int up = 0, down = 0;
        if (u == u)
            for (int di = -K; di <= K; ++di)
                for (int dj = -K; dj <= K; ++dj) {
                    const float dv = __fsub_rn(u_at(i + di, j + dj), u);
                    up += dv >= 3.0f, down += dv <= -3.0f;
                }
        const bool far = up >= kCorrectionFarFewest || down >= kCorrectionFarFewest;
        const uint32_t mine = far ? label_of(label, label_bytes, l) : 0u;
        if (mine != 0 && (own.row0 + i) * d.W + own.col0 + j != keep) {
            float nb[kCorrectionNeighbours];
            int k = 0;
            for (int di = -K; di <= K; ++di)
                for (int dj = -K; dj <= K; ++dj) {
                    if (di == 0 && dj == 0) continue;
                    nb[k++] = label_at(i + di, j + dj) == mine ? u_at(i + di, j + dj) : __int_as_float(0x7fc00000);
                }
            dd = cycle_correction(u, nb);
            if (dd != 0) {
                const unsigned long long at = atomicAdd(count, 1ull);
                if (at < cap) list[at] = static_cast<uint32_t>(l);
            }
        }
        decided[l] = dd;
    }
}

__global__ void apply_kernel(DeviceArrays d, Window own, const int32_t* decided, int32_t* cycles) {
    const int64_t n = own.rows * own.cols;
    for (int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; l < n;
         l += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int32_t dd = decided[l];
        if (dd == 0) continue;
        float* p = d.phase + d.index(own.row0 + l / own.cols, own.col0 + l % own.cols);
        *p = corrected_u(*p, dd);
        if (cycles) cycles[l] += dd;
    }
}

}  // namespace

std::vector<uint32_t> correct_cycles(const DeviceArrays& d, const Window& own, const void* label, int label_bytes,
                                     const float* halo, const uint32_t* halo_label, int32_t* decided, int32_t* cycles,
                                     int64_t keep, cudaStream_t s) {
    const int64_t n = own.rows * own.cols;
    if (n == 0) return {};
    // Corrections are rare: a list of up to a sixteenth of the pixels, else every decision comes down.
    const unsigned long long cap = static_cast<unsigned long long>(std::max<int64_t>(n / 16, 1 << 16));
    StreamBuffer<uint32_t> list(static_cast<size_t>(cap), s, "cycle correction (list)");
    StreamBuffer<unsigned long long> count(1, s, "cycle correction (count)");
    check(cudaMemsetAsync(count.get(), 0, sizeof(unsigned long long), s), "cycle correction (cudaMemsetAsync)");
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 1 << 16));
    decide_kernel<<<blocks, threads, 0, s>>>(d, own, label, label_bytes, halo, halo_label, decided, keep, list.get(),
                                             count.get(), cap);
    apply_kernel<<<blocks, threads, 0, s>>>(d, own, decided, cycles);
    check(cudaGetLastError(), "cycle correction (launch)");
    unsigned long long found = 0;
    check(cudaMemcpyAsync(&found, count.get(), sizeof found, cudaMemcpyDeviceToHost, s), "cycle correction (count)");
    check(cudaStreamSynchronize(s), "cycle correction (cudaStreamSynchronize)");
    std::vector<uint32_t> out;
    if (found <= cap) {
        out.resize(static_cast<size_t>(found));
        if (found)
            check(cudaMemcpyAsync(out.data(), list.get(), out.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost, s),
                  "cycle correction (list)");
    } else {
        std::vector<int32_t> all(static_cast<size_t>(n));
        check(cudaMemcpyAsync(all.data(), decided, all.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, s),
              "cycle correction (decisions)");
        check(cudaStreamSynchronize(s), "cycle correction (cudaStreamSynchronize)");
        for (size_t l = 0; l < all.size(); ++l)
            if (all[l]) out.push_back(static_cast<uint32_t>(l));
    }
    check(cudaStreamSynchronize(s), "cycle correction (cudaStreamSynchronize)");
    return out;
}

}  // namespace tessera::cuda
