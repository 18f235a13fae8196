// CLAHE, CPU backend (kernels/clahe.h defines every step).
#include "kernels/clahe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>


namespace tessera {

namespace {

// Windows smaller than this run on one thread (parallel regions cost more than they
// save there, and much more when the cores are oversubscribed).
constexpr int64_t kParallelMinPixels = int64_t{1} << 16;

template <class T>
inline bool is_valid(const T* img, const uint8_t* valid, int64_t i) {
    if (valid && valid[i] == 0) return false;
    if constexpr (std::is_floating_point_v<T>) return std::isfinite(img[i]);
    return true;
}

// Section "Bin of v" of the header.
struct Binner {
    double lo = 0, scale = 0;
    int nb = 1;
    Binner(const ClaheRange& r, int nbins) : lo(r.lo), nb(nbins) {
        scale = r.hi > r.lo ? static_cast<double>(nbins) / (r.hi - r.lo) : 0.0;
    }
    inline int operator()(double v) const {
        const double t = (v - lo) * scale;
        if (!(t > 0.0)) return 0;
        if (t >= static_cast<double>(nb)) return nb - 1;
        return static_cast<int>(t);
    }
};

// Bin of a pixel value: the Binner for float input; for uint16 input a table of the
// Binner's result for each of the 65536 values (the same bins, no per-pixel double math).
template <class T>
struct BinOf {
    Binner b;
    BinOf(const ClaheRange& r, int nbins) : b(r, nbins) {}
    int operator()(T v) const { return b(static_cast<double>(v)); }
};
template <>
struct BinOf<uint16_t> {
    std::vector<uint16_t> table;
    BinOf(const ClaheRange& r, int nbins) : table(65536) {
        const Binner b(r, nbins);
        for (int v = 0; v < 65536; ++v) table[static_cast<size_t>(v)] = static_cast<uint16_t>(b(v));
    }
    int operator()(uint16_t v) const { return table[v]; }
};

// Interpolation pair of one axis position (header, "Interpolation").
struct AxisWeight {
    int32_t t1 = 0, t2 = 0;
    int64_t w = 0, d = 1;
};

AxisWeight axis_weight(int64_t k, int64_t n, int tiles) {
    auto start = [&](int i) { return static_cast<int64_t>(i) * n / tiles; };
    auto centre2 = [&](int i) { return start(i) + start(i + 1) - 1; };
    const int64_t R = 2 * k;
    AxisWeight a;
    if (tiles == 1 || R <= centre2(0)) return a;  // (0, 0)
    if (R >= centre2(tiles - 1)) {
        a.t1 = a.t2 = tiles - 1;
        return a;
    }
    int t = static_cast<int>(((k + 1) * tiles - 1) / n);  // the tile holding k
    if (R < centre2(t)) --t;
    a.t1 = t;
    a.t2 = t + 1;
    a.w = R - centre2(t);
    a.d = centre2(t + 1) - centre2(t);
    return a;
}

int64_t max_centre_gap(int64_t n, int tiles) {
    int64_t m = 1;
    for (int i = 0; i + 1 < tiles; ++i) {
        const int64_t c0 = static_cast<int64_t>(i) * n / tiles + static_cast<int64_t>(i + 1) * n / tiles - 1;
        const int64_t c1 =
            static_cast<int64_t>(i + 1) * n / tiles + static_cast<int64_t>(i + 2) * n / tiles - 1;
        m = std::max(m, c1 - c0);
    }
    return m;
}

template <class T>
ClaheRange local_range(const T* img, const uint8_t* valid, const Window& own, int64_t stride) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    int64_t count = 0;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) reduction(+ : count) schedule(static) \
    if (own.size() >= kParallelMinPixels)
    for (int64_t r = 0; r < own.rows; ++r) {
        const T* row = img + r * stride;
        const uint8_t* vr = valid ? valid + r * stride : nullptr;
        if constexpr (std::is_same_v<T, uint16_t>) {
            if (vr == nullptr) {  // every pixel valid: a plain integer min/max (vectorised)
                uint16_t mn = 65535, mx = 0;
                for (int64_t c = 0; c < own.cols; ++c) {
                    mn = std::min(mn, row[c]);
                    mx = std::max(mx, row[c]);
                }
                lo = std::min(lo, static_cast<double>(mn));
                hi = std::max(hi, static_cast<double>(mx));
                count += own.cols;
                continue;
            }
        }
        for (int64_t c = 0; c < own.cols; ++c) {
            if (!is_valid(row, vr, c)) continue;
            const double v = static_cast<double>(row[c]);
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            ++count;
        }
    }
    return {lo, hi, count};
}

