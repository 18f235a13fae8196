// The CUDA hologram demodulation (kernels/cuda/hologram.h) against the CPU backend
// (kernels/hologram.h) on the synthetic off-axis holograms of tests/kernels/test_hologram.cpp
// (tests/support/hologram_scene.h): the same carrier, the same accuracy against the truth,
// a phase within a small bound of the CPU's (cuFFT is not FFTW), deterministic bits frame to
// frame and plan to plan; the pointwise stages (division, phase_of) bit for bit with the CPU.
// The CudaHologramMath tests need no GPU; every other test skips, saying why, without one.
#include <cuda_runtime_api.h>
#include <fftw3.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "kernels/cuda/hologram.h"
#include "kernels/cuda/hologram_kernels.h"
#include "kernels/cuda/hologram_math.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/region.h"
#include "kernels/hologram.h"
#include "app/hologram_command.h"
#include "support/cli.h"
#include "support/hologram_scene.h"
#include "support/gpu_skip.h"

namespace tessera {
namespace {

using namespace tessera::testing;  // make_hologram, phase_rms, wrap, TempDir

// ---------------------------------------------------------------------------------------
// Helpers

using Field = std::vector<std::complex<float>>;

struct Result {
    CarrierPeak carrier;
    double radius = 0;
    Field field;
    std::vector<float> phase, amplitude;
};

// The CPU path of `tessera hologram`: demodulate, divide, phase, amplitude.
Result cpu_run(const HologramParams& p, const std::vector<float>& I, int64_t H, int64_t W, const Field* ref = nullptr) {
    HologramPlan plan(H, W);
    Result r;
    const auto n = static_cast<size_t>(H * W);
    r.field.resize(n);
    r.phase.resize(n);
    r.amplitude.resize(n);
    r.carrier = demodulate(plan, p, I.data(), r.field.data());
    r.radius = filter_radius(p, H, W, r.carrier);
    if (ref) divide_by_reference(r.field.data(), ref->data(), static_cast<int64_t>(n));
    wrapped_phase(r.field.data(), r.phase.data(), static_cast<int64_t>(n));
    field_amplitude(r.field.data(), r.amplitude.data(), static_cast<int64_t>(n));
    return r;
}

// One frame through a CUDA plan (device-resident API), everything copied back.
Result gpu_run(cuda::HologramPlan& plan, const HologramParams& p, const std::vector<float>& I, bool divide = false) {
    Result r;
    const auto n = static_cast<size_t>(plan.rows() * plan.cols());
    r.field.resize(n);
    r.phase.resize(n);
    r.amplitude.resize(n);
    plan.upload(I.data());
    plan.enqueue(p, divide, true);
    plan.download(r.phase.data(), r.amplitude.data(), r.field.data());
    const cuda::HologramFrameInfo f = plan.frame_info();
    r.carrier = f.carrier;
    r.radius = f.filter_radius;
    return r;
}

struct Diff {
    double rms = 0, max = 0;
};

// Wrapped phase difference a - b over the whole frame.
Diff phase_diff(const std::vector<float>& a, const std::vector<float>& b) {
    Diff d;
    double s2 = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double e = std::abs(wrap(static_cast<double>(a[i]) - static_cast<double>(b[i])));
        s2 += e * e;
        d.max = std::max(d.max, e);
    }
    d.rms = std::sqrt(s2 / static_cast<double>(a.size()));
    return d;
}

bool same_bits(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

// The GPU's phase against the CPU's for the same hologram: the bound of kernels/cuda/hologram.h.
// Expected (float FFTs of |field| ~ 1): ~1e-7 rad; asserted 1e-4 RMS, 1e-3 max.
constexpr double kMaxRmsVsCpu = 1e-4, kMaxVsCpu = 1e-3;

void expect_close_to_cpu(const Result& g, const Result& c, const char* what) {
    EXPECT_EQ(g.carrier.row, c.carrier.row) << what;
    EXPECT_EQ(g.carrier.col, c.carrier.col) << what;
    EXPECT_NEAR(g.carrier.magnitude, c.carrier.magnitude, 1e-4 * c.carrier.magnitude) << what;
    EXPECT_EQ(g.radius, c.radius) << what << ": the device's filter radius is tessera::filter_radius's value";
    const Diff d = phase_diff(g.phase, c.phase);
    std::printf("[ measured ] %s: GPU vs CPU phase RMS %.3g rad, max %.3g rad (bounds %.0e, %.0e)\n", what, d.rms,
                d.max, kMaxRmsVsCpu, kMaxVsCpu);
    EXPECT_LT(d.rms, kMaxRmsVsCpu) << what;
    EXPECT_LT(d.max, kMaxVsCpu) << what;
    double worst = 0;
    for (size_t i = 0; i < g.amplitude.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(g.amplitude[i]) - c.amplitude[i]) /
                                    std::max(1e-3, static_cast<double>(c.amplitude[i])));
    EXPECT_LT(worst, 1e-3) << what << ": amplitude";
}

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// (im, re) pairs: every class of float (zeros, denormals, normals, infinities, NaN, both
// signs) against every other, random bit patterns, and ordinary values on the circle.
std::vector<std::complex<float>> phase_samples(size_t n_random) {
    const float inf = std::numeric_limits<float>::infinity();
    const float den = std::numeric_limits<float>::denorm_min(), fmin = std::numeric_limits<float>::min();
    const float fmax = std::numeric_limits<float>::max();
    std::vector<float> specials = {0.0f, den, 3 * den, fmin, 0.5f * fmin, 1e-30f, 1e-3f, 0.41421356f, 0.5f, 1.0f,
                                   1.0f + 1e-7f, 2.0f, 3.0f, 1e10f, fmax, inf, std::nanf(""), from_bits(0x7fa00001u)};
    const size_t ns = specials.size();
    for (size_t i = 0; i < ns; ++i) specials.push_back(-specials[i]);
    std::vector<std::complex<float>> v;
    for (float im : specials)
        for (float re : specials) v.emplace_back(re, im);
    std::mt19937_64 rng(12345);
    std::uniform_int_distribution<uint32_t> bits;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<double> angle(-std::numbers::pi, std::numbers::pi);
    for (size_t k = 0; k < n_random; ++k) {
        switch (k % 4) {
            case 0: v.emplace_back(from_bits(bits(rng)), from_bits(bits(rng))); break;
            case 1: v.emplace_back(normal(rng), normal(rng)); break;
            case 2: {  // |im| and |re| equal or one ulp apart: the octant boundaries
                const float a = std::abs(normal(rng));
                const float b = k % 8 == 2 ? a : std::nextafter(a, 2 * a);
                v.emplace_back(k % 16 < 8 ? a : -a, k % 32 < 16 ? b : -b);
                break;
            }
            default: {
                const double t = angle(rng);
                v.emplace_back(static_cast<float>(std::cos(t)), static_cast<float>(std::sin(t)));
            }
        }
    }
    return v;
}

// Equal bits, or both NaN (a NaN's payload and sign are the hardware's: x86 and the GPU
// propagate them differently; a NaN result is a NaN on both).
bool same_float(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

template <class T>
T* device_alloc(size_t n) {
    void* p = nullptr;
    cuda::check(cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T)), "test cudaMalloc");
    return static_cast<T*>(p);
}

