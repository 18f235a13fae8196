// Background surface fit and removal (kernels/background.h, app/background_command.h).
//
// Tolerances (measured on this machine, then stated with a margin):
//  - exact degree-n polynomial (n = 0..6, coefficients in [-3, 3]), no noise, 257 x 311
//    pixels: every coefficient within 1e-6 of the truth (measured max 4.4e-8, degree 0;
//    it is the float32 rounding of the input, not the fit), residual RMS < 1e-5
//    (measured <= 1.7e-8);
//  - degree 3 + Gaussian noise (std 0.1), 512 x 384 pixels: coefficients within 5e-3
//    (measured max 2.0e-3: the standard errors are ~0.1 / sqrt(N) times the inverse
//    Gram factor, largest for the cubic terms), residual RMS within 1e-3 of 0.1
//    (measured 0.100237);
//  - partition / thread count: bit-identical (moments are exact integers).
#include <gtest/gtest.h>
#include <CLI/CLI.hpp>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "io/raster_reader.h"
#include "kernels/background.h"
#include "partition/comm.h"
#include "partition/surface_fit.h"
#include "app/background_command.h"
#include "support/cli.h"

namespace tessera {
namespace {

struct Image {
    int64_t H = 0, W = 0;
    std::vector<float> z;
    std::vector<uint8_t> valid;
};

// sum c[t] x^i y^j in long double (the test's own evaluation).
double poly(const std::vector<double>& c, double x, double y) {
    long double xp[kMaxSurfaceDegree + 1], yp[kMaxSurfaceDegree + 1];
    xp[0] = yp[0] = 1;
    for (int k = 1; k <= kMaxSurfaceDegree; ++k) {
        xp[k] = xp[k - 1] * static_cast<long double>(x);
        yp[k] = yp[k - 1] * static_cast<long double>(y);
    }
    long double s = 0;
    for (size_t t = 0; t < c.size(); ++t) {
        const auto [i, j] = surface_term(static_cast<int>(t));
        s += static_cast<long double>(c[t]) * xp[i] * yp[j];
    }
    return static_cast<double>(s);
}

Image make_image(int64_t H, int64_t W, const std::vector<double>& c, double noise, uint64_t seed) {
    Image im{H, W, std::vector<float>(static_cast<size_t>(H * W)), std::vector<uint8_t>(static_cast<size_t>(H * W), 1)};
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> n(0.0, noise);
    for (int64_t r = 0; r < H; ++r)
        for (int64_t k = 0; k < W; ++k)
            im.z[static_cast<size_t>(r * W + k)] =
                static_cast<float>(poly(c, surface_coord(k, W), surface_coord(r, H)) + (noise > 0 ? n(rng) : 0.0));
    return im;
}

std::vector<double> coeffs_for(int degree, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-3.0, 3.0);
    std::vector<double> c(static_cast<size_t>(surface_terms(degree)));
    for (double& v : c) v = u(rng);
    return c;
}

SurfaceFit fit_self(const Image& im, int degree, const uint8_t* mask = nullptr) {
    Comm self(MPI_COMM_SELF);
    return fit_surface(im.z.data(), im.valid.data(), mask, Window{0, 0, im.H, im.W}, im.W, im.H, im.W, degree, self);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(Background, TermOrderAndCoordinates) {
    EXPECT_EQ(surface_terms(0), 1);
    EXPECT_EQ(surface_terms(3), 10);
    EXPECT_EQ(surface_terms(6), 28);
    const std::pair<int, int> expect[] = {{0, 0}, {1, 0}, {0, 1}, {2, 0}, {1, 1}, {0, 2}, {3, 0}, {2, 1}};
    for (int t = 0; t < 8; ++t) {
        EXPECT_EQ(surface_term(t), expect[t]) << t;
        EXPECT_EQ(moment_index(expect[t].first, expect[t].second, 3), t);
    }
    EXPECT_EQ(surface_coord(0, 5), -1.0);
    EXPECT_EQ(surface_coord(4, 5), 1.0);
    EXPECT_EQ(surface_coord(2, 5), 0.0);
    EXPECT_EQ(surface_coord(0, 1), 0.0);
}

TEST(Background, ExactPolynomialOfEveryDegree) {
    for (int n = 0; n <= kMaxSurfaceDegree; ++n) {
        const std::vector<double> c = coeffs_for(n, 100 + static_cast<uint64_t>(n));
        const Image im = make_image(257, 311, c, 0.0, 1);
        const SurfaceFit f = fit_self(im, n);
        ASSERT_EQ(f.coeffs.size(), c.size());
        EXPECT_EQ(f.count, im.H * im.W);
        double worst = 0;
        for (size_t t = 0; t < c.size(); ++t) worst = std::max(worst, std::fabs(f.coeffs[t] - c[t]));
        EXPECT_LT(worst, 1e-6) << "degree " << n;
        EXPECT_GT(f.min_pivot, kSurfacePivotMin) << "degree " << n;
        // Subtracting it leaves float rounding only.
        Image out = im;
        const ResidualSums rs = subtract_surface(out.z.data(), out.valid.data(), nullptr, Window{0, 0, im.H, im.W},
                                                 im.W, im.H, im.W, f);
        EXPECT_EQ(rs.count, im.H * im.W);
        EXPECT_LT(std::sqrt(rs.sum_sq / static_cast<double>(rs.count)), 1e-5) << "degree " << n;
    }
}

TEST(Background, Degree3WithNoiseRecoveredAndRemoved) {
    const std::vector<double> c = {0.7, 16.2, -0.8, 4.1, -0.45, -17.0, -1.1, -2.6, -18.9, -8.8};
    const Image im = make_image(512, 384, c, 0.1, 42);
    const SurfaceFit f = fit_self(im, 3);
    double worst = 0;
    for (size_t t = 0; t < c.size(); ++t) worst = std::max(worst, std::fabs(f.coeffs[t] - c[t]));
    EXPECT_LT(worst, 5e-3);
    Image out = im;
    const ResidualSums rs =
        subtract_surface(out.z.data(), out.valid.data(), nullptr, Window{0, 0, im.H, im.W}, im.W, im.H, im.W, f);
    const double rms = std::sqrt(rs.sum_sq / static_cast<double>(rs.count));
    EXPECT_NEAR(rms, 0.1, 1e-3);
    // What is left is the noise: no trend (a refit finds ~0 everywhere).
    const SurfaceFit again = fit_self(out, 3);
    for (double v : again.coeffs) EXPECT_LT(std::fabs(v), 5e-3);
    // evaluate_surface is what subtract_surface subtracted.
    for (int64_t r : {0, 17, 511})
        for (int64_t k : {0, 100, 383}) {
            const size_t i = static_cast<size_t>(r * im.W + k);
            EXPECT_EQ(out.z[i], im.z[i] - static_cast<float>(evaluate_surface(f, r, k, im.H, im.W)));
        }
}

TEST(Background, MaskedAndInvalidPixelsAreIgnored) {
    const std::vector<double> c = coeffs_for(2, 7);
    Image im = make_image(200, 150, c, 0.05, 3);
    // Outliers in a block, excluded by the background mask; NaN and invalid pixels elsewhere.
    std::vector<uint8_t> mask(im.z.size(), 1);
    for (int64_t r = 50; r < 120; ++r)
        for (int64_t k = 30; k < 90; ++k) {
            im.z[static_cast<size_t>(r * im.W + k)] = 1000.0f;
            mask[static_cast<size_t>(r * im.W + k)] = 0;
        }
    im.z[5] = std::nanf("");
    im.valid[7] = 0;
    im.z[7] = -5000.0f;
    const SurfaceFit masked = fit_self(im, 2, mask.data());
    // The same pixels made invalid instead: the same moments, so the same bits.
    Image inv = im;
    for (size_t i = 0; i < mask.size(); ++i)
        if (!mask[i]) inv.valid[i] = 0;
    const SurfaceFit invalid = fit_self(inv, 2);
    ASSERT_EQ(masked.count, invalid.count);
    EXPECT_EQ(masked.count, 200 * 150 - 70 * 60 - 2);
    for (size_t t = 0; t < c.size(); ++t) {
        EXPECT_TRUE(same_bits(masked.coeffs[t], invalid.coeffs[t])) << t;
        EXPECT_NEAR(masked.coeffs[t], c[t], 5e-3) << t;
    }
    // Subtraction: masked-out but valid pixels are corrected too, invalid ones become NaN,
    // and the residual sums cover the fitted pixels only.
    Image out = im;
    const ResidualSums rs = subtract_surface(out.z.data(), out.valid.data(), mask.data(), Window{0, 0, im.H, im.W},
                                             im.W, im.H, im.W, masked);
    EXPECT_EQ(rs.count, masked.count);
    EXPECT_TRUE(std::isnan(out.z[5]));
    EXPECT_TRUE(std::isnan(out.z[7]));
    const size_t in_block = static_cast<size_t>(60 * im.W + 40);
    EXPECT_FLOAT_EQ(out.z[in_block], 1000.0f - static_cast<float>(evaluate_surface(masked, 60, 40, im.H, im.W)));
}

TEST(Background, TooFewOrDegeneratePixelsFailClearly) {
    const Image im = make_image(40, 50, coeffs_for(2, 1), 0.0, 1);
    // 5 valid pixels for the 6 terms of degree 2.
    Image few = im;
    std::fill(few.valid.begin(), few.valid.end(), 0);
    for (int k = 0; k < 5; ++k) few.valid[static_cast<size_t>(k * 37)] = 1;
    try {
        fit_self(few, 2);
        FAIL() << "no error";
    } catch (const SurfaceFitError& e) {
        EXPECT_NE(std::string(e.what()).find("too few valid pixels"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("5 used"), std::string::npos) << e.what();
    }
    // Many pixels, all in one row: the y terms are not determined.
    Image line = im;
    std::fill(line.valid.begin(), line.valid.end(), 0);
    for (int64_t k = 0; k < im.W; ++k) line.valid[static_cast<size_t>(10 * im.W + k)] = 1;
    try {
        fit_self(line, 1);
        FAIL() << "no error";
    } catch (const SurfaceFitError& e) {
        EXPECT_NE(std::string(e.what()).find("not positive definite"), std::string::npos) << e.what();
    }
    // ... but they determine a degree-0 surface (the mean).
    const SurfaceFit mean = fit_self(line, 0);
    EXPECT_EQ(mean.count, im.W);
    // No valid pixel at all.
    Image none = im;
    std::fill(none.valid.begin(), none.valid.end(), 0);
    EXPECT_THROW(fit_self(none, 0), SurfaceFitError);
    Comm self(MPI_COMM_SELF);
    EXPECT_THROW(fit_surface(im.z.data(), nullptr, nullptr, Window{0, 0, im.H, im.W}, im.W, im.H, im.W, 7, self),
                 std::invalid_argument);
}

// Windows of an irregular split of H x W (rows and columns cut at odd places).
std::vector<Window> split(int64_t H, int64_t W, std::vector<int64_t> rcuts, std::vector<int64_t> ccuts) {
    rcuts.insert(rcuts.begin(), 0);
    rcuts.push_back(H);
    ccuts.insert(ccuts.begin(), 0);
    ccuts.push_back(W);
    std::vector<Window> out;
    for (size_t i = 0; i + 1 < rcuts.size(); ++i)
        for (size_t j = 0; j + 1 < ccuts.size(); ++j)
            out.push_back(Window{rcuts[i], ccuts[j], rcuts[i + 1] - rcuts[i], ccuts[j + 1] - ccuts[j]});
    return out;
}

TEST(Background, PartitionAndThreadInvariance) {
    const std::vector<double> c = coeffs_for(4, 9);
    Image im = make_image(301, 223, c, 0.3, 5);
    for (size_t i = 0; i < im.valid.size(); i += 13) im.valid[i] = 0;
    const int degree = 4;
    const Window all{0, 0, im.H, im.W};
    const int zexp = surface_zexp(surface_max_abs(im.z.data(), im.valid.data(), nullptr, all, im.W));
    const SurfaceMoments whole =
        surface_moments(im.z.data(), im.valid.data(), nullptr, all, im.W, im.H, im.W, degree, zexp);
    const SurfaceFit ref = solve_surface(whole);

    // Simulated ranks: the windows' partial moments, added in a scrambled order.
    for (const auto& windows : {split(im.H, im.W, {1, 150, 151, 299}, {7, 100}),
                                split(im.H, im.W, {}, {1, 2, 3, 222}), split(im.H, im.W, {37, 38, 250}, {})}) {
        std::vector<SurfaceMoments> parts;
        double mx = 0;
        for (const Window& w : windows) {
            const size_t o = static_cast<size_t>(w.row0 * im.W + w.col0);
            mx = std::max(mx, surface_max_abs(im.z.data() + o, im.valid.data() + o, nullptr, w, im.W));
            parts.push_back(
                surface_moments(im.z.data() + o, im.valid.data() + o, nullptr, w, im.W, im.H, im.W, degree, zexp));
        }
        EXPECT_EQ(surface_zexp(mx), zexp);
        std::reverse(parts.begin(), parts.end());
        std::swap(parts.front(), parts[parts.size() / 2]);
        SurfaceMoments sum = parts[0];
        for (size_t k = 1; k < parts.size(); ++k) add_moments(sum, parts[k]);
        EXPECT_EQ(sum.count, whole.count);
        EXPECT_EQ(sum.geo, whole.geo);
        EXPECT_EQ(sum.zm, whole.zm);
        const SurfaceFit f = solve_surface(sum);
        for (size_t t = 0; t < f.coeffs.size(); ++t) EXPECT_TRUE(same_bits(f.coeffs[t], ref.coeffs[t])) << t;

        // Subtraction per window == subtraction of the whole image, bit for bit.
        Image a = im, b = im;
        subtract_surface(a.z.data(), a.valid.data(), nullptr, all, im.W, im.H, im.W, ref);
        for (const Window& w : windows) {
            const size_t o = static_cast<size_t>(w.row0 * im.W + w.col0);
            subtract_surface(b.z.data() + o, b.valid.data() + o, nullptr, w, im.W, im.H, im.W, ref);
        }
        EXPECT_EQ(0, std::memcmp(a.z.data(), b.z.data(), a.z.size() * sizeof(float)));
    }

    // Thread count.
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const SurfaceMoments one =
        surface_moments(im.z.data(), im.valid.data(), nullptr, all, im.W, im.H, im.W, degree, zexp);
    omp_set_num_threads(3);
    const SurfaceMoments three =
        surface_moments(im.z.data(), im.valid.data(), nullptr, all, im.W, im.H, im.W, degree, zexp);
    omp_set_num_threads(threads);
    EXPECT_EQ(one.geo, whole.geo);
    EXPECT_EQ(one.zm, whole.zm);
    EXPECT_EQ(three.geo, whole.geo);
    EXPECT_EQ(three.zm, whole.zm);

    // The collective path over one rank gives the same bits as the pieces.
    const SurfaceFit coll = fit_self(im, degree);
    for (size_t t = 0; t < coll.coeffs.size(); ++t) EXPECT_TRUE(same_bits(coll.coeffs[t], ref.coeffs[t])) << t;
}

TEST(Background, NegativeAndTinyValuesAreExact) {
    // Moments of a constant image are exact integers times the constant.
    const int64_t H = 33, W = 17;
    std::vector<float> z(static_cast<size_t>(H * W), -0.375f);
    const Window all{0, 0, H, W};
    const SurfaceMoments m = surface_moments(z.data(), nullptr, nullptr, all, W, H, W, 1,
                                             surface_zexp(surface_max_abs(z.data(), nullptr, nullptr, all, W)));
    const SurfaceFit f = solve_surface(m);
    EXPECT_DOUBLE_EQ(f.coeffs[0], -0.375);
    EXPECT_NEAR(f.coeffs[1], 0.0, 1e-15);
    EXPECT_NEAR(f.coeffs[2], 0.0, 1e-15);
    // Tiny values keep their relative precision (the quantisation follows max |z|).
    const std::vector<double> c = {3e-9, -2e-9, 1e-9};
    Image im = make_image(64, 80, c, 0.0, 1);
    const SurfaceFit t = fit_self(im, 1);
    for (size_t k = 0; k < c.size(); ++k) EXPECT_NEAR(t.coeffs[k], c[k], 1e-15);
}

TEST(Background, DescribeSurface) {
    SurfaceFit f;
    f.degree = 1;
    f.coeffs = {1.5, -2.0, 0.25};
    EXPECT_EQ(describe_surface(f), "1.5 - 2 x + 0.25 y");
}

// --- the command (one rank) ---------------------------------------------------------

TEST(BackgroundCommand, GeoTiffAndHdf5Outputs) {
    testing::TempDir dir("bgcmd");
    const std::vector<double> c = {1.0, 2.0, -3.0, 0.5, 0.25, -0.75};
    Image im = make_image(120, 90, c, 0.0, 1);
    im.z[0] = std::nanf("");
    GeoRef geo;
    geo.has_geotransform = true;
    geo.geotransform = {1000, 10, 0, 2000, 0, -10};
    write_geotiff_f32(dir / "in.tif", im.H, im.W, im.z.data(), geo, std::nan(""));

    BackgroundOptions o;
    o.input = dir / "in.tif";
    o.output = dir / "out.tif";
    o.degree = 2;
    const BackgroundReport rep = run_background(o, MPI_COMM_WORLD);
    EXPECT_EQ(rep.valid, im.H * im.W - 1);
    EXPECT_EQ(rep.fit.count, im.H * im.W - 1);
    for (size_t t = 0; t < c.size(); ++t) EXPECT_NEAR(rep.fit.coeffs[t], c[t], 1e-6);
    EXPECT_LT(rep.residual_rms, 1e-5);
    {
        RasterReader r(o.output, 1);
        EXPECT_TRUE(r.info().has_geotransform);
        EXPECT_EQ(r.info().geotransform[1], 10.0);
        std::vector<float> out(im.z.size());
        std::vector<uint8_t> v(im.z.size());
        r.read_phase(Window{0, 0, im.H, im.W}, out.data(), v.data(), im.W);
        EXPECT_EQ(v[0], 0);  // NaN
        for (size_t i = 1; i < out.size(); ++i) ASSERT_LT(std::fabs(out[i]), 1e-4) << i;
    }
    // HDF5 out, then the HDF5 result as input (default dataset unwrapped_phase).
    o.output = dir / "out.h5";
    run_background(o, MPI_COMM_WORLD);
    EXPECT_TRUE(std::filesystem::exists(o.output));
    BackgroundOptions again;
    again.input = dir / "out.h5";
    again.output = dir / "again.tif";
    again.degree = 1;
    const BackgroundReport rep2 = run_background(again, MPI_COMM_WORLD);
    EXPECT_EQ(rep2.fit.count, im.H * im.W - 1);
    EXPECT_LT(std::fabs(rep2.fit.coeffs[0]), 1e-5);
    RasterReader r2(again.output, 1);
    EXPECT_TRUE(r2.info().has_geotransform);  // from the HDF5 attributes
    EXPECT_EQ(r2.info().geotransform[0], 1000.0);
}

TEST(BackgroundCommand, BadInputsGiveOneLine) {
    testing::TempDir dir("bgbad");
    const Image im = make_image(20, 30, {1.0}, 0.0, 1);
    write_geotiff_f32(dir / "in.tif", im.H, im.W, im.z.data(), GeoRef{}, std::nullopt);
    auto message = [&](BackgroundOptions o) -> std::string {
        try {
            run_background(o, MPI_COMM_WORLD);
        } catch (const InputError& e) {
            return e.what();
        }
        return "";
    };
    BackgroundOptions o;
    o.input = dir / "in.tif";
    o.output = dir / "out.png";
    EXPECT_NE(message(o).find("must end in .h5"), std::string::npos);
    o.output = dir / "missing/out.tif";
    EXPECT_NE(message(o).find("does not exist"), std::string::npos);
    o.output = dir / "out.tif";
    o.dataset = "x";
    EXPECT_NE(message(o).find("HDF5 inputs"), std::string::npos);
    o.dataset.clear();
    o.input = dir / "nope.tif";
    EXPECT_NE(message(o).find("no such file"), std::string::npos);
    o.input = dir / "in.tif";
    o.degree = 6;  // 28 terms, but all 600 pixels are fine; a 3-row image is not:
    const Image thin = make_image(3, 30, {1.0}, 0.0, 1);
    write_geotiff_f32(dir / "thin.tif", thin.H, thin.W, thin.z.data(), GeoRef{}, std::nullopt);
    o.input = dir / "thin.tif";
    EXPECT_NE(message(o).find("not positive definite"), std::string::npos) << message(o);
    EXPECT_FALSE(std::filesystem::exists(dir / "out.tif"));
}

TEST(BackgroundCommand, CliSubcommandRuns) {
    testing::TempDir dir("bgcli");
    const Image im = make_image(50, 40, {2.0, 1.0, -1.0}, 0.0, 1);
    write_geotiff_f32(dir / "in.tif", im.H, im.W, im.z.data(), GeoRef{}, std::nullopt);
    CLI::App app;
    std::function<void()> run;
    add_background_command(app, run);
    const std::string in = dir / "in.tif", out = dir / "out.h5";
    const char* argv[] = {"tessera", "background", in.c_str(), out.c_str(), "--degree", "1", "-q"};
    app.parse(7, argv);
    ASSERT_TRUE(run);
    run();
    EXPECT_TRUE(std::filesystem::exists(out));
    RasterReader r("HDF5:\"" + out + "\"://unwrapped_phase", 1);
    std::vector<float> v(static_cast<size_t>(im.H * im.W));
    std::vector<uint8_t> ok(v.size());
    r.read_phase(Window{0, 0, im.H, im.W}, v.data(), ok.data(), im.W);
    for (float x : v) ASSERT_LT(std::fabs(x), 1e-5);
}

}  // namespace
}  // namespace tessera