template <class T>
void histograms(const T* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                const ClaheParams& p, const ClaheRange& range, uint32_t* hist) {
    if (own.rows <= 0 || own.cols <= 0) return;
    const BinOf<T> bin(range, p.nbins);
    // The tiles the window meets; one thread per tile, so no two threads share a histogram.
    const int i0 = g.tile_row(own.row0), i1 = g.tile_row(own.row0 + own.rows - 1);
    const int j0 = g.tile_col(own.col0), j1 = g.tile_col(own.col0 + own.cols - 1);
    const int ni = i1 - i0 + 1, nj = j1 - j0 + 1;
#pragma omp parallel for schedule(dynamic, 1) if (own.size() >= kParallelMinPixels)
    for (int k = 0; k < ni * nj; ++k) {
        const int i = i0 + k / nj, j = j0 + k % nj;
        const int64_t r0 = std::max(own.row0, g.row_start(i)), r1 = std::min(own.row0 + own.rows, g.row_start(i + 1));
        const int64_t c0 = std::max(own.col0, g.col_start(j)), c1 = std::min(own.col0 + own.cols, g.col_start(j + 1));
        uint32_t* h = hist + static_cast<int64_t>(i * g.tx + j) * p.nbins;
        for (int64_t r = r0; r < r1; ++r) {
            const T* row = img + (r - own.row0) * stride;
            const uint8_t* vr = valid ? valid + (r - own.row0) * stride : nullptr;
            for (int64_t c = c0 - own.col0; c < c1 - own.col0; ++c)
                if (is_valid(row, vr, c)) ++h[bin(row[c])];
        }
    }
}

// Per column of the window: the two tile columns' LUT offsets and the weights.
struct ColWeight {
    int32_t o1 = 0, o2 = 0;  // tile column * nbins
    uint32_t wx = 0, vx = 0; // weight of the second tile, of the first (dx - wx)
    uint64_t dx = 1;
};