template <class T>
T* device_copy(const std::vector<T>& v) {
    T* p = device_alloc<T>(v.size());
    cuda::check(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "test upload");
    return p;
}

template <class T>
std::vector<T> host_copy(const T* d, size_t n) {
    std::vector<T> v(n);
    cuda::check(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "test download");
    return v;
}

// ---------------------------------------------------------------------------------------
// Host twins of the device arithmetic (no GPU needed)

TEST(CudaHologramMath, ConstantsAreTheCpusPi) {
    EXPECT_EQ(cuda::hm::kPiF, std::numbers::pi_v<float>);
    EXPECT_EQ(cuda::hm::kPi2F, std::numbers::pi_v<float> / 2);
    EXPECT_EQ(cuda::hm::kPi4F, std::numbers::pi_v<float> / 4);
    EXPECT_EQ(cuda::hm::kPiD, std::numbers::pi);
}

// The __host__ __device__ phase_of compiled for the host is tessera::phase_of, bit for bit:
// the same operations in the same order (the device instantiation is checked on a GPU below).
TEST(CudaHologramMath, PhaseOfTwinEqualsCpuOnTheHost) {
    const auto v = phase_samples(1 << 20);
    size_t bad = 0;
    for (const auto& z : v) {
        const float want = phase_of(z.imag(), z.real()), got = cuda::phase_of(z.imag(), z.real());
        if (!same_float(want, got) && bad++ < 10)
            ADD_FAILURE() << "phase_of(" << z.imag() << ", " << z.real() << "): cpu " << want << " twin " << got;
    }
    EXPECT_EQ(bad, 0u);
}

TEST(CudaHologramMath, DivideFieldTwinEqualsCpu) {
    auto f = phase_samples(1 << 16);
    auto r = phase_samples(1 << 16);
    std::rotate(r.begin(), r.begin() + 7, r.end());
    for (size_t i = 0; i < r.size(); i += 5) r[i] = {0.0f, i % 10 == 0 ? -0.0f : 0.0f};  // zero references
    Field cpu = f;
    divide_by_reference(cpu.data(), r.data(), static_cast<int64_t>(cpu.size()));
    size_t bad = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        float re, im;
        cuda::divide_field(f[i].real(), f[i].imag(), r[i].real(), r[i].imag(), re, im);
        if (!(same_float(re, cpu[i].real()) && same_float(im, cpu[i].imag())) && bad++ < 10)
            ADD_FAILURE() << "divide " << f[i] << " / " << r[i] << ": cpu " << cpu[i] << " twin (" << re << "," << im
                          << ")";
    }
    EXPECT_EQ(bad, 0u);
}

// The device computes the filter radius from the carrier it found: the same value as
// tessera::filter_radius for every size, carrier and given radius.
TEST(CudaHologramMath, SidebandRadiusEqualsFilterRadius) {
    std::mt19937_64 rng(7);
    for (int k = 0; k < 200000; ++k) {
        const int64_t H = 2 + static_cast<int64_t>(rng() % 3000), W = 2 + static_cast<int64_t>(rng() % 3000);
        const int64_t row = static_cast<int64_t>(rng() % static_cast<uint64_t>(H));
        const int64_t col = static_cast<int64_t>(rng() % static_cast<uint64_t>(W));
        HologramParams p;
        switch (k % 4) {
            case 0: p.filter_radius = 0; break;
            case 1: p.filter_radius = static_cast<double>(rng() % 100000) / 97.0; break;
            case 2: p.filter_radius = -1.0; break;
            default: p.filter_radius = std::numeric_limits<double>::quiet_NaN();
        }
        const double want = filter_radius(p, H, W, CarrierPeak{row, col, 0});
        const double got = cuda::sideband_radius(p.filter_radius, H, W, row, col);
        ASSERT_EQ(std::bit_cast<uint64_t>(want), std::bit_cast<uint64_t>(got))
            << H << "x" << W << " carrier (" << row << ", " << col << ") radius " << p.filter_radius;
    }
}

// The plan refuses a DC radius that leaves no bin exactly when find_carrier would throw.
TEST(CudaHologramMath, EmptyCarrierSearchAsTheCpu) {
    for (int64_t H = 2; H <= 9; ++H)
        for (int64_t W = 2; W <= 9; ++W) {
            HologramPlan plan(H, W);
            const std::vector<float> zero(static_cast<size_t>(H * W), 0.0f);
            plan.forward(zero.data());
            const double edge = std::sqrt(static_cast<double>((H / 2) * (H / 2) + (W / 2) * (W / 2)));
            for (double dc : {0.5, 1.0, edge / 2, std::nextafter(edge, 0.0), edge, std::nextafter(edge, 99.0), edge + 1}) {
                bool cpu_throws = false;
                try {
                    find_carrier(plan, dc);
                } catch (const std::invalid_argument&) {
                    cpu_throws = true;
                }
                EXPECT_EQ(cuda::carrier_search_is_empty(H, W, dc), cpu_throws) << H << "x" << W << " dc " << dc;
            }
        }
}

