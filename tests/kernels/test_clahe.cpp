// CLAHE (kernels/clahe.h) against a straightforward reference written here: per-tile
// histogram by scanning each tile, clip, OpenCV-style redistribution, CDF LUT, and per
// pixel the 4 nearest tile centres found by search, weights as exact fractions, rounded
// half up with 128-bit integers. Compared exactly (every output value), on small random
// images, a gradient, images with holes, grids that do not divide the image, 8 and 16
// bits, float and uint16 input; plus window (rank) invariance and the two division paths.
#include <gtest/gtest.h>
#include <CLI/CLI.hpp>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "io/raster_reader.h"
#include "kernels/clahe.h"
#include "partition/clahe.h"
#include "partition/comm.h"
#include "app/clahe_command.h"
#include "support/cli.h"

namespace tessera {
namespace {

__extension__ typedef unsigned __int128 u128;

struct RefResult {
    double lo = 0, hi = 0;
    std::vector<std::vector<uint16_t>> luts;  // per tile
    std::vector<uint16_t> out;
};

struct RefParams {
    int ty = 8, tx = 8;
    double clip = 2.0;
    int nbins = 256;
    int bits = 8;
};

bool ok(float v, uint8_t m) { return m != 0 && std::isfinite(v); }

int ref_bin(double v, double lo, double hi, int nbins) {
    if (!(hi > lo)) return 0;
    const double t = (v - lo) * (static_cast<double>(nbins) / (hi - lo));
    if (t <= 0) return 0;
    const double f = std::floor(t);
    return f >= nbins - 1 ? nbins - 1 : static_cast<int>(f);
}

std::vector<uint16_t> ref_lut(std::vector<int64_t> h, double clip_limit, int bits) {
    const int nb = static_cast<int>(h.size());
    const int64_t out_max = bits == 8 ? 255 : 65535;
    int64_t n = 0;
    for (int64_t v : h) n += v;
    std::vector<uint16_t> lut(static_cast<size_t>(nb));
    if (n == 0) {
        for (int b = 0; b < nb; ++b)  // ramp, rounded half up
            lut[static_cast<size_t>(b)] = static_cast<uint16_t>(
                (static_cast<u128>(2 * b) * out_max + (nb - 1)) / static_cast<u128>(2 * (nb - 1)));
        return lut;
    }
    if (clip_limit > 0) {
        int64_t clip = static_cast<int64_t>(clip_limit * static_cast<double>(n) / nb);
        if (clip < 1) clip = 1;
        int64_t excess = 0;
        for (int64_t& v : h) {
            if (v > clip) {
                excess += v - clip;
                v = clip;
            }
        }
        for (int64_t& v : h) v += excess / nb;
        int64_t rest = excess % nb;
        if (rest > 0) {
            int64_t step = nb / rest;
            if (step < 1) step = 1;
            for (int64_t b = 0; b < nb && rest > 0; b += step) {
                ++h[static_cast<size_t>(b)];
                --rest;
            }
        }
    }
    int64_t cdf = 0;
    for (int b = 0; b < nb; ++b) {
        cdf += h[static_cast<size_t>(b)];
        // cdf / n * out_max, rounded half up
        lut[static_cast<size_t>(b)] = static_cast<uint16_t>((static_cast<u128>(2 * cdf) * out_max + n) / (2 * n));
    }
    return lut;
}

// Tile centres (doubled, integers) of an axis of n pixels cut into t tiles.
std::vector<int64_t> centres2(int64_t n, int t) {
    std::vector<int64_t> c;
    for (int i = 0; i < t; ++i) c.push_back(i * n / t + (i + 1) * n / t - 1);
    return c;
}

// The two neighbouring centres of position k and the weight of the second as a fraction.
void neighbours(const std::vector<int64_t>& c, int64_t k, int& a, int& b, int64_t& w, int64_t& d) {
    const int64_t X = 2 * k;
    a = b = 0;
    w = 0;
    d = 1;
    if (X <= c.front()) return;
    if (X >= c.back()) {
        a = b = static_cast<int>(c.size()) - 1;
        return;
    }
    for (size_t i = 0; i + 1 < c.size(); ++i)
        if (c[i] <= X && X < c[i + 1]) {
            a = static_cast<int>(i);
            b = a + 1;
            w = X - c[i];
            d = c[i + 1] - c[i];
            return;
        }
    ADD_FAILURE() << "no centre pair";
}

RefResult reference(const std::vector<float>& img, const std::vector<uint8_t>& valid, int64_t H, int64_t W,
                    const RefParams& p, bool fixed = false, double flo = 0, double fhi = 0) {
    RefResult res;
    res.lo = std::numeric_limits<double>::infinity();
    res.hi = -res.lo;
    for (size_t i = 0; i < img.size(); ++i)
        if (ok(img[i], valid[i])) {
            res.lo = std::min(res.lo, static_cast<double>(img[i]));
            res.hi = std::max(res.hi, static_cast<double>(img[i]));
        }
    if (fixed) {
        res.lo = flo;
        res.hi = fhi;
    }
    for (int i = 0; i < p.ty; ++i)
        for (int j = 0; j < p.tx; ++j) {
            std::vector<int64_t> h(static_cast<size_t>(p.nbins), 0);
            for (int64_t r = i * H / p.ty; r < (i + 1) * H / p.ty; ++r)
                for (int64_t c = j * W / p.tx; c < (j + 1) * W / p.tx; ++c) {
                    const size_t k = static_cast<size_t>(r * W + c);
                    if (ok(img[k], valid[k])) ++h[static_cast<size_t>(ref_bin(img[k], res.lo, res.hi, p.nbins))];
                }
            res.luts.push_back(ref_lut(h, p.clip, p.bits));
        }
    const std::vector<int64_t> cr = centres2(H, p.ty), cc = centres2(W, p.tx);
    res.out.assign(img.size(), 0);
    for (int64_t r = 0; r < H; ++r) {
        int i1, i2;
        int64_t wy, dy;
        neighbours(cr, r, i1, i2, wy, dy);
        for (int64_t c = 0; c < W; ++c) {
            const size_t k = static_cast<size_t>(r * W + c);
            if (!ok(img[k], valid[k])) continue;
            int j1, j2;
            int64_t wx, dx;
            neighbours(cc, c, j1, j2, wx, dx);
            const int b = ref_bin(img[k], res.lo, res.hi, p.nbins);
            auto L = [&](int i, int j) { return static_cast<u128>(res.luts[static_cast<size_t>(i * p.tx + j)][static_cast<size_t>(b)]); };
            const u128 num = L(i1, j1) * static_cast<u128>((dx - wx) * (dy - wy)) +
                             L(i1, j2) * static_cast<u128>(wx * (dy - wy)) +
                             L(i2, j1) * static_cast<u128>((dx - wx) * wy) + L(i2, j2) * static_cast<u128>(wx * wy);
            const u128 den = static_cast<u128>(dx * dy);
            res.out[k] = static_cast<uint16_t>((2 * num + den) / (2 * den));
        }
    }
    return res;
}

ClaheParams to_params(const RefParams& r) {
    ClaheParams p;
    p.tile_rows = r.ty;
    p.tile_cols = r.tx;
    p.clip_limit = r.clip;
    p.nbins = r.nbins;
    p.out_bits = r.bits;
    return p;
}

std::vector<uint16_t> run16(const std::vector<float>& img, const std::vector<uint8_t>& valid, int64_t H, int64_t W,
                            const ClaheParams& p) {
    Comm self(MPI_COMM_SELF);
    std::vector<uint16_t> out(img.size(), 0xBEEF);
    clahe(img.data(), valid.data(), Window{0, 0, H, W}, W, H, W, p, self, out.data(), W);
    return out;
}

struct Img {
    int64_t H, W;
    std::vector<float> v;
    std::vector<uint8_t> m;
};

Img random_image(int64_t H, int64_t W, uint64_t seed, double holes) {
    std::mt19937_64 rng(seed);
    std::gamma_distribution<double> amp(1.5, 2.0);  // speckle-like amplitude
    std::uniform_real_distribution<double> u(0, 1);
    Img im{H, W, std::vector<float>(static_cast<size_t>(H * W)), std::vector<uint8_t>(static_cast<size_t>(H * W), 1)};
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const size_t k = static_cast<size_t>(r * W + c);
            im.v[k] = static_cast<float>(amp(rng) * (1.0 + 0.5 * std::sin(0.1 * r + 0.05 * c)));
            const double x = u(rng);
            if (x < holes / 2) im.m[k] = 0;
            else if (x < holes) im.v[k] = std::nanf("");
        }
    return im;
}

void expect_same(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size());
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i] && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << what << ": first difference at " << first << ": " << a[first] << " vs " << b[first];
}

