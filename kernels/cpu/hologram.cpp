// Off-axis hologram demodulation, CPU backend (FFTW single precision); see kernels/hologram.h.
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

HologramPlan::HologramPlan(int64_t rows, int64_t cols) : rows_(rows), cols_(cols) {
    if (rows < 2 || cols < 2)
        throw std::invalid_argument("hologram of " + std::to_string(cols) + "x" + std::to_string(rows) +
                                    " (cols x rows); at least 2x2 is needed");
    if (rows > std::numeric_limits<int>::max() || cols > std::numeric_limits<int>::max())
        throw std::invalid_argument("hologram too large for one FFT");
    const auto n = static_cast<size_t>(rows * cols);
    const auto nh = static_cast<size_t>(rows * half_cols());
    std::lock_guard<std::mutex> lock(planner_mutex());
    in_ = fftwf_alloc_real(n);
    half_ = reinterpret_cast<std::complex<float>*>(fftwf_alloc_complex(nh));
    full_ = reinterpret_cast<std::complex<float>*>(fftwf_alloc_complex(n));
    if (!in_ || !half_ || !full_) {
        fftwf_free(in_);
        fftwf_free(half_);
        fftwf_free(full_);
        throw std::bad_alloc();
    }
    // FFTW_ESTIMATE: the algorithm depends on sizes and flags only (never on timings),
    // so every plan of a size computes bit-identical transforms (header note).
    fwd_ = fftwf_plan_dft_r2c_2d(static_cast<int>(rows), static_cast<int>(cols), in_,
                                 reinterpret_cast<fftwf_complex*>(half_), FFTW_ESTIMATE);
    inv_ = fftwf_plan_dft_2d(static_cast<int>(rows), static_cast<int>(cols), reinterpret_cast<fftwf_complex*>(full_),
                             reinterpret_cast<fftwf_complex*>(full_), FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!fwd_ || !inv_) {
        if (fwd_) fftwf_destroy_plan(static_cast<fftwf_plan>(fwd_));
        if (inv_) fftwf_destroy_plan(static_cast<fftwf_plan>(inv_));
        fftwf_free(in_);
        fftwf_free(half_);
        fftwf_free(full_);
        throw std::runtime_error("FFTW could not plan a " + std::to_string(cols) + "x" + std::to_string(rows) +
                                 " transform");
    }
}

HologramPlan::~HologramPlan() {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftwf_destroy_plan(static_cast<fftwf_plan>(fwd_));
    fftwf_destroy_plan(static_cast<fftwf_plan>(inv_));
    fftwf_free(in_);
    fftwf_free(half_);
    fftwf_free(full_);
}

void HologramPlan::forward(const float* intensity) {
    std::memcpy(in_, intensity, static_cast<size_t>(rows_ * cols_) * sizeof(float));
    fftwf_execute(static_cast<fftwf_plan>(fwd_));
}

void HologramPlan::inverse() { fftwf_execute(static_cast<fftwf_plan>(inv_)); }

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
    const int64_t cy = c.row - H / 2, cx = c.col - W / 2;
    const double R = filter_radius(p, H, W, c);
    const auto Ri = static_cast<int64_t>(std::floor(R));
    const double R2 = R * R;
    const float scale = 1.0f / static_cast<float>(H * W);  // FFTW transforms are unnormalised
    const bool hann = p.window == SidebandWindow::kHann;

    std::complex<float>* G = plan.field();
    std::memset(static_cast<void*>(G), 0, static_cast<size_t>(H * W) * sizeof(std::complex<float>));
    // The disc around the carrier, moved to the zero frequency. Each output bin is written
    // by exactly one (dy, dx): the result does not depend on the number of threads.
#pragma omp parallel for schedule(static)
    for (int64_t dy = -Ri; dy <= Ri; ++dy) {
        for (int64_t dx = -Ri; dx <= Ri; ++dx) {
            const double d2 = static_cast<double>(dy * dy + dx * dx);
            if (d2 > R2) continue;
            float w = scale;
            if (hann) w = static_cast<float>(0.5 * (1.0 + std::cos(std::numbers::pi * std::sqrt(d2) / R))) * scale;
            G[mod(dy, H) * W + mod(dx, W)] = plan.bin(cy + dy, cx + dx) * w;
        }
    }
    plan.inverse();
    if (field_out != G) std::memcpy(static_cast<void*>(field_out), G, static_cast<size_t>(H * W) * sizeof(*G));
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

void wrapped_phase(const std::complex<float>* field, float* phase, int64_t n) {
    constexpr float pi = std::numbers::pi_v<float>;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float p = std::atan2(field[i].imag(), field[i].real());
        phase[i] = p >= pi ? -pi : p;
    }
}

void field_amplitude(const std::complex<float>* field, float* amplitude, int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) amplitude[i] = std::abs(field[i]);
}

}  // namespace tessera