// Crafted half spectra for the carrier search: values from a small set (many exact ties of
// |F|^2, also between (a, b) and (b, a)), NaN and infinities by variant; written into the CPU
// plan's own spectrum, the very array find_carrier scans.
void craft_spectrum(HologramPlan& cpu, int variant, std::mt19937_64& rng) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
    const std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 0.5f, 3.0f};
    const std::vector<float> zero(static_cast<size_t>(cpu.rows() * cpu.cols()), 0.0f);
    cpu.forward(zero.data());
    auto* half = const_cast<std::complex<float>*>(cpu.spectrum());
    const int64_t nh = cpu.rows() * cpu.half_cols();
    for (int64_t i = 0; i < nh; ++i) {
        float re = values[rng() % values.size()], im = values[rng() % values.size()];
        if (variant >= 3 && rng() % 17 == 0) re = nan;
        if (variant == 5 && rng() % 29 == 0) im = rng() % 2 ? inf : -inf;
        half[i] = {re, im};
    }
}

const std::vector<std::pair<int64_t, int64_t>> kCraftSizes = {{2, 2},  {2, 3},  {3, 2},   {8, 8},   {9, 7},
                                                              {16, 10}, {15, 22}, {64, 48}, {45, 63}, {181, 240}};

struct C2 {  // float2's shape for the host instantiations
    float x, y;
};

// The search's per-bin key (shared with the device kernel), maximised serially on the host,
// picks find_carrier's bin on crafted spectra full of ties, NaN and infinities.
TEST(CudaHologramMath, CarrierKeyMaximumIsFindCarriersChoice) {
    std::mt19937_64 rng(99);
    int cases = 0;
    for (auto [H, W] : kCraftSizes)
        for (int variant = 0; variant < 6; ++variant) {
            HologramPlan cpu(H, W);
            craft_spectrum(cpu, variant, rng);
            const auto* half = reinterpret_cast<const C2*>(cpu.spectrum());
            const double edge = std::sqrt(static_cast<double>((H / 2) * (H / 2) + (W / 2) * (W / 2)));
            for (double dc : {0.25, 1.0, 2.5, edge * 0.7}) {
                if (cuda::carrier_search_is_empty(H, W, dc)) continue;
                unsigned long long best = 0;
                for (int64_t i = 0; i < H * cpu.half_cols(); ++i)
                    best = std::max(best, cuda::carrier_key(half, H, W, dc * dc, i));
                CarrierPeak want;
                try {
                    want = find_carrier(cpu, dc);
                } catch (const std::invalid_argument&) {  // every searched bin NaN: no key either
                    EXPECT_EQ(best, 0ull) << H << "x" << W << " variant " << variant << " dc " << dc;
                    ++cases;
                    continue;
                }
                ASSERT_NE(best, 0ull);
                int64_t row = -1, col = -1;
                cuda::decode_carrier_key(best, W, row, col);
                EXPECT_EQ(row, want.row) << H << "x" << W << " variant " << variant << " dc " << dc;
                EXPECT_EQ(col, want.col) << H << "x" << W << " variant " << variant << " dc " << dc;
                EXPECT_EQ(std::sqrt(static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(best >> 32)))),
                          want.magnitude);
                const C2 b = cuda::spectrum_bin(half, H, W, row - H / 2, col - W / 2);
                const std::complex<float> cb = cpu.bin(row - H / 2, col - W / 2);
                EXPECT_TRUE(same_float(b.x, cb.real()) && same_float(b.y, cb.imag()));
                ++cases;
            }
        }
    EXPECT_GT(cases, 150);
}

