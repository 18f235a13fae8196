// Section 4.1's decision (docs/ARCHITECTURE.md), written once for the host compiler and nvcc
// (C++17: the .cu files include it): the cycles a pixel takes from the u of its neighbours
// within two pixels (its 5 x 5 window less itself).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/hostdev.h"
#include "kernels/types.h"

namespace tessera {

// How far the decision looks (Chebyshev pixels), how many neighbours that is, and the fewest
// counted ones it decides from (a pixel on a line one pixel wide sees four: weak evidence). A
// nonzero decision thus needs kCorrectionFewest / 2 + 1 neighbours 3 or more on one side of u.
inline constexpr int kCorrectionReach = 2;
inline constexpr int kCorrectionNeighbours = (2 * kCorrectionReach + 1) * (2 * kCorrectionReach + 1) - 1;
inline constexpr int kCorrectionFewest = 5;
inline constexpr int kCorrectionFarFewest = kCorrectionFewest / 2 + 1;

// The cycles to add to a pixel of u (finite) from its neighbours' u before any correction, row
// by row over the window, the pixel itself left out (NaN: not integrated, outside the image, or
// of another component: components' offsets are their own): rint((median - u) * INV_2PI), the
// median of the counted values (of an even count, the two middle ones added and halved),
// float32, each operation rounded, ties to even. The median, not the mean: a pixel beside a cut
// across which u jumps by two cycles or more keeps its side. Fewer than kCorrectionFewest
// counted neighbours: 0.
TESSERA_HOSTDEV inline int32_t cycle_correction(float u, const float (&nb)[kCorrectionNeighbours]) {
    // The median lies within 3 of u (so d = 0) unless half the counted values lie 3 or more
    // above u, or below: counted first, sorted only then (steep fringes pass any cheaper test).
    int n = 0, up = 0, down = 0;
    for (int i = 0; i < kCorrectionNeighbours; ++i)
        if (nb[i] == nb[i]) ++n, up += nb[i] - u >= 3.0f, down += nb[i] - u <= -3.0f;
    if (n < kCorrectionFewest || (2 * up < n && 2 * down < n)) return 0;
    float v[kCorrectionNeighbours];
    n = 0;
    for (int i = 0; i < kCorrectionNeighbours; ++i)
        if (nb[i] == nb[i]) {  // not NaN: insertion sort, ascending
            int j = n++;
            for (; j > 0 && v[j - 1] > nb[i]; --j) v[j] = v[j - 1];
            v[j] = nb[i];
        }
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
