// Section 4.1's decision (docs/ARCHITECTURE.md), written once for the host compiler and nvcc
// (C++17: the .cu files include it): the cycles a pixel takes from its 8 neighbours' u.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/hostdev.h"
#include "kernels/types.h"

namespace tessera {

// The cycles to add to a pixel of u (finite) from its 8 neighbours' u before any correction, in
// the order up-left, up, up-right, left, right, down-left, down, down-right (NaN: not
// integrated, outside the image, or of another component: components' offsets are their own):
// rint((median - u) * INV_2PI), the median of the counted values (of an even count, the two
// middle ones added and halved), float32, each operation rounded, ties to even. The median, not
// the mean: a pixel beside a cut across which u jumps by two cycles or more keeps its side.
// Fewer than three counted neighbours (a pixel on a line one pixel wide): 0.
TESSERA_HOSTDEV inline int32_t cycle_correction(float u, const float (&nb)[8]) {
    float v[8];
    int n = 0;
    for (int i = 0; i < 8; ++i)
        if (nb[i] == nb[i]) {  // not NaN: insertion sort, ascending
            int j = n++;
            for (; j > 0 && v[j - 1] > nb[i]; --j) v[j] = v[j - 1];
            v[j] = nb[i];
        }
    if (n < 3) return 0;
#if defined(__CUDA_ARCH__)
    const float med = (n & 1) ? v[n / 2] : __fmul_rn(__fadd_rn(v[n / 2 - 1], v[n / 2]), 0.5f);
    return static_cast<int32_t>(rintf(__fmul_rn(__fsub_rn(med, u), kInvTwoPiF)));
#else
    const float med = (n & 1) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) * 0.5f;
    return static_cast<int32_t>(std::rint((med - u) * kInvTwoPiF));
#endif
}

// The corrected u: u + 6.2831855f * d (float32, each operation rounded).
TESSERA_HOSTDEV inline float corrected_u(float u, int32_t d) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(u, __fmul_rn(kTwoPiF, static_cast<float>(d)));
#else
    return u + kTwoPiF * static_cast<float>(d);
#endif
}

}  // namespace tessera