// The sideband spectrum the device builds (sideband_value, shared with the kernel), put
// through a full 2-D inverse FFT (FFTW here), is the CPU's field (band trick): the disc's
// offsets, the wrap-around at the spectrum's borders, the left half read through the
// conjugate symmetry, the Hann weights and the scaling. Only the FFTs' rounding differs.
TEST(CudaHologramMath, SidebandSpectrumIsTheCpusSynthesis) {
    struct Case {
        int64_t H, W;
        std::optional<std::pair<int64_t, int64_t>> carrier;  // empty: detected
        double radius;                                       // HologramParams::filter_radius
        SidebandWindow window;
    };
    const std::vector<Case> cases = {
        {256, 256, std::nullopt, 0, SidebandWindow::kCircular},
        {256, 256, std::nullopt, 0, SidebandWindow::kHann},
        {64, 64, std::pair<int64_t, int64_t>{2, 60}, 10, SidebandWindow::kCircular},   // disc wraps both borders
        {64, 64, std::pair<int64_t, int64_t>{61, 3}, 12.5, SidebandWindow::kHann},     // left half: conjugates
        {45, 63, std::pair<int64_t, int64_t>{0, 0}, 7.2, SidebandWindow::kHann},       // odd, corner carrier
        {45, 63, std::pair<int64_t, int64_t>{40, 50}, 0, SidebandWindow::kCircular},   // odd, automatic radius
        {181, 239, std::nullopt, 0, SidebandWindow::kHann},
        {30, 20, std::pair<int64_t, int64_t>{15, 10}, 100, SidebandWindow::kCircular},  // DC carrier, radius capped
        {2, 2, std::pair<int64_t, int64_t>{1, 0}, 0, SidebandWindow::kCircular},
    };
    for (const Case& k : cases) {
        const std::string what = std::to_string(k.H) + "x" + std::to_string(k.W) +
                                 (k.window == SidebandWindow::kHann ? " hann" : " circular") + " radius " +
                                 std::to_string(k.radius);
        std::vector<float> I;
        if (k.H >= 64) {
            HologramSpec s;
            s.H = k.H;
            s.W = k.W;
            s.fy = 0.19;
            s.fx = 0.23;
            I = make_hologram(s).intensity;
        } else {
            std::mt19937_64 rng(static_cast<uint64_t>(k.H * 1000 + k.W));
            std::normal_distribution<float> g(2.0f, 1.0f);
            for (int64_t i = 0; i < k.H * k.W; ++i) I.push_back(g(rng));
        }
        HologramParams p;
        p.carrier = k.carrier;
        p.filter_radius = k.radius;
        p.window = k.window;
        HologramPlan cpu(k.H, k.W);
        const auto n = static_cast<size_t>(k.H * k.W);
        Field want(n);
        const CarrierPeak c = demodulate(cpu, p, I.data(), want.data());  // forward + band trick
        const double radius = filter_radius(p, k.H, k.W, c);
        const auto* half = reinterpret_cast<const C2*>(cpu.spectrum());
        const float scale = 1.0f / static_cast<float>(k.H * k.W);
        Field got(n);
        int64_t nonzero = 0;
        for (int64_t y = 0; y < k.H; ++y)
            for (int64_t x = 0; x < k.W; ++x) {
                const C2 v = cuda::sideband_value(half, k.H, k.W, c.row, c.col, radius, scale,
                                                  k.window == SidebandWindow::kHann, y, x);
                got[static_cast<size_t>(y * k.W + x)] = {v.x, v.y};
                nonzero += v.x != 0.0f || v.y != 0.0f;
            }
        // The disc's bins: d^2 <= r^2 over integer offsets.
        int64_t disc = 0;
        const auto ri = static_cast<int64_t>(std::floor(radius));
        for (int64_t dy = -ri; dy <= ri; ++dy)
            for (int64_t dx = -ri; dx <= ri; ++dx) disc += static_cast<double>(dy * dy + dx * dx) <= radius * radius;
        EXPECT_LE(nonzero, disc) << what;
        EXPECT_GE(nonzero, disc * 9 / 10) << what << ": the disc's bins are (nearly all) non-zero";
        auto* g = reinterpret_cast<fftwf_complex*>(got.data());
        fftwf_plan ip = fftwf_plan_dft_2d(static_cast<int>(k.H), static_cast<int>(k.W), g, g, FFTW_BACKWARD, FFTW_ESTIMATE);
        ASSERT_NE(ip, nullptr);
        fftwf_execute(ip);
        fftwf_destroy_plan(ip);
        double peak = 0, worst = 0;
        for (size_t i = 0; i < n; ++i) {
            peak = std::max(peak, static_cast<double>(std::abs(want[i])));
            worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
        }
        ASSERT_GT(peak, 0) << what;
        std::printf("[ measured ] %s: full inverse of the device's sideband vs the CPU's band trick, max |diff| / "
                    "max |field| = %.3g\n",
                    what.c_str(), worst / peak);
        EXPECT_LT(worst / peak, 1e-5) << what;
    }
}

// ---------------------------------------------------------------------------------------
// Pointwise stages on the device, bit for bit

// The device phase_of (through finish_field) equals tessera::phase_of for every sample.
TEST(CudaHologram, DevicePhaseOfEqualsCpuBitForBit) {
    SKIP_WITHOUT_GPU();
    const Field v = phase_samples(1 << 22);
    const auto n = static_cast<int64_t>(v.size());
    float2* d_field = device_copy(std::vector<float2>(reinterpret_cast<const float2*>(v.data()),
                                                      reinterpret_cast<const float2*>(v.data()) + v.size()));
    float* d_phase = device_alloc<float>(v.size());
    cuda::finish_field(d_field, nullptr, d_phase, nullptr, n, nullptr);
    cuda::check(cudaDeviceSynchronize(), "test sync");
    const auto got = host_copy(d_phase, v.size());
    const auto field_after = host_copy(d_field, v.size());
    cudaFree(d_field);
    cudaFree(d_phase);
    size_t bad = 0;
    for (size_t i = 0; i < v.size(); ++i) {
        const float want = phase_of(v[i].imag(), v[i].real());
        if (!same_float(want, got[i]) && bad++ < 10)
            ADD_FAILURE() << "phase_of(" << v[i].imag() << ", " << v[i].real() << "): cpu " << want << " ("
                          << std::hex << std::bit_cast<uint32_t>(want) << ") gpu " << got[i] << " ("
                          << std::bit_cast<uint32_t>(got[i]) << std::dec << ")";
    }
    EXPECT_EQ(bad, 0u) << "of " << v.size() << " samples";
    EXPECT_TRUE(same_bits(field_after.data(), v.data(), v.size() * sizeof(float2))) << "no reference: field untouched";
}

// Reference division + phase on the device equal divide_by_reference + wrapped_phase.
TEST(CudaHologram, DeviceDivisionAndPhaseEqualCpuBitForBit) {
    SKIP_WITHOUT_GPU();
    Field f = phase_samples(1 << 20), r = phase_samples(1 << 20);
    std::rotate(r.begin(), r.begin() + 11, r.end());
    for (size_t i = 0; i < r.size(); i += 7) r[i] = {0.0f, 0.0f};
    const size_t n = f.size();
    auto as_f2 = [](const Field& x) {
        return std::vector<float2>(reinterpret_cast<const float2*>(x.data()), reinterpret_cast<const float2*>(x.data()) + x.size());
    };
    float2* d_f = device_copy(as_f2(f));
    float2* d_r = device_copy(as_f2(r));
    float* d_phase = device_alloc<float>(n);
    cuda::finish_field(d_f, d_r, d_phase, nullptr, static_cast<int64_t>(n), nullptr);
    cuda::check(cudaDeviceSynchronize(), "test sync");
    const auto gf = host_copy(d_f, n);
    const auto gp = host_copy(d_phase, n);
    cudaFree(d_f);
    cudaFree(d_r);
    cudaFree(d_phase);
    divide_by_reference(f.data(), r.data(), static_cast<int64_t>(n));
    std::vector<float> cp(n);
    wrapped_phase(f.data(), cp.data(), static_cast<int64_t>(n));
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
        if (!(same_float(gf[i].x, f[i].real()) && same_float(gf[i].y, f[i].imag()) && same_float(gp[i], cp[i])) &&
            bad++ < 10)
            ADD_FAILURE() << "sample " << i << ": cpu " << f[i] << " phase " << cp[i] << ", gpu (" << gf[i].x << ","
                          << gf[i].y << ") phase " << gp[i];
    EXPECT_EQ(bad, 0u);
}

