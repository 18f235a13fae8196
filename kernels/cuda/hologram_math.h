// Per-element pieces of the hologram demodulation shared by the host and the device: the
// float atan2 of the CPU backend (tessera::phase_of), the reference division, the sideband
// filter's radius (tessera::filter_radius), the carrier search's key (tessera::find_carrier's
// order) and the sideband spectrum (HologramPlan::synthesise's band). Each is written with
// the CPU's operations in the CPU's order; on the device every float/double operation is an
// explicitly rounded intrinsic (__fmul_rn, ...), never contracted into an FMA whatever the
// nvcc flags, so that for the same inputs host and device give the same bits
// (tests/gpu/test_cuda_hologram.cpp).
//
// C++17 and CUDA-free on the host side: included by nvcc (hologram.cu) and by g++ (tests,
// which run the host instantiations against the CPU backend without a GPU).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__CUDACC__)
#define TESSERA_HD_INLINE __host__ __device__ __forceinline__
#else
#define TESSERA_HD_INLINE inline
#endif

namespace tessera::cuda::hm {

// Rounded-to-nearest float and double operations: intrinsics on the device (no FMA
// contraction possible), plain operators on the host (the project builds with
// -ffp-contract=off; x86-64 evaluates float in float).
TESSERA_HD_INLINE float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
TESSERA_HD_INLINE float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
TESSERA_HD_INLINE float fsub(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
TESSERA_HD_INLINE float fdiv(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}
TESSERA_HD_INLINE double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}
TESSERA_HD_INLINE double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
TESSERA_HD_INLINE double ddiv(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}
TESSERA_HD_INLINE double dsqrt(double a) {
#if defined(__CUDA_ARCH__)
    return __dsqrt_rn(a);
#else
    return std::sqrt(a);
#endif
}
TESSERA_HD_INLINE float fabs_(float a) {
#if defined(__CUDA_ARCH__)
    return fabsf(a);
#else
    return std::fabs(a);
#endif
}
TESSERA_HD_INLINE double dfloor(double a) {
#if defined(__CUDA_ARCH__)
    return floor(a);
#else
    return std::floor(a);
#endif
}
TESSERA_HD_INLINE double dcos(double a) {
#if defined(__CUDA_ARCH__)
    return cos(a);
#else
    return std::cos(a);
#endif
}
TESSERA_HD_INLINE bool isnan_(float a) {
#if defined(__CUDA_ARCH__)
    return isnan(a);
#else
    return std::isnan(a);
#endif
}
TESSERA_HD_INLINE uint32_t float_bits(float a) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(a);
#else
    uint32_t u;
    std::memcpy(&u, &a, sizeof(u));
    return u;
#endif
}
TESSERA_HD_INLINE float quiet_nan_() {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(0x7fc00000u);
#else
    return std::numeric_limits<float>::quiet_NaN();
#endif
}
TESSERA_HD_INLINE bool signbit_(float a) {
#if defined(__CUDA_ARCH__)
    return (__float_as_uint(a) >> 31) != 0;
#else
    return std::signbit(a);
#endif
}

// The float values of std::numbers::pi_v<float> and its halves (exact halvings).
inline constexpr float kPiF = 3.14159265358979323846f;
inline constexpr float kPi2F = kPiF / 2;
inline constexpr float kPi4F = kPiF / 4;
inline constexpr double kPiD = 3.14159265358979323846;

}  // namespace tessera::cuda::hm

