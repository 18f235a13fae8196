// Plain data that crosses module boundaries (ARCHITECTURE.md sections 2 and 6).
#pragma once
#include <cstdint>
#include <cstring>

namespace tessera {

// A rectangle of global pixels: rows [row0, row0+rows), cols [col0, col0+cols).
struct Window {
    int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
    int64_t size() const { return rows * cols; }
    bool contains(int64_t r, int64_t c) const {
        return r >= row0 && r < row0 + rows && c >= col0 && c < col0 + cols;
    }
};

// Per-pixel flag bits: the edges a pixel owns (to its right and below) and validity.
enum PixelFlag : uint8_t {
    kBlockRight = 1u << 0,  // edge (r,c)-(r,c+1) is crossed by a branch cut or touches invalid
    kBlockDown = 1u << 1,   // edge (r,c)-(r+1,c)
    kInvalid = 1u << 2,     // nodata / NaN / masked: phase taken as 0 (section 2)
    kLowCoherence = 1u << 3,  // below --min-coherence: its phase counts for residues, but it is
                              // not integrated through: NaN, label 0 (README, --min-coherence)
    kCycleCorrected = 1u << 4,  // its cycles corrected from its neighbours (section 4.1; its own
                                // bit, so no pixel writes another's); bit 2 of /branch_cuts
};
// Pixels outside every component: their edges are blocked and they have no record.
inline constexpr uint8_t kUnreliable = kInvalid | kLowCoherence;

// 2*pi as float32, the constant of section 4's output formula.
inline constexpr float kTwoPiF = 6.2831855f;
inline constexpr float kInvTwoPiF = 0.15915494f;

}  // namespace tessera

namespace tessera {

// Rank-local pixel arrays of a region (row-major over `buf`, the own window plus a
// one-pixel halo below and to the right where the image continues).
struct RegionArrays {
    int64_t H = 0, W = 0;  // image size
    Window buf;
    float* phase = nullptr;      // wrapped phase, 0 at invalid pixels
    uint8_t* flags = nullptr;    // PixelFlag bits
    // Connected component, 0 = none: room for 4 bytes a pixel, written as wide as the
    // assignment says (ComponentAssignment::label_bytes; kernels/label_width.h).
    void* label = nullptr;
    int32_t* cycles = nullptr;   // k, optional (may be null)
    int64_t index(int64_t r, int64_t c) const { return (r - buf.row0) * buf.cols + (c - buf.col0); }
};

// Wrap count of the edge a -> b (section 2): float32, no contraction, ties to even. The
// rounding adds 1.5 * 2^23 (the sum's last mantissa bits are then rint of the product, in the
// default rounding) and reads the integer from the sum's bits: no branch, no libm call, no
// float-to-int conversion, so loops over pixels vectorize. The same int as (int)rintf for every
// product below 2^22 in magnitude (test WrapCount.*); a wrapped phase's differences stay below 2.
inline int32_t wrap_count(float phi_a, float phi_b) {
    const float d = phi_b - phi_a;
    const float sum = d * kInvTwoPiF + 0x1.8p23f;
    uint32_t bits;
    std::memcpy(&bits, &sum, sizeof bits);  // a register move (std::bit_cast is C++20; nvcc builds C++17)
    return static_cast<int32_t>(bits - 0x4B400000u);
}

}  // namespace tessera
