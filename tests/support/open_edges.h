// Section 3's promise checked from a run's input and output alone (docs/ARCHITECTURE.md 3;
// issue 13 item 4), never from the code's own conflict counter: along every edge the cuts left
// open between two integrated pixels, k(b) - k(a) = -n(a->b), with k read back from u; and u
// lies a whole number of 2 pi from the wrapped phase.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "kernels/types.h"

namespace tessera::testing {

struct OpenEdgeCheck {
    int64_t checked = 0;      // open edges between two integrated pixels
    int64_t disagree = 0;     // of them, where the cycles' step is not minus the wrap count
    int64_t incongruent = 0;  // integrated pixels whose u - phi is not a whole number of 2 pi
};

// phi: the wrapped input; u: the output (NaN where not integrated); flags: the run's edge bits.
inline OpenEdgeCheck check_open_edges(std::span<const float> phi, std::span<const float> u,
                                      std::span<const uint8_t> flags, int64_t H, int64_t W) {
    constexpr double two_pi = 6.283185307179586;
    OpenEdgeCheck c;
    auto k_of = [&](size_t i) { return std::llround((static_cast<double>(u[i]) - phi[i]) / two_pi); };
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
            const size_t a = static_cast<size_t>(y * W + x);
            if (!std::isfinite(u[a])) continue;
            const double off = static_cast<double>(u[a]) - phi[a] - two_pi * static_cast<double>(k_of(a));
            c.incongruent += std::abs(off) > 1e-5 * std::max(1.0, std::abs(static_cast<double>(u[a])));
            auto edge = [&](size_t b, uint8_t bit) {
                if ((flags[a] & bit) || !std::isfinite(u[b])) return;
                // The wrap count as section 2 defines it, in float.
                const int64_t n = std::lrint((phi[b] - phi[a]) * kInvTwoPiF);
                c.disagree += k_of(b) - k_of(a) != -n;
                ++c.checked;
            };
            if (x + 1 < W) edge(a + 1, kBlockRight);
            if (y + 1 < H) edge(a + static_cast<size_t>(W), kBlockDown);
        }
    return c;
}

}  // namespace tessera::testing