namespace tessera::cuda {

// tessera::phase_of (kernels/cpu/hologram.cpp, fast_phase) operation for operation: octant
// reduction to a in [0, 1], Cephes' atanf polynomial, octant undone; [-pi, pi), +pi -> -pi.
// Every comparison and select as the CPU's, so NaN, zeros of either sign, infinities and
// denormals come out as there.
TESSERA_HD_INLINE float phase_of(float im, float re) {
    using namespace hm;
    const float ax = fabs_(re), ay = fabs_(im);
    const float mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
    const float q = fdiv(mn, mx);
    const float a = mx == 0.0f ? 0.0f : q;
    const bool big = a > 0.41421356f;  // tan(pi/8)
    const float tb = fdiv(fsub(a, 1.0f), fadd(a, 1.0f));
    const float t = big ? tb : a;
    const float z = fmul(t, t);
    // ((((c0 z - c1) z + c2) z - c3) z) t + t, left to right as the CPU's expression.
    float p = fmul(8.05374449538e-2f, z);
    p = fsub(p, 1.38776856032e-1f);
    p = fmul(p, z);
    p = fadd(p, 1.99777106478e-1f);
    p = fmul(p, z);
    p = fsub(p, 3.33329491539e-1f);
    p = fmul(p, z);
    p = fmul(p, t);
    float r = fadd(p, t);
    r = big ? fadd(r, kPi4F) : r;
    r = ay > ax ? fsub(kPi2F, r) : r;
    r = signbit_(re) ? fsub(kPiF, r) : r;
    r = signbit_(im) ? -r : r;
    r = r >= kPiF ? -kPiF : r;
    // A NaN component gives NaN (the CPU's rule: x86 and CUDA set a NaN's sign bit differently).
    return (re != re || im != im) ? quiet_nan_() : r;
}

// field / ref as tessera::divide_by_reference: field * conj(ref) / |ref|^2, 0 where |ref| == 0.
TESSERA_HD_INLINE void divide_field(float a, float b, float c, float d, float& re, float& im) {
    using namespace hm;
    const float m = fadd(fmul(c, c), fmul(d, d));
    if (m == 0.0f) {
        re = 0.0f;
        im = 0.0f;
        return;
    }
    re = fdiv(fadd(fmul(a, c), fmul(b, d)), m);
    im = fdiv(fsub(fmul(b, c), fmul(a, d)), m);
}

// tessera::filter_radius for a carrier at FFT-shifted (row, col): `given` > 0 is the
// user's radius (HologramParams::filter_radius), else a third of the carrier's distance
// from the zero frequency; capped below half the smaller side, at least 0.5. Only exactly
// rounded double operations and the same comparisons (std::min / std::max), so the same
// value as the host function (asserted by the tests).
TESSERA_HD_INLINE double sideband_radius(double given, int64_t rows, int64_t cols, int64_t row, int64_t col) {
    using namespace hm;
    const double ky = static_cast<double>(row - rows / 2), kx = static_cast<double>(col - cols / 2);
    const double r = given > 0 ? given : ddiv(dsqrt(dadd(dmul(ky, ky), dmul(kx, kx))), 3.0);
    const double cap = dadd(ddiv(static_cast<double>(rows < cols ? rows : cols), 2.0), -1.0);
    const double lo = cap < r ? cap : r;  // std::min(r, cap)
    return lo < 0.5 ? 0.5 : lo;           // std::max(lo, 0.5)
}

// --- spectrum indexing (kernels/cpu/hologram.cpp's helpers); C is float2 or alike ({x, y}) ---

namespace hm {

TESSERA_HD_INLINE int64_t mod(int64_t a, int64_t n) {
    const int64_t r = a % n;
    return r < 0 ? r + n : r;
}

// Signed frequency of unshifted index i of an axis of n bins: [-n/2, (n-1)/2].
TESSERA_HD_INLINE int64_t signed_freq(int64_t i, int64_t n) { return i <= (n - 1) / 2 ? i : i - n; }

}  // namespace hm

// Value at any unshifted bin (ky, kx) of a real image's half spectrum (rows x (cols/2+1)),
// through F(-k) = conj(F(k)) for the left half (tessera::HologramPlan::bin).
template <class C>
TESSERA_HD_INLINE C spectrum_bin(const C* half, int64_t rows, int64_t cols, int64_t ky, int64_t kx) {
    using hm::mod;
    ky = mod(ky, rows);
    kx = mod(kx, cols);
    const int64_t hc = cols / 2 + 1;
    if (kx < hc) return half[ky * hc + kx];
    const C v = half[mod(-ky, rows) * hc + (cols - kx)];
    return C{v.x, -v.y};
}

// The carrier search's key of half-spectrum element i (< rows*(cols/2+1) < 2^31): 0 when the
// bin is not searched (self-conjugate mirror, inside the DC radius: d^2 <= dc2) or |F|^2 is
// NaN; else (bits of |F|^2 = re*re + im*im in float) << 32 | (2^32-1 - shifted index), so
// that the largest key is tessera::find_carrier's choice: the largest |F|^2, ties to the
// smallest shifted index row*cols + col (|F|^2 >= +0: its bits order as its values).
template <class C>
TESSERA_HD_INLINE unsigned long long carrier_key(const C* half, int64_t rows, int64_t cols, double dc2, int64_t i) {
    using hm::mod, hm::signed_freq;
    const auto hc = static_cast<uint32_t>(cols / 2 + 1), iu = static_cast<uint32_t>(i);
    const int64_t iy = iu / hc, ix = iu % hc;
    // Self-conjugate columns (zero frequency, Nyquist of an even width): one bin of each
    // mirrored pair, the one with row frequency >= 0.
    const bool self_conjugate = ix == 0 || (cols % 2 == 0 && ix == cols / 2);
    if (self_conjugate && iy > mod(-iy, rows)) return 0;
    const int64_t ky = signed_freq(iy, rows), kx = signed_freq(ix, cols);
    if (static_cast<double>(ky * ky + kx * kx) <= dc2) return 0;
    const C v = half[i];
    const float m = hm::fadd(hm::fmul(v.x, v.x), hm::fmul(v.y, v.y));  // std::norm
    if (hm::isnan_(m)) return 0;  // never wins on the CPU (no comparison with NaN is true)
    const auto idx = static_cast<unsigned long long>((ky + rows / 2) * cols + (kx + cols / 2));
    return (static_cast<unsigned long long>(hm::float_bits(m)) << 32) | (0xffffffffull - idx);
}

// FFT-shifted (row, col) of a non-zero key.
TESSERA_HD_INLINE void decode_carrier_key(unsigned long long key, int64_t cols, int64_t& row, int64_t& col) {
    const auto idx = static_cast<int64_t>(0xffffffffull - (key & 0xffffffffull));
    row = idx / cols;
    col = idx % cols;
}

// Element (y, x) of the full unshifted sideband spectrum that the inverse FFT turns into the
// field: tessera::HologramPlan::synthesise's band, scattered. (y, x) is the disc's offset
// (dy, dx) from the carrier (crow, ccol), dy = y or y - rows (likewise dx): the disc spans
// 2r+1 < min(rows, cols) bins (filter_radius caps it), so each offset has one element.
// Inside the disc (d^2 <= radius^2): bin * w, w = scale (circular) or
// float(0.5 (1 + cos(pi d / radius))) * scale (Hann); zero elsewhere.
template <class C>
TESSERA_HD_INLINE C sideband_value(const C* half, int64_t rows, int64_t cols, int64_t crow, int64_t ccol,
                                   double radius, float scale, bool hann, int64_t y, int64_t x) {
    using namespace hm;
    const C zero{0.0f, 0.0f};
    if (crow < 0) return zero;
    const auto ri = static_cast<int64_t>(dfloor(radius));
    const int64_t dy = y <= ri ? y : y - rows, dx = x <= ri ? x : x - cols;
    if (dy < -ri || dx < -ri) return zero;
    const double d2 = static_cast<double>(dy * dy + dx * dx);
    if (d2 > dmul(radius, radius)) return zero;
    float w = scale;
    if (hann) {
        const double h = dmul(0.5, dadd(1.0, dcos(ddiv(dmul(kPiD, dsqrt(d2)), radius))));
        w = fmul(static_cast<float>(h), scale);
    }
    const C b = spectrum_bin(half, rows, cols, crow - rows / 2 + dy, ccol - cols / 2 + dx);
    return C{fmul(b.x, w), fmul(b.y, w)};
}

// True when the carrier search of a rows x cols frame has no bin outside the DC exclusion
// radius `dc` (tessera::find_carrier would throw). The searched half-plane always holds a
// bin at (|ky|, |kx|) = (rows/2, cols/2), the farthest from the zero frequency.
inline bool carrier_search_is_empty(int64_t rows, int64_t cols, double dc) {
    const int64_t ky = rows / 2, kx = cols / 2;
    return !(static_cast<double>(ky * ky + kx * kx) > dc * dc);
}

}  // namespace tessera::cuda
