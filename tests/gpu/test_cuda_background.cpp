// The CUDA background fit and removal (kernels/cuda/background.h) against the CPU backend
// (kernels/background.h), bit for bit (ARCHITECTURE.md section 1): max |z|, the exact
// moments as integers, the solved coefficients, the subtracted image (memcmp, the row
// padding untouched) and the residual sums, on random images with NaN, infinities,
// invalid and unmasked pixels, odd sizes, windows of larger images with row strides, wide
// rows (several segments), degrees 0..6 and values from 1e-30 to 1e30; then the collective
// fit, a split into windows, the commands' band, and across ranks (CudaDistributed).
// Every test skips, saying why, when no CUDA device is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/background.h"
#include "kernels/cuda/background.h"
#include "kernels/cuda/device_buffer.h"
#include "partition/comm.h"
#include "partition/cuda/surface_fit.h"
#include "partition/surface_fit.h"
#include "support/gpu_skip.h"

namespace tessera {
namespace {

// An H x W image stored with row stride `stride` >= W; the padding holds values that would
// change every result if a kernel read them (1e30, valid, in the mask).
struct Scene {
    int64_t H = 0, W = 0, stride = 0;
    std::vector<float> z;
    std::vector<uint8_t> valid, mask;
};

struct SceneSpec {
    double scale = 1.0;      // of the smooth surface and the noise
    double p_nan = 0.02;     // NaN or +-inf (valid flag set: the kernels must skip them)
    double p_invalid = 0.05; // finite but valid = 0
    double p_unmasked = 0.3; // mask = 0
};

Scene make_scene(int64_t H, int64_t W, int64_t pad, uint64_t seed, const SceneSpec& sp = {}) {
    Scene s{H, W, W + pad, {}, {}, {}};
    const size_t n = static_cast<size_t>(H * s.stride);
    s.z.assign(n, 1e30f);
    s.valid.assign(n, 1);
    s.mask.assign(n, 1);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::normal_distribution<double> noise(0.0, 0.3);
    const double a = u(rng) * 4 - 2, b = u(rng) * 4 - 2, c = u(rng) * 4 - 2;
    for (int64_t r = 0; r < H; ++r)
        for (int64_t k = 0; k < W; ++k) {
            const size_t i = static_cast<size_t>(r * s.stride + k);
            const double x = surface_coord(k, W), y = surface_coord(r, H);
            s.z[i] = static_cast<float>(sp.scale * (a + b * x * x * x - c * x * y + 0.7 * y * y + noise(rng)));
            const double t = u(rng);
            if (t < sp.p_nan) {
                const double w = u(rng);
                s.z[i] = w < 0.6 ? std::numeric_limits<float>::quiet_NaN()
                                 : (w < 0.8 ? std::numeric_limits<float>::infinity()
                                            : -std::numeric_limits<float>::infinity());
            } else if (t < sp.p_nan + sp.p_invalid) {
                s.valid[i] = 0;
            }
            s.mask[i] = u(rng) < sp.p_unmasked ? 0 : 1;
        }
    return s;
}

// The scene's arrays on the device (same layout and stride).
struct DeviceScene {
    cuda::DeviceBuffer<float> z;
    cuda::DeviceBuffer<uint8_t> valid, mask;
    explicit DeviceScene(const Scene& s) : z(s.z.size()), valid(s.valid.size()), mask(s.mask.size()) {
        cuda::check(cudaMemcpy(z.get(), s.z.data(), s.z.size() * sizeof(float), cudaMemcpyHostToDevice), "upload z");
        cuda::check(cudaMemcpy(valid.get(), s.valid.data(), s.valid.size(), cudaMemcpyHostToDevice), "upload valid");
        cuda::check(cudaMemcpy(mask.get(), s.mask.data(), s.mask.size(), cudaMemcpyHostToDevice), "upload mask");
        // A pageable copy may return before its DMA ends; the kernels run on non-blocking streams.
        cuda::check(cudaDeviceSynchronize(), "upload (sync)");
    }
    std::vector<float> download_z() const {
        std::vector<float> out(z.size());
        cuda::check(cudaMemcpy(out.data(), z.get(), out.size() * sizeof(float), cudaMemcpyDeviceToHost), "download z");
        return out;
    }
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string where(const Scene& s, const Window& w, int degree, bool use_valid, bool use_mask) {
    return std::to_string(s.H) + "x" + std::to_string(s.W) + " stride " + std::to_string(s.stride) + " window (" +
           std::to_string(w.row0) + "," + std::to_string(w.col0) + " " + std::to_string(w.rows) + "x" +
           std::to_string(w.cols) + ") degree " + std::to_string(degree) + (use_valid ? " valid" : "") +
           (use_mask ? " mask" : "");
}

void expect_same_moments(const SurfaceMoments& dev, const SurfaceMoments& cpu, const std::string& what) {
    EXPECT_EQ(dev.degree, cpu.degree) << what;
    EXPECT_EQ(dev.zexp, cpu.zexp) << what;
    EXPECT_EQ(dev.count, cpu.count) << what;
    ASSERT_EQ(dev.geo.size(), cpu.geo.size()) << what;
    ASSERT_EQ(dev.zm.size(), cpu.zm.size()) << what;
    for (size_t k = 0; k < cpu.geo.size(); ++k) EXPECT_EQ(dev.geo[k], cpu.geo[k]) << what << ": geo moment " << k;
    for (size_t k = 0; k < cpu.zm.size(); ++k) EXPECT_EQ(dev.zm[k], cpu.zm[k]) << what << ": z moment " << k;
}

std::optional<SurfaceFit> try_solve(const SurfaceMoments& m) {
    try {
        return solve_surface(m);
    } catch (const SurfaceFitError&) {
        return std::nullopt;
    }
}

// Every stage of one window, device vs CPU; `fitted` counts the degrees that could be fitted.
void compare_stages(const Scene& s, const Window& w, bool use_valid, bool use_mask, int min_degree, int max_degree,
                    int& fitted) {
    SCOPED_TRACE(where(s, w, -1, use_valid, use_mask));
    const DeviceScene d(s);
    const size_t off = static_cast<size_t>(w.row0 * s.stride + w.col0);
    const float* hz = s.z.data() + off;
    const uint8_t* hv = use_valid ? s.valid.data() + off : nullptr;
    const uint8_t* hm = use_mask ? s.mask.data() + off : nullptr;
    const float* dz = d.z.get() + off;
    const uint8_t* dv = use_valid ? d.valid.get() + off : nullptr;
    const uint8_t* dm = use_mask ? d.mask.get() + off : nullptr;
    const cuda::Stream stream;

    const double cpu_max = surface_max_abs(hz, hv, hm, w, s.stride);
    const double dev_max = cuda::surface_max_abs(dz, dv, dm, w, s.stride, stream.get());
    EXPECT_TRUE(same_bits(dev_max, cpu_max)) << "max |z| " << dev_max << " vs " << cpu_max;
    const int zexp = surface_zexp(cpu_max);
    for (int n = min_degree; n <= max_degree; ++n) {
        const std::string what = where(s, w, n, use_valid, use_mask);
        const SurfaceMoments cm = surface_moments(hz, hv, hm, w, s.stride, s.H, s.W, n, zexp);
        const SurfaceMoments dm_ = cuda::surface_moments(dz, dv, dm, w, s.stride, s.H, s.W, n, zexp, stream.get());
        expect_same_moments(dm_, cm, what);
        const std::optional<SurfaceFit> cf = try_solve(cm), df = try_solve(dm_);
        ASSERT_EQ(cf.has_value(), df.has_value()) << what;
        if (!cf) continue;
        ++fitted;
        ASSERT_EQ(df->coeffs.size(), cf->coeffs.size()) << what;
        EXPECT_EQ(std::memcmp(df->coeffs.data(), cf->coeffs.data(), cf->coeffs.size() * sizeof(double)), 0) << what;

        // Subtraction in place on copies of the whole stored image (padding included).
        std::vector<float> cpu_z = s.z;
        const ResidualSums crs = subtract_surface(cpu_z.data() + off, hv, hm, w, s.stride, s.H, s.W, *cf);
        DeviceScene d2(s);
        const ResidualSums drs = cuda::subtract_surface(d2.z.get() + off, dv, dm, w, s.stride, s.H, s.W, *cf,
                                                        stream.get());
        const std::vector<float> dev_z = d2.download_z();
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < cpu_z.size(); ++i)
            if (std::memcmp(&cpu_z[i], &dev_z[i], sizeof(float)) != 0 && bad++ == 0) first = i;
        EXPECT_EQ(bad, 0u) << what << ": first difference at stored index " << first << ": " << dev_z[first]
                           << " vs " << cpu_z[first];
        EXPECT_EQ(drs.count, crs.count) << what;
        EXPECT_TRUE(same_bits(drs.sum_sq, crs.sum_sq)) << what << ": residual sum " << drs.sum_sq << " vs "
                                                       << crs.sum_sq;
    }
}

int compare_window(const Scene& s, const Window& w, bool use_valid, bool use_mask, int min_degree = 0,
                   int max_degree = kMaxSurfaceDegree) {
    int fitted = 0;
    compare_stages(s, w, use_valid, use_mask, min_degree, max_degree, fitted);
    return fitted;
}

TEST(CudaBackground, EveryStageMatchesCpuOnOddSizesAndDegrees) {
    SKIP_WITHOUT_GPU();
    const std::pair<int64_t, int64_t> sizes[] = {{1, 1}, {1, 9}, {9, 1}, {2, 2}, {3, 5}, {37, 53}, {64, 64}, {300, 263}};
    uint64_t seed = 10;
    for (const auto& [H, W] : sizes)
        for (const int64_t pad : {0, 13}) {
            const Scene s = make_scene(H, W, pad, ++seed);
            for (const bool v : {true, false})
                for (const bool m : {false, true}) compare_window(s, Window{0, 0, H, W}, v, m);
        }
}

TEST(CudaBackground, WindowsOfALargerImageWithStrides) {
    SKIP_WITHOUT_GPU();
    const Scene s = make_scene(211, 307, 29, 77);
    const Window windows[] = {{0, 0, 211, 307}, {3, 5, 200, 290}, {100, 0, 111, 307}, {0, 150, 211, 157},
                              {57, 61, 1, 200}, {10, 300, 150, 7}, {5, 5, 0, 10}};
    for (const Window& w : windows) {
        const int fitted = compare_window(s, w, true, true);
        if (w.rows > 20 && w.cols > 20) {
            EXPECT_EQ(fitted, kMaxSurfaceDegree + 1);
        }
    }
}

TEST(CudaBackground, WideRowsSpanSeveralSegments) {
    SKIP_WITHOUT_GPU();
    // Rows of more than 256 x 32 columns go to several blocks; tall and narrow to many rows.
    const Scene wide = make_scene(9, 20000, 3, 5);
    compare_window(wide, Window{0, 0, 9, 20000}, true, true, 0, 3);
    compare_window(wide, Window{2, 8191, 7, 8194}, true, false, 2, 2);
    const Scene tall = make_scene(3000, 7, 0, 6);
    compare_window(tall, Window{0, 0, 3000, 7}, true, true, 0, 2);
}

TEST(CudaBackground, ExtremeScalesAndSpecialImages) {
    SKIP_WITHOUT_GPU();
    for (const double scale : {1e-30, 1e-3, 1e5, 1e30}) {
        SceneSpec sp;
        sp.scale = scale;
        compare_window(make_scene(41, 67, 1, 100 + static_cast<uint64_t>(std::log10(scale) + 40), sp),
                       Window{0, 0, 41, 67}, true, true);
    }
    // All zero (max 0, zexp 0); all invalid (no pixel used: the fit fails on both).
    Scene zero = make_scene(20, 30, 2, 9, SceneSpec{1.0, 0.0, 0.0, 0.0});
    for (int64_t r = 0; r < 20; ++r)
        for (int64_t c = 0; c < 30; ++c) zero.z[static_cast<size_t>(r * zero.stride + c)] = 0.0f;
    compare_window(zero, Window{0, 0, 20, 30}, true, false);
    Scene none = make_scene(20, 30, 0, 9);
    std::fill(none.valid.begin(), none.valid.end(), 0);
    EXPECT_EQ(compare_window(none, Window{0, 0, 20, 30}, true, true), 0);
    // Ties of round(z 2^e): one |z| = 1000 sets e = 21, the others are odd multiples of 2^-22.
    Scene ties = make_scene(33, 35, 0, 11, SceneSpec{1.0, 0.0, 0.0, 0.0});
    std::mt19937 rng(3);
    for (float& v : ties.z) v = std::ldexp(static_cast<float>(2 * static_cast<int>(rng() % (1u << 21)) - (1 << 21) + 1), -22);
    ties.z[17] = -1000.0f;
    compare_window(ties, Window{0, 0, 33, 35}, true, false);
}

TEST(CudaBackground, CollectiveFitMatchesCpuAndErrorsAlike) {
    SKIP_WITHOUT_GPU();
    Comm self(MPI_COMM_SELF);
    const cuda::Stream stream;
    for (int n = 0; n <= kMaxSurfaceDegree; ++n) {
        const Scene s = make_scene(123, 97, 5, 200 + static_cast<uint64_t>(n));
        const DeviceScene d(s);
        const Window w{0, 0, s.H, s.W};
        const SurfaceFit cf = fit_surface(s.z.data(), s.valid.data(), s.mask.data(), w, s.stride, s.H, s.W, n, self);
        const SurfaceFit df = cuda::fit_surface(d.z.get(), d.valid.get(), d.mask.get(), w, s.stride, s.H, s.W, n, self,
                                                stream.get());
        EXPECT_EQ(df.count, cf.count);
        EXPECT_TRUE(same_bits(df.min_pivot, cf.min_pivot));
        ASSERT_EQ(df.coeffs.size(), cf.coeffs.size());
        EXPECT_EQ(std::memcmp(df.coeffs.data(), cf.coeffs.data(), cf.coeffs.size() * sizeof(double)), 0) << n;
    }
    // Too few pixels for degree 6: both throw SurfaceFitError; a bad degree: invalid_argument.
    const Scene tiny = make_scene(4, 5, 0, 1, SceneSpec{1.0, 0.0, 0.0, 0.0});
    const DeviceScene d(tiny);
    const Window w{0, 0, 4, 5};
    EXPECT_THROW(fit_surface(tiny.z.data(), nullptr, nullptr, w, 5, 4, 5, 6, self), SurfaceFitError);
    EXPECT_THROW(cuda::fit_surface(d.z.get(), nullptr, nullptr, w, 5, 4, 5, 6, self, stream.get()), SurfaceFitError);
    EXPECT_THROW(cuda::fit_surface(d.z.get(), nullptr, nullptr, w, 5, 4, 5, 7, self, stream.get()),
                 std::invalid_argument);
}

TEST(CudaBackground, MomentsOfASplitAddUpToTheWhole) {
    SKIP_WITHOUT_GPU();
    const Scene s = make_scene(150, 170, 4, 31);
    const DeviceScene d(s);
    const cuda::Stream stream;
    const Window whole{0, 0, s.H, s.W};
    const int n = 4;
    const int zexp = surface_zexp(surface_max_abs(s.z.data(), s.valid.data(), s.mask.data(), whole, s.stride));
    const SurfaceMoments cpu = surface_moments(s.z.data(), s.valid.data(), s.mask.data(), whole, s.stride, s.H, s.W,
                                               n, zexp);
    // Irregular pieces: three row bands, the middle one cut in two columns.
    const Window parts[] = {{0, 0, 41, 170}, {41, 0, 70, 99}, {41, 99, 70, 71}, {111, 0, 39, 170}};
    SurfaceMoments sum;
    bool first = true;
    for (const Window& w : parts) {
        const size_t off = static_cast<size_t>(w.row0 * s.stride + w.col0);
        const SurfaceMoments m = cuda::surface_moments(d.z.get() + off, d.valid.get() + off, d.mask.get() + off, w,
                                                       s.stride, s.H, s.W, n, zexp, stream.get());
        if (first) sum = m;
        else add_moments(sum, m);
        first = false;
    }
    expect_same_moments(sum, cpu, "split into 4 windows");
}

TEST(CudaBackground, CommandBandFromHostArraysMatchesCpu) {
    SKIP_WITHOUT_GPU();
    Comm self(MPI_COMM_SELF);
    const Scene s = make_scene(181, 203, 7, 41);
    const Window w{0, 0, s.H, s.W};
    std::vector<float> cpu_z = s.z, dev_z = s.z;
    const SurfaceFit cf = fit_surface(cpu_z.data(), s.valid.data(), s.mask.data(), w, s.stride, s.H, s.W, 3, self);
    const ResidualSums crs = subtract_surface(cpu_z.data(), s.valid.data(), s.mask.data(), w, s.stride, s.H, s.W, cf);
    cuda::SurfaceBand band(dev_z.data(), s.valid.data(), s.mask.data(), w, s.stride, s.H, s.W);
    const SurfaceFit df = fit_surface(band, 3, self);
    const ResidualSums drs = band.subtract(df);
    EXPECT_EQ(std::memcmp(df.coeffs.data(), cf.coeffs.data(), cf.coeffs.size() * sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(dev_z.data(), cpu_z.data(), cpu_z.size() * sizeof(float)), 0);
    EXPECT_TRUE(same_bits(drs.sum_sq, crs.sum_sq));
    EXPECT_EQ(drs.count, crs.count);
}

// Under mpirun: every rank fits its band of the image on the device, collectively; the
// coefficients and the subtracted band must equal the CPU's on the whole image (one rank).
TEST(CudaDistributed, BackgroundFitAcrossRanksEqualsOneCpuRank) {
    SKIP_WITHOUT_GPU();
    Comm world(MPI_COMM_WORLD), self(MPI_COMM_SELF);
    const Scene s = make_scene(257, 199, 0, 99);
    const Window whole{0, 0, s.H, s.W};
    for (const int n : {1, 3, 6}) {
        std::vector<float> cpu_z = s.z;
        const SurfaceFit cf =
            fit_surface(cpu_z.data(), s.valid.data(), s.mask.data(), whole, s.stride, s.H, s.W, n, self);
        subtract_surface(cpu_z.data(), s.valid.data(), s.mask.data(), whole, s.stride, s.H, s.W, cf);
        // Uneven bands 0, 1, 100, 100, ... rows, the last rank the rest (empty ones take part too).
        const int P = world.size(), k = world.rank();
        auto cut = [&](int i) { return i == 0 ? int64_t{0} : (i == P ? s.H : std::min<int64_t>(s.H, 1 + (i - 1) * 100)); };
        const int64_t r0 = cut(k);
        const Window own{r0, 0, cut(k + 1) - r0, s.W};
        const size_t off = static_cast<size_t>(r0 * s.stride);
        std::vector<float> band(s.z.begin() + static_cast<std::ptrdiff_t>(off),
                                s.z.begin() + static_cast<std::ptrdiff_t>(off + own.rows * s.stride));
        cuda::SurfaceBand dev(band.data(), s.valid.data() + off, s.mask.data() + off, own, s.stride, s.H, s.W);
        const SurfaceFit df = fit_surface(dev, n, world);
        dev.subtract(df);
        EXPECT_EQ(std::memcmp(df.coeffs.data(), cf.coeffs.data(), cf.coeffs.size() * sizeof(double)), 0)
            << "rank " << world.rank() << " degree " << n;
        EXPECT_EQ(std::memcmp(band.data(), cpu_z.data() + off, band.size() * sizeof(float)), 0)
            << "rank " << world.rank() << " degree " << n;
    }
}

}  // namespace
}  // namespace tessera
