#include "kernels/phase_guide.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera {

namespace {

constexpr double kPi = 3.141592653589793238, kHalfPi = 1.570796326794896619;
// pi/2 in two parts (the first with 33 bits, so q * hi is exact for |q| < 2^20).
constexpr double kHalfPiHi = 1.5707963267341256141, kHalfPiLo = 6.0771005065061922e-11;

// sin and cos of a phase: reduced to [-pi, pi] by the nearest multiple of 2 pi, halved, Taylor
// terms to r^17 and r^16 (|r| <= pi/2: error below 1e-12), then the double angle. + - * only, no
// branch, so a loop over pixels vectorizes it and every lane gives the bits of one pixel at a time
// (no libm call, whose vector variants may differ from the scalar one).
inline void phasor(float p, float& c, float& s) {
    const double v = static_cast<double>(p);
    const double q = (v * (0.5 / kPi) + 0x1.8p52) - 0x1.8p52;  // rint, ties to even (|v| < 2^50)
    const double r = 0.5 * ((v - q * (2.0 * kHalfPiHi)) - q * (2.0 * kHalfPiLo)), r2 = r * r;
    const double sr = r * (1.0 + r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 +
                      r2 * (-1.0 / 39916800 + r2 * (1.0 / 6227020800.0 + r2 * (-1.0 / 1307674368000.0 +
                      r2 * (1.0 / 355687428096000.0)))))))));
    const double cr = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 +
                      r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600.0 + r2 * (-1.0 / 87178291200.0 +
                      r2 * (1.0 / 20922789888000.0))))))));
    s = static_cast<float>(2.0 * sr * cr), c = static_cast<float>(cr * cr - sr * sr);
}

// atan2(y, x) for (x, y) != (0, 0): the ratio of the smaller to the larger magnitude, moved below
// tan(pi/8) by atan(t) = pi/4 + atan((t - 1) / (t + 1)), then twelve terms of the series (error
// below 1e-10); + - * / min max and selects of computed values only, as phasor().
inline double angle(double y, double x) {
    const double ax = std::fabs(x), ay = std::fabs(y);
    const double lo = std::min(ax, ay), hi = std::max(ax, ay);
    const double t = lo / hi;
    const bool far = t > 0.41421356237309503;
    const double u = far ? (t - 1.0) / (t + 1.0) : t, u2 = u * u;
    const double sum = 1.0 + u2 * (-1.0 / 3 + u2 * (1.0 / 5 + u2 * (-1.0 / 7 + u2 * (1.0 / 9 + u2 * (-1.0 / 11 +
                       u2 * (1.0 / 13 + u2 * (-1.0 / 15 + u2 * (1.0 / 17 + u2 * (-1.0 / 19 + u2 * (1.0 / 21 +
                       u2 * (-1.0 / 23)))))))))));
    double a = u * sum + (far ? kPi / 4 : 0.0);
    a = ay > ax ? kHalfPi - a : a;
    a = x < 0 ? kPi - a : a;
    return y < 0 ? -a : a;
}

}  // namespace

void guide_phase(const float* phase, const uint8_t* flags, const Window& in, const Window& out, int half,
                 float* guide) {
    const int64_t K = 2 * half + 1;
#pragma omp parallel
    {
        // Each thread a run of output rows; the phasors of the last K input rows in a ring
        // (float, 0 where unreliable), each computed once a thread, summed in double.
        const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int64_t i0 = out.rows * t / nt, i1 = out.rows * (t + 1) / nt;
        std::vector<float> cs(static_cast<size_t>(K * in.cols)), sn(static_cast<size_t>(K * in.cols));
        std::vector<int64_t> held(static_cast<size_t>(K), -1);  // the input row in each slot
        std::vector<double> x_col(static_cast<size_t>(in.cols)), y_col(static_cast<size_t>(in.cols));
        std::vector<double> x_sum(static_cast<size_t>(out.cols)), y_sum(static_cast<size_t>(out.cols));
        const int64_t jc0 = std::max(in.col0, out.col0 - half) - in.col0;
        const int64_t jc1 = std::min(in.col0 + in.cols, out.col0 + out.cols + half) - in.col0;
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t r = out.row0 + i;
            const int64_t r0 = std::max(in.row0, r - half), r1 = std::min(in.row0 + in.rows, r + half + 1);
            std::fill(x_col.begin() + jc0, x_col.begin() + jc1, 0.0);
            std::fill(y_col.begin() + jc0, y_col.begin() + jc1, 0.0);
            // Each column's sum top to bottom, then 2 half + 1 of them left to right: the same
            // additions for a pixel whatever the window it is read in.
            for (int64_t rr = r0; rr < r1; ++rr) {
                const size_t slot = static_cast<size_t>(rr % K);
                float* cr = cs.data() + slot * in.cols;
                float* sr = sn.data() + slot * in.cols;
                if (held[slot] != rr) {
                    held[slot] = rr;
                    const float* p = phase + (rr - in.row0) * in.cols;
                    const uint8_t* f = flags + (rr - in.row0) * in.cols;
                    for (int64_t j = jc0; j < jc1; ++j) {
                        float c, s;
                        phasor(p[j], c, s);
                        const float use = (f[j] & kUnreliable) == 0 ? 1.0f : 0.0f;  // a product, not a branch
                        cr[j] = c * use;
                        sr[j] = s * use;
                    }
                }
                for (int64_t j = jc0; j < jc1; ++j) x_col[static_cast<size_t>(j)] += cr[j], y_col[static_cast<size_t>(j)] += sr[j];
            }
            const int64_t own = (r - in.row0) * in.cols - in.col0;
            for (int64_t j = 0; j < out.cols; ++j) {
                const int64_t c = out.col0 + j;
                const int64_t c0 = std::max(in.col0, c - half) - in.col0, c1 = std::min(in.col0 + in.cols, c + half + 1) - in.col0;
                double x = 0.0, y = 0.0;
                for (int64_t k = c0; k < c1; ++k) x += x_col[static_cast<size_t>(k)], y += y_col[static_cast<size_t>(k)];
                x_sum[static_cast<size_t>(j)] = x, y_sum[static_cast<size_t>(j)] = y;
            }
            float* g = guide + i * out.cols;
            const float* own_phase = phase + own + out.col0;
            const uint8_t* own_flags = flags + own + out.col0;
            for (int64_t j = 0; j < out.cols; ++j) {
                const double x = x_sum[static_cast<size_t>(j)], y = y_sum[static_cast<size_t>(j)];
                const bool none = x == 0.0 && y == 0.0;
                const float a = static_cast<float>(angle(y, none ? 1.0 : x)), own_p = own_phase[j];
                const bool invalid = (own_flags[j] & kInvalid) != 0;
                g[j] = invalid ? 0.0f : none ? own_p : a;
            }
        }
    }
}

}  // namespace tessera
