// Contrast-limited adaptive histogram equalisation (issue item 3) for quicklooks of an
// amplitude/intensity or an unwrapped phase: float or uint16 in, 8- or 16-bit out.
// ARCHITECTURE.md section 5: the value range and the tile histograms are reductions
// (allreduce), the interpolation is a halo stage that needs only the tile LUTs, which
// every rank computes from the reduced histograms. The steps here are one window's; the
// collective clahe() that reduces over the ranks is partition/clahe.h's.
//
// Definitions (every step is integer or a per-pixel double expression, so the output
// is bit-identical for any rank count, any windows and any thread count):
//
//   Valid pixels: valid[i] != 0 (null: all) and the value finite.
//   Range [lo, hi]: min and max over the valid pixels of the whole image (or given).
//   Bin of v:   b = (int)((double(v) - lo) * (nbins / (hi - lo))), clamped to
//               [0, nbins - 1]  (every v is bin 0 when hi == lo). Double arithmetic,
//               no contraction.
//   Tiles:      a ty x tx grid; tile row i covers image rows [i H / ty, (i+1) H / ty)
//               (integer division), tile column j likewise over W: the grid need not
//               divide the image (tile sides differ by at most one pixel).
//   Histogram:  per tile, the bins of its valid pixels (uint32 counts: exact sums over
//               the ranks that share the tile). n = the tile's valid count.
//   Clip:       clip_limit > 0: clip = max(1, (int64)(clip_limit * n / nbins)) (as in
//               OpenCV, with the tile's valid count for its area); excess = sum over bins
//               of max(h - clip, 0), h = min(h, clip); then (OpenCV's redistribution)
//               every bin gets excess / nbins, and the remaining excess % nbins counts go
//               one each to bins 0, s, 2s, ... with s = max(nbins / remaining, 1).
//               clip_limit <= 0: no clipping (plain AHE).
//   LUT:        cdf(b) = h(0) + ... + h(b); lut(b) = floor((2 cdf(b) out_max + n) / (2 n))
//               (cdf / n * out_max rounded half up), out_max = 255 or 65535. A tile with
//               no valid pixel gets the ramp floor((2 b out_max + nbins - 1) / (2 (nbins - 1))).
//   Interpolation (bilinear between the 4 nearest tile centres): tile i's centre row,
//               doubled, is Ci = start(i) + start(i+1) - 1; for pixel row r (R = 2r):
//               R <= C0 -> tiles (0, 0), weight 0; R >= C(ty-1) -> (ty-1, ty-1), weight 0;
//               else Ci <= R < C(i+1) -> tiles (i, i+1), wy = R - Ci, dy = C(i+1) - Ci
//               (dy = 1 at the borders). Columns likewise (wx, dx). With the four LUT
//               values L(row tile, col tile) at the pixel's bin:
//                 num = (L11 (dx - wx) + L12 wx) (dy - wy) + (L21 (dx - wx) + L22 wx) wy
//                 out = floor((2 num + dx dy) / (2 dx dy))          (exact, half up)
//   Invalid pixels are written as 0.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/types.h"

namespace tessera {

struct ClaheParams {
    int tile_rows = 8, tile_cols = 8;  // ty x tx
    double clip_limit = 2.0;           // OpenCV's clipLimit; <= 0: no clipping
    int nbins = 256;                   // 2..65536 (256 for 8-bit, 4096 or 65536 for 16-bit)
    int out_bits = 8;                  // 8 or 16
    bool fixed_range = false;          // use [lo, hi] instead of the valid pixels' min and max
    double lo = 0, hi = 0;
};

// The tile grid over an H x W image (global pixel indices).
struct ClaheGrid {
    int64_t H = 0, W = 0;
    int ty = 1, tx = 1;
    int64_t row_start(int i) const { return static_cast<int64_t>(i) * H / ty; }
    int64_t col_start(int j) const { return static_cast<int64_t>(j) * W / tx; }
    int tiles() const { return ty * tx; }
    int tile_row(int64_t r) const { return static_cast<int>(((r + 1) * ty - 1) / H); }
    int tile_col(int64_t c) const { return static_cast<int>(((c + 1) * tx - 1) / W); }
};

// Checks the parameters against the image (tiles <= pixels per axis, bins, bits, tile
// area < 2^32, interpolation denominators) and returns the grid; std::invalid_argument
// with a one-line reason otherwise.
ClaheGrid make_clahe_grid(int64_t H, int64_t W, const ClaheParams& p);

struct ClaheRange {
    double lo = 0, hi = 0;
    int64_t count = 0;  // valid pixels seen
};

// Min, max and count over the window's valid pixels (count 0: lo = +inf, hi = -inf).
ClaheRange clahe_local_range(const float* img, const uint8_t* valid, const Window& own, int64_t stride);
ClaheRange clahe_local_range(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride);

// Adds the window's valid pixels to hist (tiles() * nbins counts, tile-major, tiles in
// row-major order). range: the global one.
void clahe_histograms(const float* img, const uint8_t* valid, const Window& own, int64_t stride,
                      const ClaheGrid& g, const ClaheParams& p, const ClaheRange& range, uint32_t* hist);
void clahe_histograms(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride,
                      const ClaheGrid& g, const ClaheParams& p, const ClaheRange& range, uint32_t* hist);

// Clip, redistribute and integrate every tile's histogram: lut (tiles() * nbins).
void clahe_luts(const uint32_t* hist, const ClaheGrid& g, const ClaheParams& p, uint16_t* lut);

// Interpolates the LUTs at the window's pixels. out: row stride out_stride; values
// 0..255 (8-bit) or 0..65535 (16-bit); a uint8_t output needs out_bits == 8.
void clahe_apply(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint16_t* out,
                 int64_t out_stride);
void clahe_apply(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint16_t* out,
                 int64_t out_stride);
void clahe_apply(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint8_t* out,
                 int64_t out_stride);
void clahe_apply(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint8_t* out,
                 int64_t out_stride);

}  // namespace tessera
