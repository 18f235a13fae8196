// Off-axis hologram demodulation, CPU backend (FFTW single precision); see kernels/hologram.h.

// The phase loop vectorises only when comparisons may be evaluated unconditionally: no
// trapping math (this changes no value: FP exceptions are not trapped here anyway). Before
// every include, so that the inlined <cmath> helpers are compiled the same way.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "kernels/hologram.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <numbers>
#include <stdexcept>
#include <string>

namespace tessera {

namespace {

// FFTW's planner (plan creation and destruction) is not thread-safe; execution is.
std::mutex& planner_mutex() {
    static std::mutex m;
    return m;
}

int64_t mod(int64_t a, int64_t n) {
    const int64_t r = a % n;
    return r < 0 ? r + n : r;
}

// Signed frequency of unshifted index i of an axis of n bins: [-n/2, (n-1)/2].
int64_t signed_freq(int64_t i, int64_t n) { return i <= (n - 1) / 2 ? i : i - n; }

}  // namespace

void check_hologram_size(int64_t rows, int64_t cols) {
    if (rows < 2 || cols < 2)
        throw std::invalid_argument("hologram of " + std::to_string(cols) + "x" + std::to_string(rows) +
                                    " (cols x rows); at least 2x2 is needed");
    if (rows > std::numeric_limits<int>::max() / 2 || cols > std::numeric_limits<int>::max() / 2 ||
        rows * cols > std::numeric_limits<int>::max())
        throw std::invalid_argument("hologram too large for one FFT");
}

HologramPlan::HologramPlan(int64_t rows, int64_t cols) : rows_(rows), cols_(cols) {
    check_hologram_size(rows, cols);
    const auto n = static_cast<size_t>(rows * cols);
    const auto nh = static_cast<size_t>(rows * half_cols());
    const int H = static_cast<int>(rows), W = static_cast<int>(cols);
    std::lock_guard<std::mutex> lock(planner_mutex());
    in_ = fftwf_alloc_real(n);
    half_ = reinterpret_cast<std::complex<float>*>(fftwf_alloc_complex(nh));
    full_ = reinterpret_cast<std::complex<float>*>(fftwf_alloc_complex(n));
    if (in_ && half_ && full_) {
        // FFTW_ESTIMATE: the algorithm depends on sizes and flags only (never on timings),
        // so every plan of a size computes bit-identical transforms (header note).
        fwd_ = fftwf_plan_dft_r2c_2d(H, W, in_, reinterpret_cast<fftwf_complex*>(half_), FFTW_ESTIMATE);
        auto* f = reinterpret_cast<fftwf_complex*>(full_);
        rows_plan_ = fftwf_plan_many_dft(1, &W, H, f, nullptr, 1, W, f, nullptr, 1, W, FFTW_BACKWARD, FFTW_ESTIMATE);
    }
    if (!fwd_ || !rows_plan_) {
        if (fwd_) fftwf_destroy_plan(static_cast<fftwf_plan>(fwd_));
        if (rows_plan_) fftwf_destroy_plan(static_cast<fftwf_plan>(rows_plan_));
        fftwf_free(in_);
        fftwf_free(half_);
        fftwf_free(full_);
        if (!in_ || !half_ || !full_) throw std::bad_alloc();
        throw std::runtime_error("FFTW could not plan a " + std::to_string(cols) + "x" + std::to_string(rows) +
                                 " transform");
    }
}

HologramPlan::~HologramPlan() {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftwf_destroy_plan(static_cast<fftwf_plan>(fwd_));
    fftwf_destroy_plan(static_cast<fftwf_plan>(rows_plan_));
    if (band_plan_) fftwf_destroy_plan(static_cast<fftwf_plan>(band_plan_));
    fftwf_free(in_);
    fftwf_free(half_);
    fftwf_free(full_);
    fftwf_free(band_data_);
}

void HologramPlan::forward(const float* intensity) {
    std::memcpy(in_, intensity, static_cast<size_t>(rows_ * cols_) * sizeof(float));
    fftwf_execute(static_cast<fftwf_plan>(fwd_));
}

// The compact band array and its plan, made once per band width (normally once).
void HologramPlan::prepare_band(int64_t width) {
    if (width == band_) return;
    std::lock_guard<std::mutex> lock(planner_mutex());
    if (band_plan_) fftwf_destroy_plan(static_cast<fftwf_plan>(band_plan_));
    fftwf_free(band_data_);
    band_plan_ = nullptr;
    band_ = 0;
    band_data_ = reinterpret_cast<std::complex<float>*>(fftwf_alloc_complex(static_cast<size_t>(width * rows_)));
    if (!band_data_) throw std::bad_alloc();
    const int H = static_cast<int>(rows_);
    auto* b = reinterpret_cast<fftwf_complex*>(band_data_);
    band_plan_ = fftwf_plan_many_dft(1, &H, static_cast<int>(width), b, nullptr, 1, H, b, nullptr, 1, H,
                                     FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!band_plan_) throw std::runtime_error("FFTW could not plan the sideband transform");
    band_ = width;
}

void HologramPlan::synthesise(const CarrierPeak& carrier, double radius, SidebandWindow window) {
    const int64_t H = rows_, W = cols_;
    const int64_t cy = carrier.row - H / 2, cx = carrier.col - W / 2;
    const auto Ri = static_cast<int64_t>(std::floor(radius));
    const int64_t B = 2 * Ri + 1;  // < min(H, W): filter_radius() caps the radius
    prepare_band(B);
    const double R2 = radius * radius;
    const float scale = 1.0f / static_cast<float>(H * W);  // FFTW transforms are unnormalised
    const bool hann = window == SidebandWindow::kHann;
    std::complex<float>* band = band_data_;
    // Column j of the band is the spectral column kx = j - Ri (centred on the carrier),
    // a contiguous vector over ky (index ky mod H). Each entry is written by one (j, dy):
    // the result does not depend on the number of threads.
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < B; ++j) {
        std::complex<float>* col = band + j * H;
        std::memset(static_cast<void*>(col), 0, static_cast<size_t>(H) * sizeof(*col));
        const int64_t dx = j - Ri;
        for (int64_t dy = -Ri; dy <= Ri; ++dy) {
            const double d2 = static_cast<double>(dy * dy + dx * dx);
            if (d2 > R2) continue;
            float w = scale;
            if (hann) w = static_cast<float>(0.5 * (1.0 + std::cos(std::numbers::pi * std::sqrt(d2) / radius))) * scale;
            col[mod(dy, H)] = bin(cy + dy, cx + dx) * w;
        }
    }
    // Inverse along ky for the band's columns (contiguous), then scatter them into the
    // rows of the full array (zero elsewhere) and inverse along kx for every row.
    fftwf_execute(static_cast<fftwf_plan>(band_plan_));
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < H; ++y) {
        std::complex<float>* row = full_ + y * W;
        std::memset(static_cast<void*>(row), 0, static_cast<size_t>(W) * sizeof(*row));
        for (int64_t j = 0; j < B; ++j) row[mod(j - Ri, W)] = band[j * H + y];
    }
    fftwf_execute(static_cast<fftwf_plan>(rows_plan_));
}

