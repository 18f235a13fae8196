// Plain data that crosses module boundaries (ARCHITECTURE.md sections 2 and 6).
#pragma once
#include <cstdint>

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
};

// 2*pi as float32, the constant of section 4's output formula.
inline constexpr float kTwoPiF = 6.2831855f;
inline constexpr float kInvTwoPiF = 0.15915494f;

}  // namespace tessera
