// Device helpers shared by the .cu files of the CUDA backend (nvcc only).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/kernels.h"
#include "kernels/types.h"

namespace tessera::cuda::dev {

// Section 2, bit-identical to tessera::wrap_count on the host: float32 subtract and
// multiply rounded to nearest with no contraction into an FMA, then rint (ties to even).
__device__ __forceinline__ int32_t wrap_count(float phi_a, float phi_b) {
    return static_cast<int32_t>(rintf(__fmul_rn(__fsub_rn(phi_b, phi_a), kInvTwoPiF)));
}

// (parent, potential) in one word, exactly like kernels/union_find.h.
__device__ __forceinline__ uint64_t pack(uint32_t parent, int32_t pot) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(pot)) << 32) | parent;
}
__device__ __forceinline__ uint32_t parent(uint64_t w) { return static_cast<uint32_t>(w); }
__device__ __forceinline__ int32_t potential(uint64_t w) { return static_cast<int32_t>(static_cast<uint32_t>(w >> 32)); }

// Window::contains for device code (types.h is host-only).
__device__ __forceinline__ bool contains(const Window& w, int64_t r, int64_t c) {
    return r >= w.row0 && r < w.row0 + w.rows && c >= w.col0 && c < w.col0 + w.cols;
}

// Loads and stores of union-find words that other SMs change concurrently: through L2
// (L1 is not coherent), never cached in registers across iterations.
__device__ __forceinline__ uint64_t load(const uint64_t* p) {
    return __ldcg(reinterpret_cast<const unsigned long long*>(p));
}
__device__ __forceinline__ void store(uint64_t* p, uint64_t v) {
    __stcg(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ uint64_t cas(uint64_t* p, uint64_t expect, uint64_t desired) {
    return atomicCAS(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(expect),
                     static_cast<unsigned long long>(desired));
}

// Sets `bit` in the flag byte at byte offset `off` with a 32-bit atomicOr on the word that
// holds it (little-endian: byte i of a word is bits 8i..8i+7). The flags allocation is
// 256-byte aligned and padded to a multiple of 4 bytes.
__device__ __forceinline__ void flag_or(uint8_t* flags, int64_t off, uint8_t bit) {
    unsigned int* word = reinterpret_cast<unsigned int*>(flags + (off & ~int64_t{3}));
    atomicOr(word, static_cast<unsigned int>(bit) << (8 * static_cast<unsigned int>(off & 3)));
}

}  // namespace tessera::cuda::dev

namespace tessera::cuda {

// Launch geometry shared by the pixel kernels: blocks of 32 x 8 threads, one warp per
// 32-pixel row segment; rows beyond gridDim.y * 8 are covered by a grid-stride loop.
inline constexpr int kBlockX = 32, kBlockY = 8;
inline dim3 pixel_grid(const Window& own) {
    const int64_t gx = (own.cols + kBlockX - 1) / kBlockX;
    int64_t gy = (own.rows + kBlockY - 1) / kBlockY;
    if (gx > 0x7fffffff) throw std::runtime_error("CUDA backend: own window too wide");
    if (gy > 65535) gy = 65535;
    return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy), 1);
}

}  // namespace tessera::cuda
