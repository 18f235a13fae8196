// TESSERA_HOSTDEV marks functions that both the host compiler and nvcc compile (isce3's
// CUDA_HOSTDEV): decisions both backends must take identically are written once with it.
// C++17 (the .cu files are C++17, CMakeLists.txt says why).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define TESSERA_HOSTDEV __host__ __device__
#else
#define TESSERA_HOSTDEV
#endif

namespace tessera::hd {

TESSERA_HOSTDEV inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
TESSERA_HOSTDEV inline int64_t max(int64_t a, int64_t b) { return a < b ? b : a; }
TESSERA_HOSTDEV inline int64_t abs(int64_t a) { return a < 0 ? -a : a; }

TESSERA_HOSTDEV inline int popcount(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __popcll(x);
#else
    return __builtin_popcountll(x);
#endif
}
// Trailing / leading zero bits of x != 0.
TESSERA_HOSTDEV inline int countr_zero(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __ffsll(static_cast<long long>(x)) - 1;
#else
    return __builtin_ctzll(x);
#endif
}
TESSERA_HOSTDEV inline int countl_zero(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __clzll(static_cast<long long>(x));
#else
    return __builtin_clzll(x);
#endif
}

}  // namespace tessera::hd
