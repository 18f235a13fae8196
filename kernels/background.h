// Background surface removal (issue item 2): a 2-D polynomial of degree n fitted by
// least squares to an (unwrapped) phase over its valid pixels, optionally only over
// a mask of background pixels, and subtracted. ARCHITECTURE.md section 5: the fit is
// a reduction (moments, one allreduce), the subtraction is pointwise.
//
// Model. Monomials x^i y^j, i + j <= n (0 <= n <= 6), in normalised coordinates of the
// GLOBAL pixel indices
//
//     x = 2 col / (W - 1) - 1,   y = 2 row / (H - 1) - 1        (0 when W or H is 1)
//
// so a pixel's monomials do not depend on how the image is split. Terms are ordered by
// total degree d = 0..n, then by the power of y: 1, x, y, x^2, xy, y^2, x^3, x^2y, ...
// (`surface_term`). The surface is s(x, y) = sum_t c_t x^i y^j.
//
// Partition invariance (section 1) -- how the moments are summed. The normal equations
// need G[a][b] = sum x^(ia+ib) y^(ja+jb) and b[a] = sum z x^ia y^ja over the pixels
// used. Summing them in floating point would make the last bits depend on the order of
// the pixels, i.e. on the rank windows and the threads. Instead every term is made an
// integer and summed EXACTLY (integer addition is associative, so any split, any thread
// count and any MPI reduction tree give the same bits):
//   - X_p(col) = round(x^p * 2^62) and Y_q(row) = round(y^q * 2^62) (int64; x^p by
//     repeated double multiplication, a function of the global index only);
//   - Z = round(z * 2^e) (int64, |Z| <= 2^31), e chosen from max |z| over the pixels
//     used (an allreduce of one double: max is exact in any order), so z keeps 31 bits
//     relative to the largest value -- finer than float32's 24 bits for the largest
//     values, an absolute error <= 2^-32 max|z| for the others;
//   - per image row the sums over the row's used pixels, sum X_p and sum Z X_p, are
//     exact in 128-bit integers; multiplied by Y_q they are added into 256-bit
//     two's-complement accumulators (exact; no overflow for images up to 2^31 x 2^31).
// The ranks add their 256-bit moment vectors with one allreduce (a user-defined, exact,
// commutative sum: sum_moments in partition/surface_fit.h, the collective fit's home), and
// every rank converts the same integers to double and solves the same small system: the coefficients are bit-identical for any number of
// ranks, any windows and any OMP_NUM_THREADS, and so is the subtracted image. The
// only approximation is the quantisation of x^p y^q (2^-124, far below double
// rounding) and of z (above); the fit itself is then ordinary double precision.
//
// Solve: G and b in double, Jacobi-equilibrated (unit diagonal), Cholesky, one step of
// iterative refinement. A pivot below kSurfacePivotMin (after equilibration) means the
// pixels used do not determine the surface (fewer than the number of terms, all on a
// line, or packed in a corner so small that the monomials are numerically dependent):
// SurfaceFitError says so.
//
// Subtraction: s is evaluated in double (per row, the x-polynomial's coefficients by
// Horner in y; per pixel Horner in x; no FMA contraction, -ffp-contract=off), rounded to
// float32, and out = z - float(s) in float32. Invalid pixels become NaN.
#pragma once
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/types.h"