template <bool kFast, class T, class O>
void apply_rows(const T* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                const ClaheParams& p, const BinOf<T>& bin, const uint16_t* lut, O* out, int64_t out_stride) {
    const int64_t nb = p.nbins;
    std::vector<ColWeight> cw(static_cast<size_t>(own.cols));
    for (int64_t c = 0; c < own.cols; ++c) {
        const AxisWeight a = axis_weight(own.col0 + c, g.W, g.tx);
        cw[static_cast<size_t>(c)] = {static_cast<int32_t>(a.t1 * nb), static_cast<int32_t>(a.t2 * nb),
                                      static_cast<uint32_t>(a.w), static_cast<uint32_t>(a.d - a.w),
                                      static_cast<uint64_t>(a.d)};
    }
#pragma omp parallel for schedule(static) if (own.size() >= kParallelMinPixels)
    for (int64_t r = 0; r < own.rows; ++r) {
        const AxisWeight rw = axis_weight(own.row0 + r, g.H, g.ty);
        const uint16_t* top = lut + static_cast<int64_t>(rw.t1) * g.tx * nb;
        const uint16_t* bot = lut + static_cast<int64_t>(rw.t2) * g.tx * nb;
        const uint64_t wy = static_cast<uint64_t>(rw.w), vy = static_cast<uint64_t>(rw.d - rw.w),
                       dy = static_cast<uint64_t>(rw.d);
        const T* row = img + r * stride;
        const uint8_t* vr = valid ? valid + r * stride : nullptr;
        O* o = out + r * out_stride;
        for (int64_t c = 0; c < own.cols; ++c) {
            if (!is_valid(row, vr, c)) {
                o[c] = 0;
                continue;
            }
            const ColWeight& a = cw[static_cast<size_t>(c)];
            const int b = bin(row[c]);
            const uint64_t t = uint64_t{top[a.o1 + b]} * a.vx + uint64_t{top[a.o2 + b]} * a.wx;
            const uint64_t u = uint64_t{bot[a.o1 + b]} * a.vx + uint64_t{bot[a.o2 + b]} * a.wx;
            const uint64_t num = t * vy + u * wy, den = a.dx * dy;
            uint64_t v;
            if constexpr (kFast)
                v = static_cast<uint64_t>(static_cast<double>(num) / static_cast<double>(den) + 0.5);
            else
                v = (2 * num + den) / (2 * den);
            o[c] = static_cast<O>(v);
        }
    }
}

template <class T, class O>
void apply(const T* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
           const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, O* out, int64_t out_stride) {
    if (std::is_same_v<O, uint8_t> && p.out_bits != 8)
        throw std::invalid_argument("clahe: an 8-bit output buffer needs out_bits = 8");
    if (own.rows <= 0 || own.cols <= 0) return;
    const BinOf<T> bin(range, p.nbins);
    // dx dy <= 2^26 and num < 2^43: the double quotient rounds half up exactly like the
    // integer formula (its error < 2^-35 < 1 / (2 dx dy), and halves are exact).
    if (max_centre_gap(g.W, g.tx) * max_centre_gap(g.H, g.ty) <= (int64_t{1} << 26))
        apply_rows<true>(img, valid, own, stride, g, p, bin, lut, out, out_stride);
    else
        apply_rows<false>(img, valid, own, stride, g, p, bin, lut, out, out_stride);
}

}  // namespace

ClaheGrid make_clahe_grid(int64_t H, int64_t W, const ClaheParams& p) {
    if (H < 1 || W < 1) throw std::invalid_argument("clahe: empty image");
    if (p.tile_rows < 1 || p.tile_cols < 1 || p.tile_rows > H || p.tile_cols > W)
        throw std::invalid_argument("clahe: tile grid " + std::to_string(p.tile_rows) + "x" +
                                    std::to_string(p.tile_cols) + " does not fit the " + std::to_string(H) + "x" +
                                    std::to_string(W) + " image (at least one pixel per tile)");
    if (p.nbins < 2 || p.nbins > 65536)
        throw std::invalid_argument("clahe: nbins " + std::to_string(p.nbins) + " out of range 2..65536");
    if (p.out_bits != 8 && p.out_bits != 16)
        throw std::invalid_argument("clahe: output bits must be 8 or 16, not " + std::to_string(p.out_bits));
    if (p.fixed_range && !(std::isfinite(p.lo) && std::isfinite(p.hi) && p.hi >= p.lo))
        throw std::invalid_argument("clahe: range must be finite with lo <= hi");
    if (!std::isfinite(p.clip_limit)) throw std::invalid_argument("clahe: clip limit must be finite");
    const int64_t th = (H + p.tile_rows - 1) / p.tile_rows, tw = (W + p.tile_cols - 1) / p.tile_cols;
    if (th * tw >= (int64_t{1} << 32))
        throw std::invalid_argument("clahe: tiles of " + std::to_string(th) + "x" + std::to_string(tw) +
                                    " pixels are too large (counts are 32-bit); use more tiles");
    if (static_cast<int64_t>(p.tile_rows) * p.tile_cols * p.nbins > (int64_t{1} << 28))
        throw std::invalid_argument("clahe: tiles x bins over 2^28 histogram counts; use fewer tiles or bins");
    ClaheGrid g;
    g.H = H;
    g.W = W;
    g.ty = p.tile_rows;
    g.tx = p.tile_cols;
    return g;
}