TEST(Clahe, MatchesReferenceOnRandomImages) {
    const RefParams cases[] = {
        {8, 8, 2.0, 256, 8},   {3, 4, 2.0, 256, 8},   {5, 7, 0.0, 256, 8},     {1, 1, 2.0, 256, 8},
        {4, 3, 40.0, 256, 8},  {6, 5, 0.5, 64, 8},    {8, 8, 2.0, 4096, 16},   {3, 5, 3.0, 65536, 16},
        {7, 2, 0.0, 4096, 16}, {2, 9, 1.0, 1000, 16}, {37, 53, 2.0, 256, 8},   {10, 10, 2.0, 2, 8},
    };
    int seed = 0;
    for (const auto& [H, W] : {std::pair<int64_t, int64_t>{37, 53}, {64, 64}, {101, 29}}) {
        const Img im = random_image(H, W, static_cast<uint64_t>(++seed), 0.05);
        for (const RefParams& rp : cases) {
            if (rp.ty > H || rp.tx > W) continue;
            const RefResult ref = reference(im.v, im.m, H, W, rp);
            const std::vector<uint16_t> got = run16(im.v, im.m, H, W, to_params(rp));
            expect_same(got, ref.out,
                        std::to_string(H) + "x" + std::to_string(W) + " tiles " + std::to_string(rp.ty) + "x" +
                            std::to_string(rp.tx) + " clip " + std::to_string(rp.clip) + " bins " +
                            std::to_string(rp.nbins) + " bits " + std::to_string(rp.bits));
        }
    }
}