namespace tessera {

inline constexpr int kMaxSurfaceDegree = 6;
// Smallest Cholesky pivot accepted, relative to the (unit) diagonal after equilibration.
// A degree-6 fit over a full frame has a smallest pivot near 5e-3 (measured 4.7e-3 on
// 64x64 and 4.8e-3 on 1000x1000 pixels; degree 3: 0.16); dependent monomials give ~1e-16.
inline constexpr double kSurfacePivotMin = 1e-11;

// Number of terms of a degree-n surface: (n + 1)(n + 2) / 2.
inline constexpr int surface_terms(int degree) { return (degree + 1) * (degree + 2) / 2; }
// (i, j): term t is x^i y^j.
std::pair<int, int> surface_term(int t);

// Normalised coordinate of global index k of an axis of n pixels.
inline double surface_coord(int64_t k, int64_t n) {
    return n > 1 ? 2.0 * static_cast<double>(k) / static_cast<double>(n - 1) - 1.0 : 0.0;
}

// std::invalid_argument unless 0 <= degree <= kMaxSurfaceDegree.
void check_surface_degree(int degree);

// A 256-bit two's-complement integer (little-endian 64-bit words): an exact moment.
using ExactSum = std::array<uint64_t, 4>;
// into += v, exactly (modulo 2^256; commutative and associative).
void add_exact(ExactSum& into, const ExactSum& v);
// v as a 256-bit integer (sign-extended).
ExactSum exact_from(int64_t v);

// The exact moments of a set of pixels (partial: one window; total: after the reduction).
struct SurfaceMoments {
    int degree = 0;
    int zexp = 0;         // z was quantised as round(z * 2^zexp)
    int64_t count = 0;    // pixels used
    // sum X_p Y_q over p + q <= 2n, index moment_index(p, q, 2n); scale 2^-124.
    std::vector<ExactSum> geo;
    // sum Z X_p Y_q over p + q <= n, index moment_index(p, q, n); scale 2^-(124 + zexp).
    std::vector<ExactSum> zm;
};

// Position of x^p y^q among the monomials of total degree <= n, ordered as the terms.
inline int moment_index(int p, int q, int /*n*/) {
    const int d = p + q;
    return d * (d + 1) / 2 + q;
}

struct SurfaceFit {
    int degree = 0;
    std::vector<double> coeffs;  // surface_terms(degree) values, term order
    int64_t count = 0;           // pixels the fit used
    double min_pivot = 0;        // smallest equilibrated Cholesky pivot (conditioning)
};

// The fit is impossible (too few valid pixels for the degree, or they do not span it).
class SurfaceFitError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Pixel (r, c) of a window is used by the fit when valid (null = every pixel) is nonzero,
// mask (null = every pixel) is nonzero and z is finite. z, valid and mask share `stride`
// and point at the window's first pixel.

// Largest |z| over the pixels used in the window (0 when none).
double surface_max_abs(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                       int64_t stride);
// The quantisation exponent for a global max |z|: |round(z * 2^e)| <= 2^31.
int surface_zexp(double max_abs);

// Exact moments of the window's used pixels (OpenMP over rows; any thread count gives
// the same integers). H, W: the global image size; own: global window.
SurfaceMoments surface_moments(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                               int64_t stride, int64_t H, int64_t W, int degree, int zexp);
// Exact sum of two partial moment sets (same degree and zexp).
void add_moments(SurfaceMoments& into, const SurfaceMoments& other);

// Solves the normal equations of the total moments. Throws SurfaceFitError.
SurfaceFit solve_surface(const SurfaceMoments& total);

// One rank's window of host arrays as the collective fit sees it (partition/surface_fit.h:
// fit_surface): its local results only, the reductions are the fit's.
struct SurfaceWindow {
    const float* z;
    const uint8_t* valid;
    const uint8_t* mask;
    Window own;
    int64_t stride, H, W;
    double max_abs() const { return surface_max_abs(z, valid, mask, own, stride); }
    SurfaceMoments moments(int degree, int zexp) const {
        return surface_moments(z, valid, mask, own, stride, H, W, degree, zexp);
    }
};

// The surface at global pixel (r, c) of an H x W image, as subtract_surface computes it.
double evaluate_surface(const SurfaceFit& fit, int64_t r, int64_t c, int64_t H, int64_t W);

// Local sums of the residual over the pixels used by the fit (valid, masked, finite).
struct ResidualSums {
    double sum_sq = 0;  // sum of residual^2 (double; a report, summed per row then rows in order)
    int64_t count = 0;
};

// In place: z = z - float(s) at valid pixels (valid null = finite ones), NaN elsewhere.
// Pointwise, OpenMP over rows. Returns the residual sums over the pixels the fit used
// (mask as for the fit; null = every valid pixel).
ResidualSums subtract_surface(float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                              int64_t stride, int64_t H, int64_t W, const SurfaceFit& fit);

// "1.2e-03 + 4.5e-01 x - ... " for reports.
std::string describe_surface(const SurfaceFit& fit);

}  // namespace tessera