std::complex<float> HologramPlan::bin(int64_t ky, int64_t kx) const {
    ky = mod(ky, rows_);
    kx = mod(kx, cols_);
    const int64_t hc = half_cols();
    if (kx < hc) return half_[ky * hc + kx];
    // Real input: F(-k) = conj(F(k)).
    return std::conj(half_[mod(-ky, rows_) * hc + (cols_ - kx)]);
}

double dc_exclusion_radius(const HologramParams& p, int64_t rows, int64_t cols) {
    return p.dc_exclusion > 0 ? p.dc_exclusion : static_cast<double>(std::min(rows, cols)) / 16.0;
}

double filter_radius(const HologramParams& p, int64_t rows, int64_t cols, const CarrierPeak& carrier) {
    const double ky = static_cast<double>(carrier.row - rows / 2), kx = static_cast<double>(carrier.col - cols / 2);
    double r = p.filter_radius > 0 ? p.filter_radius : std::sqrt(ky * ky + kx * kx) / 3.0;
    // Below half the smaller side, so that the disc never covers a bin twice.
    const double cap = static_cast<double>(std::min(rows, cols)) / 2.0 - 1.0;
    return std::max(std::min(r, cap), 0.5);
}

CarrierPeak find_carrier(const HologramPlan& plan, double dc_exclusion) {
    const int64_t H = plan.rows(), W = plan.cols(), hc = plan.half_cols();
    const std::complex<float>* F = plan.spectrum();
    const double dc2 = dc_exclusion * dc_exclusion;
    float best = -1.0f;
    int64_t best_row = -1, best_col = -1;
    for (int64_t iy = 0; iy < H; ++iy) {
        const int64_t ky = signed_freq(iy, H);
        for (int64_t ix = 0; ix < hc; ++ix) {
            // Self-conjugate columns (zero frequency, and Nyquist for an even width):
            // keep one bin of each mirrored pair, the one with row frequency >= 0.
            const bool self_conjugate = ix == 0 || (W % 2 == 0 && ix == W / 2);
            if (self_conjugate && iy > mod(-iy, H)) continue;
            const int64_t kx = signed_freq(ix, W);
            if (static_cast<double>(ky * ky + kx * kx) <= dc2) continue;
            const float m = std::norm(F[iy * hc + ix]);
            const int64_t row = ky + H / 2, col = kx + W / 2;
            if (m > best || (m == best && row * W + col < best_row * W + best_col)) {
                best = m;
                best_row = row;
                best_col = col;
            }
        }
    }
    if (best_row < 0)
        throw std::invalid_argument("DC exclusion radius " + std::to_string(dc_exclusion) +
                                    " leaves no frequency to search for the carrier");
    return CarrierPeak{best_row, best_col, std::sqrt(static_cast<double>(best))};
}