TEST(Clahe, MatchesReferenceOnGradientAndLuts) {
    const int64_t H = 64, W = 96;
    Img im{H, W, std::vector<float>(static_cast<size_t>(H * W)), std::vector<uint8_t>(static_cast<size_t>(H * W), 1)};
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) im.v[static_cast<size_t>(r * W + c)] = static_cast<float>(r + 2 * c);
    for (const RefParams& rp : {RefParams{8, 8, 2.0, 256, 8}, RefParams{5, 7, 2.0, 4096, 16}, RefParams{4, 4, 0.0, 256, 8}}) {
        const RefResult ref = reference(im.v, im.m, H, W, rp);
        // The LUTs alone.
        const ClaheParams p = to_params(rp);
        const ClaheGrid g = make_clahe_grid(H, W, p);
        const ClaheRange range{ref.lo, ref.hi, H * W};
        std::vector<uint32_t> hist(static_cast<size_t>(g.tiles() * p.nbins), 0);
        clahe_histograms(im.v.data(), im.m.data(), Window{0, 0, H, W}, W, g, p, range, hist.data());
        std::vector<uint16_t> lut(hist.size());
        clahe_luts(hist.data(), g, p, lut.data());
        for (int t = 0; t < g.tiles(); ++t)
            for (int b = 0; b < p.nbins; ++b)
                ASSERT_EQ(lut[static_cast<size_t>(t * p.nbins + b)], ref.luts[static_cast<size_t>(t)][static_cast<size_t>(b)])
                    << "tile " << t << " bin " << b;
        expect_same(run16(im.v, im.m, H, W, p), ref.out, "gradient");
    }
    // A monotone gradient stays monotone along a row inside the first tile row (equalised).
    const std::vector<uint16_t> out = run16(im.v, im.m, H, W, to_params({1, 1, 0.0, 256, 8}));
    for (int64_t c = 1; c < W; ++c) EXPECT_LE(out[static_cast<size_t>(c - 1)], out[static_cast<size_t>(c)]);
    EXPECT_EQ(out[static_cast<size_t>(H * W - 1)], 255);
}