// ---------------------------------------------------------------------------------------
// Whole frames against the truth and against the CPU

class CudaHologramAccuracy : public ::testing::TestWithParam<WindowCase> {};

TEST_P(CudaHologramAccuracy, RecoversTheBumpLikeTheCpu) {
    SKIP_WITHOUT_GPU();
    HologramSpec s;
    s.noise = GetParam().noise;
    const SynthHologram h = make_hologram(s);
    HologramParams p;
    p.window = GetParam().window;
    cuda::HologramPlan plan(h.H, h.W);
    const Result g = gpu_run(plan, p, h.intensity);
    const Result c = cpu_run(p, h.intensity, h.H, h.W);
    EXPECT_EQ(g.carrier.row, 128 + 46);
    EXPECT_EQ(g.carrier.col, 128 + 56);
    const double rms = phase_rms(g.phase, h, 16);
    std::printf("[ measured ] GPU, window %s, noise %.1f: phase RMS %.5f rad (CPU %.5f, threshold %.4f)\n",
                GetParam().window == SidebandWindow::kHann ? "hann" : "circular", GetParam().noise, rms,
                phase_rms(c.phase, h, 16), GetParam().max_rms);
    EXPECT_LT(rms, GetParam().max_rms);
    expect_close_to_cpu(g, c, GetParam().window == SidebandWindow::kHann ? "256x256 hann" : "256x256 circular");
}

INSTANTIATE_TEST_SUITE_P(Windows, CudaHologramAccuracy, ::testing::ValuesIn(kWindowCases));

// Odd and rectangular frames (rows and columns never mixed up; the Nyquist column of an
// even width, none for an odd one; prime sides, which cuFFT does by Bluestein), both windows.
// CPU RMS measured (circular / Hann): 181x240 0.0261 / 0.0152, 181x239 0.0261 / 0.0157,
// 127x97 0.0226 / 0.0559 (the taper's bias on a bump of 12 px), 240x181 0.0252 / 0.0153
// -> asserted < 0.029 / 0.017 (0.062 for 127x97).
TEST(CudaHologram, OddAndRectangularFrames) {
    SKIP_WITHOUT_GPU();
    struct Case {
        int64_t H, W, by, bx;
        double max_rms_circular, max_rms_hann;
    };
    for (const Case k : {Case{181, 240, 36, 53, 0.029, 0.017}, Case{181, 239, 36, 53, 0.029, 0.017},
                         Case{127, 97, 23, 21, 0.029, 0.062}, Case{240, 181, 53, 36, 0.029, 0.017}})
        for (SidebandWindow w : {SidebandWindow::kCircular, SidebandWindow::kHann}) {
            HologramSpec s;
            s.H = k.H;
            s.W = k.W;
            s.fy = static_cast<double>(k.by) / static_cast<double>(k.H);
            s.fx = static_cast<double>(k.bx) / static_cast<double>(k.W);
            const SynthHologram h = make_hologram(s);
            HologramParams p;
            p.window = w;
            cuda::HologramPlan plan(h.H, h.W);
            const Result g = gpu_run(plan, p, h.intensity);
            const Result c = cpu_run(p, h.intensity, h.H, h.W);
            const bool hann = w == SidebandWindow::kHann;
            const std::string what = std::to_string(k.H) + "x" + std::to_string(k.W) + (hann ? " hann" : " circular");
            EXPECT_EQ(g.carrier.row, k.H / 2 + k.by) << what;
            EXPECT_EQ(g.carrier.col, k.W / 2 + k.bx) << what;
            const double rms = phase_rms(g.phase, h, 16);
            std::printf("[ measured ] GPU %s: phase RMS %.4f rad (CPU %.4f)\n", what.c_str(), rms,
                        phase_rms(c.phase, h, 16));
            EXPECT_LT(rms, hann ? k.max_rms_hann : k.max_rms_circular) << what;
            expect_close_to_cpu(g, c, what.c_str());
        }
}

// The carrier (0.18, 0.22) cycles/pixel, between bins: the same whole-bin carrier
// and residual tilt as the CPU (measured CPU RMS 0.0263 rad after removing the tilt).
TEST(CudaHologram, CarrierBetweenBins) {
    SKIP_WITHOUT_GPU();
    HologramSpec s;
    s.fy = 0.18;
    s.fx = 0.22;
    const SynthHologram h = make_hologram(s);
    cuda::HologramPlan plan(h.H, h.W);
    const Result g = gpu_run(plan, HologramParams{}, h.intensity);
    const Result c = cpu_run(HologramParams{}, h.intensity, h.H, h.W);
    EXPECT_EQ(g.carrier.row, 128 + 46);
    EXPECT_EQ(g.carrier.col, 128 + 56);
    EXPECT_LT(phase_rms(g.phase, h, 16, s.fy - 46.0 / 256, s.fx - 56.0 / 256), 0.029);
    expect_close_to_cpu(g, c, "carrier between bins");
}

