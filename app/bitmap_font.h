// A 5x7 bitmap font for the few characters a quicklook prints (numbers in radians, "rad", "pi",
// "none"). Built in rather than FreeType (installed here): FreeType needs a font file found at
// run time, which the GPU bundle and compute nodes need not have; these 20 glyphs need none.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace tessera {

constexpr int64_t kGlyphWidth = 5, kGlyphHeight = 7, kGlyphAdvance = 6;  // pixels, one column apart

// Width in pixels of `text` drawn at `scale` (no trailing space).
int64_t text_width(const std::string& text, int scale = 1);

// Draws `text` into an RGB picture (width x height, pixel-interleaved) with its top-left corner at
// (row, col), each font pixel a scale x scale square of `colour`; what falls outside is clipped.
// Characters without a glyph draw as a space (digits . - + e and the letters of "rad pi none").
void draw_text(uint8_t* rgb, int64_t width, int64_t height, int64_t row, int64_t col, const std::string& text,
               const std::array<uint8_t, 3>& colour, int scale = 1);

}  // namespace tessera