TEST(Clahe, EmptyTilesAndInvalidPixels) {
    const int64_t H = 40, W = 40;
    Img im = random_image(H, W, 77, 0.0);
    for (int64_t r = 0; r < 20; ++r)
        for (int64_t c = 0; c < 20; ++c) im.v[static_cast<size_t>(r * W + c)] = std::nanf("");  // tile (0, 0) empty
    const RefParams rp{2, 2, 2.0, 256, 8};
    const RefResult ref = reference(im.v, im.m, H, W, rp);
    const std::vector<uint16_t> got = run16(im.v, im.m, H, W, to_params(rp));
    expect_same(got, ref.out, "empty tile");
    EXPECT_EQ(got[0], 0);                  // invalid -> 0
    EXPECT_EQ(ref.luts[0][255], 255);      // ramp
    EXPECT_EQ(ref.luts[0][128], 128);
}

TEST(Clahe, EightBitBufferUint16InputAndFixedRange) {
    const int64_t H = 45, W = 61;
    const Img im = random_image(H, W, 5, 0.0);
    std::vector<uint16_t> u16(im.v.size());
    std::vector<float> asf(im.v.size());
    for (size_t i = 0; i < u16.size(); ++i) {
        u16[i] = static_cast<uint16_t>(std::min(65535.0f, im.v[i] * 3000.0f));
        asf[i] = u16[i];
    }
    Comm self(MPI_COMM_SELF);
    for (const RefParams& rp : {RefParams{4, 5, 2.0, 256, 8}, RefParams{4, 5, 2.0, 65536, 16}}) {
        ClaheParams p = to_params(rp);
        const RefResult ref = reference(asf, im.m, H, W, rp);
        std::vector<uint16_t> a(u16.size());
        clahe(u16.data(), nullptr, Window{0, 0, H, W}, W, H, W, p, self, a.data(), W);
        expect_same(a, ref.out, "uint16 input");
        if (rp.bits == 8) {
            std::vector<uint8_t> b(u16.size());
            clahe(u16.data(), nullptr, Window{0, 0, H, W}, W, H, W, p, self, b.data(), W);
            EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin()));
        } else {
            std::vector<uint8_t> b(u16.size());
            EXPECT_THROW(clahe(u16.data(), nullptr, Window{0, 0, H, W}, W, H, W, p, self, b.data(), W),
                         std::invalid_argument);
        }
        // OpenCV's 16-bit convention: fixed range [0, 65536) with 65536 bins, bin = value.
        p.fixed_range = true;
        p.lo = 0;
        p.hi = 65536;
        p.nbins = 65536;
        RefParams fr = rp;
        fr.nbins = 65536;
        const RefResult ref2 = reference(asf, im.m, H, W, fr, true, 0, 65536);
        std::vector<uint16_t> c(u16.size());
        const ClaheRange used = clahe(u16.data(), nullptr, Window{0, 0, H, W}, W, H, W, p, self, c.data(), W);
        EXPECT_EQ(used.lo, 0.0);
        EXPECT_EQ(used.hi, 65536.0);
        expect_same(c, ref2.out, "fixed range");
    }
}

TEST(Clahe, WindowsGiveTheSameResult) {
    // Simulated ranks: windows of an irregular split each add to the shared histograms and
    // interpolate their own pixels; the result equals the single-window one exactly.
    const int64_t H = 301, W = 257;  // > 2^16 pixels: the kernels use their threads
    const Img im = random_image(H, W, 11, 0.1);
    ClaheParams p;
    p.tile_rows = 6;
    p.tile_cols = 5;
    p.nbins = 4096;
    p.out_bits = 16;
    const std::vector<uint16_t> whole = run16(im.v, im.m, H, W, p);
    const ClaheGrid g = make_clahe_grid(H, W, p);
    const std::vector<Window> windows = {{0, 0, 13, W},          {13, 0, 140, 20},  {13, 20, 140, W - 20},
                                         {153, 0, H - 153, 1}, {153, 1, H - 153, W - 1}};
    ClaheRange range{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0};
    for (const Window& w : windows) {
        const size_t o = static_cast<size_t>(w.row0 * W + w.col0);
        const ClaheRange r = clahe_local_range(im.v.data() + o, im.m.data() + o, w, W);
        range.lo = std::min(range.lo, r.lo);
        range.hi = std::max(range.hi, r.hi);
        range.count += r.count;
    }
    std::vector<uint32_t> hist(static_cast<size_t>(g.tiles() * p.nbins), 0);
    for (const Window& w : windows) {
        const size_t o = static_cast<size_t>(w.row0 * W + w.col0);
        clahe_histograms(im.v.data() + o, im.m.data() + o, w, W, g, p, range, hist.data());
    }
    std::vector<uint16_t> lut(hist.size());
    clahe_luts(hist.data(), g, p, lut.data());
    std::vector<uint16_t> pieces(im.v.size(), 0xBEEF);
    for (const Window& w : windows) {
        const size_t o = static_cast<size_t>(w.row0 * W + w.col0);
        clahe_apply(im.v.data() + o, im.m.data() + o, w, W, g, p, range, lut.data(), pieces.data() + o, W);
    }
    expect_same(pieces, whole, "windows");
    // Thread count.
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const std::vector<uint16_t> one = run16(im.v, im.m, H, W, p);
    omp_set_num_threads(threads);
    expect_same(one, whole, "one thread");
}