// A given carrier: the detected one given back gives the same bits; the mirrored peak (read
// through the conjugate symmetry) gives -phase; a given filter radius is used as given.
TEST(CudaHologram, GivenCarrier) {
    SKIP_WITHOUT_GPU();
    const SynthHologram h = make_hologram({});
    cuda::HologramPlan plan(h.H, h.W);
    const Result a = gpu_run(plan, HologramParams{}, h.intensity);
    HologramParams given;
    given.carrier = std::pair<int64_t, int64_t>{a.carrier.row, a.carrier.col};
    const Result b = gpu_run(plan, given, h.intensity);
    EXPECT_TRUE(same_bits(a.field.data(), b.field.data(), a.field.size() * sizeof(a.field[0])));
    EXPECT_EQ(b.carrier.row, a.carrier.row);
    EXPECT_EQ(b.carrier.col, a.carrier.col);
    EXPECT_NEAR(b.carrier.magnitude, a.carrier.magnitude, 1e-5 * a.carrier.magnitude);
    EXPECT_GT(a.carrier.magnitude, 0.5 * 256 * 256);

    HologramParams mirror;
    mirror.carrier = std::pair<int64_t, int64_t>{256 - a.carrier.row, 256 - a.carrier.col};
    const Result m = gpu_run(plan, mirror, h.intensity);
    const Result mc = cpu_run(mirror, h.intensity, h.H, h.W);
    double worst = 0;
    for (int64_t r = 16; r < 240; ++r)
        for (int64_t col = 16; col < 240; ++col) {
            const auto i = static_cast<size_t>(r * 256 + col);
            worst = std::max(worst, std::abs(wrap(static_cast<double>(m.phase[i]) + a.phase[i])));
        }
    EXPECT_LT(worst, 1e-4);
    expect_close_to_cpu(m, mc, "mirrored given carrier");

    HologramParams radius = given;
    radius.filter_radius = 10.5;
    radius.window = SidebandWindow::kHann;
    const Result gr = gpu_run(plan, radius, h.intensity);
    EXPECT_EQ(gr.radius, 10.5);
    expect_close_to_cpu(gr, cpu_run(radius, h.intensity, h.H, h.W), "given carrier and radius 10.5, hann");
}

// The errors of tessera::demodulate, thrown before anything is enqueued (the plan stays usable).
TEST(CudaHologram, BadCarrierAndDcRadiusThrow) {
    SKIP_WITHOUT_GPU();
    cuda::HologramPlan plan(8, 8);
    const std::vector<float> I(64, 1.0f);
    std::vector<std::complex<float>> out(64);
    HologramParams p;
    p.carrier = std::pair<int64_t, int64_t>{8, 0};
    EXPECT_THROW(cuda::demodulate(plan, p, I.data(), out.data()), std::invalid_argument);
    p.carrier = std::pair<int64_t, int64_t>{0, -1};
    EXPECT_THROW(cuda::demodulate(plan, p, I.data(), out.data()), std::invalid_argument);
    HologramParams all;
    all.dc_exclusion = 1000;
    EXPECT_THROW(cuda::demodulate(plan, all, I.data(), out.data()), std::invalid_argument);
    EXPECT_THROW(plan.enqueue(HologramParams{}, true), std::logic_error) << "division without a reference";
    EXPECT_THROW(cuda::HologramPlan(1, 8), std::invalid_argument);
    // Still usable after the throws.
    const CarrierPeak c = cuda::demodulate(plan, HologramParams{}, I.data(), out.data());
    EXPECT_GE(c.row, 0);
    EXPECT_LT(c.row, 8);
}

// Parasitic low-frequency fringes stronger than the carrier: the DC exclusion keeps them
// out; with a small exclusion they win on the GPU as on the CPU.
TEST(CudaHologram, DcExclusionAsTheCpu) {
    SKIP_WITHOUT_GPU();
    HologramSpec s;
    s.parasitic = 3.0;
    const SynthHologram h = make_hologram(s);
    cuda::HologramPlan plan(h.H, h.W);
    const Result g = gpu_run(plan, HologramParams{}, h.intensity);
    EXPECT_EQ(g.carrier.row, 128 + 46);
    EXPECT_EQ(g.carrier.col, 128 + 56);
    HologramParams tiny;
    tiny.dc_exclusion = 4.0;
    const Result w = gpu_run(plan, tiny, h.intensity);
    EXPECT_EQ(w.carrier.row, 128 + 8);
    EXPECT_EQ(w.carrier.col, 128);
}

// Fringes along the rows only: of the two mirrored peaks on the centre column, the one with
// row frequency > 0 (as the CPU).
TEST(CudaHologram, CentreColumnCarrierTakesPositiveRowFrequency) {
    SKIP_WITHOUT_GPU();
    const int64_t H = 64, W = 48;
    std::vector<float> I(static_cast<size_t>(H * W));
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c)
            I[static_cast<size_t>(r * W + c)] =
                static_cast<float>(2.0 + std::cos(2 * kPi * 13.0 * static_cast<double>(r) / static_cast<double>(H)));
    cuda::HologramPlan plan(H, W);
    const Result g = gpu_run(plan, HologramParams{}, I);
    EXPECT_EQ(g.carrier.row, H / 2 + 13);
    EXPECT_EQ(g.carrier.col, W / 2);
}

// The device's carrier search on crafted half spectra, the very arrays find_carrier scans:
// values from a small set (many exact ties of |F|^2, also between (a, b) and (b, a)), NaN
// and infinities, even and odd sizes, several DC radii. Same bin as the CPU every time:
// ties to the smallest shifted index, NaN never, one bin of each self-conjugate pair.
TEST(CudaHologram, CarrierSearchEqualsFindCarrierOnCraftedSpectra) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 rng(99);
    int cases = 0;
    for (auto [H, W] : kCraftSizes)
        for (int variant = 0; variant < 6; ++variant) {
            HologramPlan cpu(H, W);
            craft_spectrum(cpu, variant, rng);
            const int64_t nh = H * cpu.half_cols();
            std::vector<float2> h2(static_cast<size_t>(nh));
            std::memcpy(static_cast<void*>(h2.data()), cpu.spectrum(), h2.size() * sizeof(float2));
            float2* d_half = device_copy(h2);
            auto* d_car = device_alloc<cuda::DeviceCarrier>(1);
            const double edge = std::sqrt(static_cast<double>((H / 2) * (H / 2) + (W / 2) * (W / 2)));
            for (double dc : {0.25, 1.0, 2.5, edge * 0.7}) {
                if (cuda::carrier_search_is_empty(H, W, dc)) continue;
                cuda::check(cudaMemset(d_car, 0, sizeof(cuda::DeviceCarrier)), "test memset");
                cuda::carrier_search(d_half, H, W, dc * dc, &d_car->key, nullptr);
                cuda::carrier_finish(d_half, H, W, true, -1, -1, 0.0, d_car, nullptr);
                cuda::DeviceCarrier got;
                cuda::check(cudaMemcpy(&got, d_car, sizeof(got), cudaMemcpyDeviceToHost), "test download");
                CarrierPeak want{-1, -1, 0};  // every searched bin NaN: none on either side
                try {
                    want = find_carrier(cpu, dc);
                } catch (const std::invalid_argument&) {
                }
                EXPECT_EQ(got.row, want.row) << H << "x" << W << " variant " << variant << " dc " << dc;
                EXPECT_EQ(got.col, want.col) << H << "x" << W << " variant " << variant << " dc " << dc;
                if (got.row >= 0 && want.row >= 0) {
                    EXPECT_EQ(std::sqrt(static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(got.key >> 32)))),
                              want.magnitude);
                    const std::complex<float> b = cpu.bin(want.row - H / 2, want.col - W / 2);
                    EXPECT_TRUE(same_float(got.re, b.real()) && same_float(got.im, b.imag())) << "spectrum value";
                    EXPECT_EQ(got.radius, filter_radius(HologramParams{}, H, W, want));
                }
                ++cases;
            }
            cudaFree(d_half);
            cudaFree(d_car);
        }
    EXPECT_GT(cases, 150);
}