CarrierPeak detect_carrier(HologramPlan& plan, const float* intensity, const HologramParams& p) {
    plan.forward(intensity);
    return find_carrier(plan, dc_exclusion_radius(p, plan.rows(), plan.cols()));
}

CarrierPeak demodulate(HologramPlan& plan, const HologramParams& p, const float* intensity,
                       std::complex<float>* field_out) {
    const int64_t H = plan.rows(), W = plan.cols();
    plan.forward(intensity);
    CarrierPeak c;
    if (p.carrier) {
        c.row = p.carrier->first;
        c.col = p.carrier->second;
        if (c.row < 0 || c.row >= H || c.col < 0 || c.col >= W)
            throw std::invalid_argument("carrier (" + std::to_string(c.row) + ", " + std::to_string(c.col) +
                                        ") is outside the " + std::to_string(H) + "x" + std::to_string(W) +
                                        " (rows x cols) spectrum");
        c.magnitude = std::abs(plan.bin(c.row - H / 2, c.col - W / 2));
    } else {
        c = find_carrier(plan, dc_exclusion_radius(p, H, W));
    }
    plan.synthesise(c, filter_radius(p, H, W, c), p.window);
    if (field_out != plan.field())
        std::memcpy(static_cast<void*>(field_out), plan.field(), static_cast<size_t>(H * W) * sizeof(*field_out));
    return c;
}

void divide_by_reference(std::complex<float>* field, const std::complex<float>* ref, int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float a = field[i].real(), b = field[i].imag(), c = ref[i].real(), d = ref[i].imag();
        const float m = c * c + d * d;
        if (m == 0.0f) {
            field[i] = {0.0f, 0.0f};
            continue;
        }
        field[i] = {(a * c + b * d) / m, (b * c - a * d) / m};
    }
}

namespace {

// atan2 in float: octant reduction to a in [0, 1], Cephes' atanf (reduction by tan(pi/8),
// degree-9 odd polynomial), then the octant undone. Plain float operations in a fixed
// order, no libm: the same bits everywhere, and the loop below vectorises.
inline float fast_phase(float im, float re) {
    constexpr float pi = std::numbers::pi_v<float>;
    constexpr float pi_2 = std::numbers::pi_v<float> / 2;
    constexpr float pi_4 = std::numbers::pi_v<float> / 4;
    // Every operation is evaluated unconditionally and merged by selects, so that the loop
    // below has no control flow (and no conditional division) and vectorises.
    const float ax = std::fabs(re), ay = std::fabs(im);
    const float mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
    const float q = mn / mx;
    const float a = mx == 0.0f ? 0.0f : q;  // [0, 1]; NaN stays NaN
    const bool big = a > 0.41421356f;  // tan(pi/8)
    const float tb = (a - 1.0f) / (a + 1.0f);
    const float t = big ? tb : a;
    const float z = t * t;
    float r = ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) * z) *
                  t + t;
    r = big ? r + pi_4 : r;
    r = ay > ax ? pi_2 - r : r;
    r = std::signbit(re) ? pi - r : r;
    r = std::signbit(im) ? -r : r;
    r = r >= pi ? -pi : r;  // [-pi, pi)
    // A NaN component gives NaN: the octant rules would read the NaN's sign bit, which x86
    // and CUDA set differently for the same invalid operation.
    return (re != re || im != im) ? std::numeric_limits<float>::quiet_NaN() : r;
}

}  // namespace

float phase_of(float im, float re) { return fast_phase(im, re); }

void wrapped_phase(const std::complex<float>* field, float* phase, int64_t n) {
    const float* f = reinterpret_cast<const float*>(field);
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) phase[i] = fast_phase(f[2 * i + 1], f[2 * i]);
}

void field_amplitude(const std::complex<float>* field, float* amplitude, int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) amplitude[i] = std::abs(field[i]);
}

}  // namespace tessera