TEST(Clahe, IntegerAndDoubleDivisionPathsAgree) {
    // A large virtual image (only a window is computed) whose tile-centre gaps make
    // dx * dy > 2^26: the apply step takes the integer-division path; a smaller one the
    // double path. Both must equal the exact reference for the window's pixels.
    for (const auto& [H, W] : {std::pair<int64_t, int64_t>{20000, 12000}, {2000, 1200}}) {
        ClaheParams p;
        p.tile_rows = 2;
        p.tile_cols = 3;
        p.nbins = 4096;
        p.out_bits = 16;
        const ClaheGrid g = make_clahe_grid(H, W, p);
        std::mt19937_64 rng(3);
        std::vector<uint32_t> hist(static_cast<size_t>(g.tiles() * p.nbins));
        for (uint32_t& h : hist) h = static_cast<uint32_t>(rng() % 1000);
        std::vector<uint16_t> lut(hist.size());
        clahe_luts(hist.data(), g, p, lut.data());
        const Window w{H / 2 - 40, W / 3 - 50, 80, 100};  // straddles centres and tile borders
        std::vector<float> v(static_cast<size_t>(w.size()));
        for (float& x : v) x = static_cast<float>(rng() % 100000) / 100000.0f;
        const ClaheRange range{0.0, 1.0, w.size()};
        std::vector<uint16_t> out(v.size());
        clahe_apply(v.data(), nullptr, w, w.cols, g, p, range, lut.data(), out.data(), w.cols);
        const std::vector<int64_t> cr = centres2(H, p.tile_rows), cc = centres2(W, p.tile_cols);
        for (int64_t r = 0; r < w.rows; ++r)
            for (int64_t c = 0; c < w.cols; ++c) {
                int i1, i2, j1, j2;
                int64_t wy, dy, wx, dx;
                neighbours(cr, w.row0 + r, i1, i2, wy, dy);
                neighbours(cc, w.col0 + c, j1, j2, wx, dx);
                const int b = ref_bin(v[static_cast<size_t>(r * w.cols + c)], 0.0, 1.0, p.nbins);
                auto L = [&](int i, int j) { return static_cast<u128>(lut[static_cast<size_t>((i * p.tile_cols + j) * p.nbins + b)]); };
                const u128 num = L(i1, j1) * static_cast<u128>((dx - wx) * (dy - wy)) +
                                 L(i1, j2) * static_cast<u128>(wx * (dy - wy)) +
                                 L(i2, j1) * static_cast<u128>((dx - wx) * wy) + L(i2, j2) * static_cast<u128>(wx * wy);
                const u128 den = static_cast<u128>(dx * dy);
                ASSERT_EQ(out[static_cast<size_t>(r * w.cols + c)], static_cast<uint16_t>((2 * num + den) / (2 * den)))
                    << H << "x" << W << " at " << r << "," << c;
            }
    }
}