// The reference hologram's field kept on the device removes an aberration (8 rad at the
// corners) as on the CPU (measured there: 1.575 rad RMS without; with: 0.0331 circular,
// 0.0154 Hann -> asserted < 0.037, < 0.017).
TEST(CudaHologram, ReferenceDivisionOnTheDevice) {
    SKIP_WITHOUT_GPU();
    HologramSpec s;
    s.aberration = 8.0;
    const SynthHologram obj = make_hologram(s);
    HologramSpec rs = s;
    rs.object = false;
    rs.seed = 2;
    const SynthHologram ref = make_hologram(rs);
    for (SidebandWindow w : {SidebandWindow::kCircular, SidebandWindow::kHann}) {
        cuda::HologramPlan plan(obj.H, obj.W);
        HologramParams p;
        p.window = w;
        const Result rf = gpu_run(plan, p, ref.intensity);  // detected on the reference
        plan.keep_field_as_reference();
        p.carrier = std::pair<int64_t, int64_t>{rf.carrier.row, rf.carrier.col};
        const Result before = gpu_run(plan, p, obj.intensity, false);
        const Result after = gpu_run(plan, p, obj.intensity, true);
        const char* what = w == SidebandWindow::kHann ? "reference division, hann" : "reference division, circular";
        std::printf("[ measured ] GPU %s: RMS %.3f rad without division, %.4f rad with\n", what,
                    phase_rms(before.phase, obj, 16), phase_rms(after.phase, obj, 16));
        EXPECT_GT(phase_rms(before.phase, obj, 16), 1.0);
        EXPECT_LT(phase_rms(after.phase, obj, 16), w == SidebandWindow::kHann ? 0.017 : 0.037);
        const Result cref = cpu_run(p, ref.intensity, ref.H, ref.W);
        const Result cafter = cpu_run(p, obj.intensity, obj.H, obj.W, &cref.field);
        expect_close_to_cpu(after, cafter, what);
        // A reference set from the host (the CPU's field) divides the same way.
        plan.set_reference(cref.field.data());
        const Result host_ref = gpu_run(plan, p, obj.intensity, true);
        expect_close_to_cpu(host_ref, cafter, "reference set from the host");
        plan.clear_reference();
        EXPECT_FALSE(plan.has_reference());
    }
}

// Determinism: a frame gives the same bits first, after another frame, in a fresh plan, on
// a plan with a caller's stream, and through the host-to-host helpers.
TEST(CudaHologram, RepeatedFramesAreBitIdentical) {
    SKIP_WITHOUT_GPU();
    HologramSpec sa, sb;
    sb.seed = 7;
    sb.bump = -2.0;
    sb.fx = 60.0 / 256;
    const SynthHologram a = make_hologram(sa), b = make_hologram(sb);
    HologramParams p;
    p.window = SidebandWindow::kHann;
    cuda::HologramPlan plan(a.H, a.W);
    const Result a1 = gpu_run(plan, p, a.intensity);
    const Result b1 = gpu_run(plan, p, b.intensity);
    const Result a2 = gpu_run(plan, p, a.intensity);
    cudaStream_t s = nullptr;
    cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "test stream");
    Result a3;
    {
        cuda::HologramPlan fresh(a.H, a.W, s);
        a3 = gpu_run(fresh, p, a.intensity);
    }
    cuda::check(cudaStreamDestroy(s), "test stream destroy");
    const size_t fb = a1.field.size() * sizeof(a1.field[0]), pb = a1.phase.size() * sizeof(float);
    EXPECT_TRUE(same_bits(a1.field.data(), a2.field.data(), fb));
    EXPECT_TRUE(same_bits(a1.phase.data(), a2.phase.data(), pb));
    EXPECT_TRUE(same_bits(a1.amplitude.data(), a2.amplitude.data(), pb));
    EXPECT_TRUE(same_bits(a1.field.data(), a3.field.data(), fb)) << "a fresh plan of the same size";
    EXPECT_TRUE(same_bits(a1.phase.data(), a3.phase.data(), pb)) << "a fresh plan of the same size";
    EXPECT_FALSE(same_bits(a1.field.data(), b1.field.data(), fb));
    EXPECT_EQ(b1.carrier.col, 128 + 60);
    // The host-to-host helpers run the same stages.
    Field f(a1.field.size());
    const CarrierPeak c = cuda::demodulate(plan, p, a.intensity.data(), f.data());
    EXPECT_EQ(c.row, a1.carrier.row);
    EXPECT_TRUE(same_bits(f.data(), a1.field.data(), fb));
    std::vector<float> ph(a1.phase.size());
    const cuda::HologramFrameInfo fi = cuda::demodulate_phase(plan, p, a.intensity.data(), ph.data());
    EXPECT_EQ(fi.carrier.col, a1.carrier.col);
    EXPECT_TRUE(same_bits(ph.data(), a1.phase.data(), pb));
}

