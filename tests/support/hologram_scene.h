// Test support: a synthetic off-axis hologram I = |R + O|^2 + noise of a known phase object
// (tests/kernels/test_hologram.cpp measured the CPU backend on it; tests/gpu/test_cuda_hologram.cpp
// holds the CUDA backend to the same numbers), and the phase error against its truth.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <vector>

#include "kernels/hologram.h"

namespace tessera::testing {

inline constexpr double kPi = std::numbers::pi;

// Deterministic standard normal numbers (splitmix64 + Box-Muller).
class Gauss {
public:
    explicit Gauss(uint64_t seed) : s_(seed) {}
    double next() {
        const double u1 = (static_cast<double>(bits() >> 11) + 0.5) / 9007199254740992.0;
        const double u2 = static_cast<double>(bits() >> 11) / 9007199254740992.0;
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
    }

private:
    uint64_t bits() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t s_;
};

struct SynthHologram {
    int64_t H = 0, W = 0;
    double fy = 0, fx = 0;       // carrier, cycles per pixel (row, column)
    std::vector<double> phase;   // object phase (truth)
    std::vector<float> intensity;
};

struct HologramSpec {
    int64_t H = 256, W = 256;
    double fy = 46.0 / 256, fx = 56.0 / 256;  // ~(0.18, 0.22) cycles/pixel, on whole bins
    double bump = 3.0;                        // radians at the centre of the Gaussian bump
    double bump_sigma = 0;                    // pixels; 0 = min(H, W) / 8
    double noise = 0.2;                       // intensity noise sigma (mean intensity 2)
    double aberration = 0;                    // quadratic phase of the reference beam, rad at the corners
    bool object = true;                       // false: a reference hologram (no sample, O = 1)
    double parasitic = 0;                     // amplitude of parasitic fringes, 8 cycles along the rows
    uint64_t seed = 1;
};

// Reference R = exp(-i (2 pi (fx c + fy r) + aberration)), object O = a exp(i phi) with a
// smooth amplitude a in [0.9, 1.1] and phi a Gaussian bump of `bump` radians.
// I = |R + O|^2 (+ parasitic low-frequency fringes) + noise. The +1 order (column frequency > 0) holds R* O.
inline SynthHologram make_hologram(const HologramSpec& s) {
    SynthHologram h;
    h.H = s.H;
    h.W = s.W;
    h.fy = s.fy;
    h.fx = s.fx;
    h.phase.resize(static_cast<size_t>(s.H * s.W));
    h.intensity.resize(h.phase.size());
    Gauss g(s.seed);
    const double sig = s.bump_sigma > 0 ? s.bump_sigma : static_cast<double>(std::min(s.H, s.W)) / 8.0;
    const double r0 = 0.45 * static_cast<double>(s.H), c0 = 0.55 * static_cast<double>(s.W);
    const double rc = 0.5 * static_cast<double>(s.H - 1), cc = 0.5 * static_cast<double>(s.W - 1);
    const double corner2 = rc * rc + cc * cc;
    for (int64_t r = 0; r < s.H; ++r)
        for (int64_t c = 0; c < s.W; ++c) {
            const auto i = static_cast<size_t>(r * s.W + c);
            const double dr = static_cast<double>(r) - r0, dc = static_cast<double>(c) - c0;
            const double phi = s.object ? s.bump * std::exp(-(dr * dr + dc * dc) / (2 * sig * sig)) : 0.0;
            const double amp = s.object ? 1.0 + 0.1 * std::sin(2 * kPi * static_cast<double>(r) / static_cast<double>(s.H)) *
                                                    std::cos(2 * kPi * static_cast<double>(c) / static_cast<double>(s.W))
                                        : 1.0;
            const double qr = static_cast<double>(r) - rc, qc = static_cast<double>(c) - cc;
            const double ab = s.aberration * (qr * qr + qc * qc) / corner2;
            const std::complex<double> R = std::polar(1.0, -(2 * kPi * (s.fx * static_cast<double>(c) +
                                                                           s.fy * static_cast<double>(r)) + ab));
            const std::complex<double> O = std::polar(amp, phi);
            const double low = s.parasitic * std::cos(2 * kPi * 8.0 * static_cast<double>(r) / static_cast<double>(s.H));
            h.phase[i] = phi;
            h.intensity[i] = static_cast<float>(std::norm(R + O) + low + s.noise * g.next());
        }
    return h;
}

inline double wrap(double x) { return std::remainder(x, 2 * kPi); }

// RMS of wrap(phase - truth - tilt) over the interior (border pixels dropped), after
// removing its circular mean. tilt: (cycles/pixel along rows, along columns).
inline double phase_rms(const std::vector<float>& phase, const SynthHologram& h, int64_t border, double ty = 0,
                        double tx = 0) {
    std::complex<double> m = 0;
    std::vector<double> d;
    for (int64_t r = border; r < h.H - border; ++r)
        for (int64_t c = border; c < h.W - border; ++c) {
            const auto i = static_cast<size_t>(r * h.W + c);
            const double e = wrap(static_cast<double>(phase[i]) - h.phase[i] -
                                  2 * kPi * (ty * static_cast<double>(r) + tx * static_cast<double>(c)));
            d.push_back(e);
            m += std::polar(1.0, e);
        }
    const double mean = std::arg(m);
    double s2 = 0;
    for (double e : d) s2 += wrap(e - mean) * wrap(e - mean);
    return std::sqrt(s2 / static_cast<double>(d.size()));
}

// The sideband windows' accuracy cases on make_hologram's default frame and the RMS each must
// stay under (measured on the CPU backend; the CUDA backend is held to the same numbers).
struct WindowCase {
    SidebandWindow window;
    double max_rms;
    double noise = 0.2;
};
inline const std::array<WindowCase, 4> kWindowCases = {
    WindowCase{SidebandWindow::kCircular, 0.027}, WindowCase{SidebandWindow::kHann, 0.013},
    WindowCase{SidebandWindow::kCircular, 0.0001, 0.0}, WindowCase{SidebandWindow::kHann, 0.008, 0.0}};

}  // namespace tessera::testing