TEST(Clahe, BadParameters) {
    ClaheParams p;
    EXPECT_THROW(make_clahe_grid(5, 100, p), std::invalid_argument);  // 8 tile rows > 5 rows
    p.tile_rows = 2;
    p.nbins = 1;
    EXPECT_THROW(make_clahe_grid(50, 100, p), std::invalid_argument);
    p.nbins = 256;
    p.out_bits = 12;
    EXPECT_THROW(make_clahe_grid(50, 100, p), std::invalid_argument);
    p.out_bits = 8;
    EXPECT_NO_THROW(make_clahe_grid(50, 100, p));
    // No valid pixel.
    std::vector<float> v(50 * 100, std::nanf(""));
    std::vector<uint16_t> out(v.size());
    Comm self(MPI_COMM_SELF);
    EXPECT_THROW(clahe(v.data(), nullptr, Window{0, 0, 50, 100}, 100, 50, 100, p, self, out.data(), 100),
                 std::runtime_error);
}

// --- the command (one rank) ---------------------------------------------------------

std::vector<uint16_t> read_u16(const std::string& path, int64_t H, int64_t W) {
    RasterReader r(path, 1);
    EXPECT_EQ(r.info().rows, H);
    EXPECT_EQ(r.info().cols, W);
    std::vector<float> f(static_cast<size_t>(H * W));
    r.read_float(Window{0, 0, H, W}, f.data(), W);
    std::vector<uint16_t> out(f.size());
    for (size_t i = 0; i < f.size(); ++i) out[i] = static_cast<uint16_t>(f[i]);
    return out;
}

TEST(ClaheCommand, PngAndTiffEqualTheKernel) {
    testing::TempDir dir("clahecmd");
    const int64_t H = 90, W = 130;
    Img im = random_image(H, W, 21, 0.0);
    im.v[5] = std::nanf("");  // nodata in the file
    im.m[5] = 0;
    GeoRef geo;
    geo.has_geotransform = true;
    geo.geotransform = {10, 1, 0, 20, 0, -1};
    write_geotiff_f32(dir / "amp.tif", H, W, im.v.data(), geo, std::nan(""));
    for (int bits : {8, 16})
        for (const char* ext : {".png", ".tif"}) {
            ClaheOptions o;
            o.input = dir / "amp.tif";
            o.output = dir / ("out" + std::to_string(bits) + ext);
            o.params.tile_rows = 3;
            o.params.tile_cols = 4;
            o.params.out_bits = bits;
            o.params.nbins = 0;  // default for the bits
            const ClaheReport rep = run_clahe(o, MPI_COMM_WORLD);
            EXPECT_EQ(rep.params.nbins, bits == 8 ? 256 : 4096);
            EXPECT_EQ(rep.valid, H * W - 1);
            ClaheParams p = o.params;
            p.nbins = rep.params.nbins;
            expect_same(read_u16(o.output, H, W), run16(im.v, im.m, H, W, p), o.output);
            if (std::string(ext) == ".tif") {
                RasterReader r(o.output, 1);
                EXPECT_TRUE(r.info().has_geotransform);
                EXPECT_EQ(r.info().data_type, bits == 8 ? "Byte" : "UInt16");
            }
        }
    // Through the CLI subcommand: tiles, bits, bins, range.
    CLI::App app;
    std::function<void()> run;
    add_clahe_command(app, run);
    const std::string in = dir / "amp.tif", out = dir / "cli.png";
    const char* argv[] = {"tessera", "clahe", in.c_str(), out.c_str(), "--tiles", "5x2", "--bits", "16",
                          "--bins", "1000", "--range", "0", "20", "--clip-limit", "3", "-q"};
    app.parse(16, argv);
    ASSERT_TRUE(run);
    run();
    ClaheParams p;
    p.tile_rows = 5;
    p.tile_cols = 2;
    p.out_bits = 16;
    p.nbins = 1000;
    p.clip_limit = 3;
    p.fixed_range = true;
    p.lo = 0;
    p.hi = 20;
    expect_same(read_u16(out, H, W), run16(im.v, im.m, H, W, p), "cli");
    // Errors: one line naming the file.
    ClaheOptions bad;
    bad.input = dir / "amp.tif";
    bad.output = dir / "x.jpg";
    try {
        run_clahe(bad, MPI_COMM_WORLD);
        ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("must end in .png or .tif"), std::string::npos) << e.what();
    }
    bad.output = dir / "x.png";
    bad.params.tile_rows = 1000;
    try {
        run_clahe(bad, MPI_COMM_WORLD);
        ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "x.png"));
}

}  // namespace
}  // namespace tessera
