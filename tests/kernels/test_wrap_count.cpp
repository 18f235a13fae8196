// wrap_count's rint through the bits of a sum (kernels/types.h) against the C library's rintf
// (ties to even): every half-integer and its neighbours, and a stride through all 2^32 float bit
// patterns whose product lies in the range the rule covers (|d / 2 pi| <= 2^22).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/types.h"

namespace tessera {
namespace {

// Section 2's wrap count through the C library's rintf (the current rounding: to nearest, ties to even).
int32_t reference(float phi_a, float phi_b) {
    const float d = phi_b - phi_a;
    return static_cast<int32_t>(std::rintf(d * kInvTwoPiF));
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

TEST(WrapCount, EqualsRintfAtTiesAndTheirNeighbours) {
    int64_t checked = 0;
    for (int32_t k = -2000; k <= 2000; ++k) {
        const float tie = static_cast<float>(k) + 0.5f;
        for (const float x : {tie, std::nextafterf(tie, -1e9f), std::nextafterf(tie, 1e9f), static_cast<float>(k)}) {
            // Phases whose difference times 1/2pi lands on or next to the tie.
            const float b = x / kInvTwoPiF;
            for (const float a : {0.0f, 1.0f, -3.0f}) {
                ASSERT_EQ(wrap_count(a, a + b), reference(a, a + b)) << "a " << a << " b " << a + b;
                ++checked;
            }
        }
    }
    EXPECT_GT(checked, 40000);
    // The ends of the range: products of exactly +-2^22 and the largest below.
    for (const float y : {0x1p22f, -0x1p22f, std::nextafterf(0x1p22f, 0.0f), std::nextafterf(-0x1p22f, 0.0f)}) {
        const float b = y / kInvTwoPiF;
        if (std::fabs(b * kInvTwoPiF) <= 0x1p22f) EXPECT_EQ(wrap_count(0.0f, b), reference(0.0f, b)) << y;
    }
    // Wrapped phases in [-pi, pi]: every difference's count is -1, 0 or 1.
    for (int i = -1000; i <= 1000; ++i)
        for (int j = -1000; j <= 1000; j += 7) {
            const float a = static_cast<float>(i) * 0.0031415927f, b = static_cast<float>(j) * 0.0031415927f;
            ASSERT_EQ(wrap_count(a, b), reference(a, b));
        }
}

TEST(WrapCount, EqualsRintfOnAStrideThroughEveryFloat) {
    // b over a stride of all bit patterns (a = 0): huge, tiny and subnormal differences included.
    int64_t checked = 0;
    for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
        const float b = from_bits(static_cast<uint32_t>(u));
        if (!std::isfinite(b) || std::fabs(b * kInvTwoPiF) > 0x1p22f) continue;  // beyond any phase difference
        ASSERT_EQ(wrap_count(0.0f, b), reference(0.0f, b)) << "bits " << u;
        ++checked;
    }
    EXPECT_GT(checked, 500000);
}

}  // namespace
}  // namespace tessera