// The frames-benchmark pattern: several plans, one per stream, fed round-robin from one
// thread from pinned buffers with no synchronisation until the end; every frame's phase
// equals the one-at-a-time result, bit for bit.
TEST(CudaHologram, PlansOnSeveralStreamsInterleaved) {
    SKIP_WITHOUT_GPU();
    const int64_t H = 200, W = 256;
    constexpr int kStreams = 3, kFrames = 9;
    std::vector<SynthHologram> frames;
    for (int i = 0; i < kFrames; ++i) {
        HologramSpec s;
        s.H = H;
        s.W = W;
        s.fy = (40.0 + i) / static_cast<double>(H);
        s.seed = 100 + static_cast<uint64_t>(i);
        s.bump = 1.0 + 0.3 * i;
        frames.push_back(make_hologram(s));
    }
    const auto n = static_cast<size_t>(H * W);
    float* pinned_in = nullptr;
    float* pinned_out = nullptr;
    cuda::check(cudaMallocHost(reinterpret_cast<void**>(&pinned_in), kFrames * n * sizeof(float)), "pinned in");
    cuda::check(cudaMallocHost(reinterpret_cast<void**>(&pinned_out), kFrames * n * sizeof(float)), "pinned out");
    for (int i = 0; i < kFrames; ++i)
        std::memcpy(pinned_in + i * n, frames[static_cast<size_t>(i)].intensity.data(), n * sizeof(float));
    HologramParams p;
    {
        std::vector<cuda::HologramPlan> plans;
        plans.reserve(kStreams);
        for (int k = 0; k < kStreams; ++k) plans.emplace_back(H, W);
        for (int i = 0; i < kFrames; ++i) {
            cuda::HologramPlan& pl = plans[static_cast<size_t>(i % kStreams)];
            pl.upload(pinned_in + i * n);
            pl.enqueue(p);
            pl.download(pinned_out + i * n);
        }
        for (auto& pl : plans) pl.synchronize();
    }
    cuda::HologramPlan one(H, W);
    for (int i = 0; i < kFrames; ++i) {
        const Result r = gpu_run(one, p, frames[static_cast<size_t>(i)].intensity);
        EXPECT_TRUE(same_bits(r.phase.data(), pinned_out + i * n, n * sizeof(float))) << "frame " << i;
        EXPECT_EQ(r.carrier.row, H / 2 + 40 + i) << "frame " << i;
    }
    cudaFreeHost(pinned_in);
    cudaFreeHost(pinned_out);
}

// ---------------------------------------------------------------------------------------
// The backend behind `tessera hologram` / `unwrap --from-hologram`

void write_f32(const std::string& path, int64_t rows, int64_t cols, const std::vector<float>& v) {
    GeoRef geo;
    geo.compress = false;
    write_geotiff_f32(path, rows, cols, v.data(), geo, std::nullopt);
}

// HologramDemodulator on the CUDA backend: the CPU backend's carrier and radius, its phase
// within the bound, with and without a reference hologram (CPU RMS with it: 0.0151 rad).
TEST(CudaHologram, DemodulatorBackendsAgree) {
    SKIP_WITHOUT_GPU();
    TempDir dir("cuda_hologram");
    HologramSpec s;
    s.aberration = 6.0;
    const SynthHologram obj = make_hologram(s);
    HologramSpec rs = s;
    rs.object = false;
    rs.seed = 3;
    const SynthHologram ref = make_hologram(rs);
    write_f32(dir / "obj.tif", obj.H, obj.W, obj.intensity);
    write_f32(dir / "ref.tif", ref.H, ref.W, ref.intensity);
    for (const std::string& reference : {std::string(), dir / "ref.tif"}) {
        HologramParams p;
        p.window = SidebandWindow::kHann;
        HologramDemodulator cpu(p, reference, 1, Backend::kCpu);
        HologramDemodulator gpu(p, reference, 1, Backend::kCuda, 0);
        HologramDemodulator::Frame fc, fg;
        cpu.run(dir / "obj.tif", fc, true);
        gpu.run(dir / "obj.tif", fg, true);
        const std::string what = reference.empty() ? "demodulator, no reference" : "demodulator, reference";
        Result c{fc.carrier, fc.filter_radius, {}, fc.phase, fc.amplitude};
        Result g{fg.carrier, fg.filter_radius, {}, fg.phase, fg.amplitude};
        expect_close_to_cpu(g, c, what.c_str());
        if (!reference.empty()) {
            EXPECT_LT(phase_rms(fg.phase, obj, 16), 0.017);
        }
    }
}

// run_hologram with backend kCuda writes what the CPU backend writes, within the bound.
TEST(CudaHologram, HologramCommandOnTheGpu) {
    SKIP_WITHOUT_GPU();
    TempDir dir("cuda_hologram_cmd");
    const SynthHologram h = make_hologram({});
    write_f32(dir / "h.tif", h.H, h.W, h.intensity);
    HologramRunOptions o;
    o.inputs = {dir / "h.tif"};
    o.quiet = true;
    o.output = dir / "cpu.tif";
    const HologramRunReport rc = run_hologram(o, MPI_COMM_WORLD);
    o.output = dir / "gpu.tif";
    o.backend = Backend::kCuda;
    const HologramRunReport rg = run_hologram(o, MPI_COMM_WORLD);
    ASSERT_EQ(rc.frames.size(), 1u);
    ASSERT_EQ(rg.frames.size(), 1u);
    EXPECT_EQ(rg.frames[0].carrier.row, rc.frames[0].carrier.row);
    EXPECT_EQ(rg.frames[0].carrier.col, rc.frames[0].carrier.col);
    EXPECT_EQ(rg.frames[0].filter_radius, rc.frames[0].filter_radius);
    std::vector<float> pc(static_cast<size_t>(h.H * h.W)), pg(pc.size());
    for (auto [path, v] : {std::pair{dir / "cpu.tif", &pc}, std::pair{dir / "gpu.tif", &pg}}) {
        RasterReader r(path, 1);
        r.read_float(Window{0, 0, h.H, h.W}, v->data(), h.W);
    }
    const Diff d = phase_diff(pg, pc);
    EXPECT_LT(d.rms, kMaxRmsVsCpu);
    EXPECT_LT(d.max, kMaxVsCpu);
}

}  // namespace
}  // namespace tessera