ClaheRange clahe_local_range(const float* img, const uint8_t* valid, const Window& own, int64_t stride) {
    return local_range(img, valid, own, stride);
}
ClaheRange clahe_local_range(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride) {
    return local_range(img, valid, own, stride);
}

void clahe_histograms(const float* img, const uint8_t* valid, const Window& own, int64_t stride,
                      const ClaheGrid& g, const ClaheParams& p, const ClaheRange& range, uint32_t* hist) {
    histograms(img, valid, own, stride, g, p, range, hist);
}
void clahe_histograms(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride,
                      const ClaheGrid& g, const ClaheParams& p, const ClaheRange& range, uint32_t* hist) {
    histograms(img, valid, own, stride, g, p, range, hist);
}

void clahe_luts(const uint32_t* hist, const ClaheGrid& g, const ClaheParams& p, uint16_t* lut) {
    const int nb = p.nbins;
    const uint64_t out_max = p.out_bits == 8 ? 255 : 65535;
#pragma omp parallel for schedule(dynamic, 1) if (static_cast<int64_t>(g.tiles()) * p.nbins >= kParallelMinPixels)
    for (int t = 0; t < g.tiles(); ++t) {
        const uint32_t* src = hist + static_cast<int64_t>(t) * nb;
        uint16_t* dst = lut + static_cast<int64_t>(t) * nb;
        std::vector<int64_t> h(src, src + nb);
        int64_t n = 0;
        for (int b = 0; b < nb; ++b) n += h[static_cast<size_t>(b)];
        if (n == 0) {
            for (int b = 0; b < nb; ++b)
                dst[b] = static_cast<uint16_t>((2 * static_cast<uint64_t>(b) * out_max + (nb - 1)) /
                                               (2 * static_cast<uint64_t>(nb - 1)));
            continue;
        }
        if (p.clip_limit > 0) {
            const int64_t clip =
                std::max<int64_t>(1, static_cast<int64_t>(p.clip_limit * static_cast<double>(n) / nb));
            int64_t excess = 0;
            for (int64_t& v : h)
                if (v > clip) {
                    excess += v - clip;
                    v = clip;
                }
            const int64_t batch = excess / nb;
            int64_t residual = excess - batch * nb;
            for (int64_t& v : h) v += batch;
            if (residual > 0) {
                const int64_t step = std::max<int64_t>(nb / residual, 1);
                for (int64_t b = 0; b < nb && residual > 0; b += step, --residual) ++h[static_cast<size_t>(b)];
            }
        }
        uint64_t cdf = 0;
        const uint64_t un = static_cast<uint64_t>(n);
        for (int b = 0; b < nb; ++b) {
            cdf += static_cast<uint64_t>(h[static_cast<size_t>(b)]);
            dst[b] = static_cast<uint16_t>((2 * cdf * out_max + un) / (2 * un));
        }
    }
}

void clahe_apply(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint16_t* out,
                 int64_t out_stride) {
    apply(img, valid, own, stride, g, p, range, lut, out, out_stride);
}
void clahe_apply(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint16_t* out,
                 int64_t out_stride) {
    apply(img, valid, own, stride, g, p, range, lut, out, out_stride);
}
void clahe_apply(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint8_t* out,
                 int64_t out_stride) {
    apply(img, valid, own, stride, g, p, range, lut, out, out_stride);
}
void clahe_apply(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint8_t* out,
                 int64_t out_stride) {
    apply(img, valid, own, stride, g, p, range, lut, out, out_stride);
}

}  // namespace tessera
