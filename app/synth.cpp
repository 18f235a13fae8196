// Synthetic scenes with known truth (`tessera synth`), for the demo, tests and benchmarks.
//
// Everything is a pure function of (case, rows, cols, seed) and the pixel index: random numbers
// come from a splitmix64 hash of (seed, case, stream, index), and the few transcendental
// functions are evaluated with our own polynomial code (below) rather than libm, so the output
// is bit-identical on any machine, with any number of OpenMP threads (the only reductions are
// maxima, which do not depend on order). Compiled with -ffp-contract=off like the rest of the
// project, so no FMA changes a rounding either.
#include "app/synth.h"

// Bit-identical output needs every product rounded before the sum, even if this file is ever
// built without the project's -ffp-contract=off (GCC's gnu++ modes and clang contract by default).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif


#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "io/geotiff_writer.h"

namespace tessera {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kTwoPi = 6.28318530717958647692;
// The largest float below pi: wrapped values are clamped into [-kMaxWrapped, kMaxWrapped],
// which lies inside [-pi, pi) even after the cast to float.
constexpr float kMaxWrapped = 3.14159250f;

// ---------------------------------------------------------------------------------------------
// Deterministic elementary functions: only +, -, *, /, sqrt, floor/rint and exact bit
// manipulation, all correctly rounded under IEEE 754, so the results do not depend on libm.

inline double pow2i(int n) {  // 2^n for -1022 <= n <= 1023
    uint64_t bits = static_cast<uint64_t>(n + 1023) << 52;
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

// exp(x) for x <= 700; relative error ~1e-16.
inline double dexp(double x) {
    if (x < -700.0) return 0.0;
    constexpr double kInvLn2 = 1.44269504088896338700;
    constexpr double kLn2Hi = 6.93147180369123816490e-01;
    constexpr double kLn2Lo = 1.90821492927058770002e-10;
    const double n = std::rint(x * kInvLn2);
    const double r = (x - n * kLn2Hi) - n * kLn2Lo;  // |r| <= 0.35
    double p = 1.0 / 6227020800.0;                   // 1/13!
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return p * pow2i(static_cast<int>(n));
}

// log(x) for normal x > 0; error ~1e-16.
inline double dlog(double x) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    int e = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;  // mantissa in [1, 2)
    double m;
    std::memcpy(&m, &bits, sizeof m);
    if (m > 1.41421356237309504880) {
        m *= 0.5;
        ++e;
    }
    const double s = (m - 1.0) / (m + 1.0);  // |s| <= 0.1716
    const double z = s * s, z2 = z * z, z4 = z2 * z2;  // z <= 0.0295
    // 1 + z/3 + z^2/5 + ... + z^7/15 (Estrin: short dependency chains); error < 1e-13.
    const double p = ((1.0 + z * (1.0 / 3.0)) + z2 * (1.0 / 5.0 + z * (1.0 / 7.0))) +
                     z4 * ((1.0 / 9.0 + z * (1.0 / 11.0)) + z2 * (1.0 / 13.0 + z * (1.0 / 15.0)));
    constexpr double kLn2 = 0.69314718055994530942;
    return 2.0 * s * p + e * kLn2;
}

// sin and cos of |r| <= pi/4 (Taylor to r^15 / r^16, Estrin; error < 1e-16).
inline double sin_kernel(double r) {
    const double x = r * r, x2 = x * x, x4 = x2 * x2;
    const double p = ((-1.0 / 6.0 + x * (1.0 / 120.0)) + x2 * (-1.0 / 5040.0 + x * (1.0 / 362880.0))) +
                     x4 * ((-1.0 / 39916800.0 + x * (1.0 / 6227020800.0)) + x2 * (-1.0 / 1307674368000.0));
    return r + r * x * p;
}
inline double cos_kernel(double r) {
    const double x = r * r, x2 = x * x, x4 = x2 * x2;
    const double p = ((-0.5 + x * (1.0 / 24.0)) + x2 * (-1.0 / 720.0 + x * (1.0 / 40320.0))) +
                     x4 * ((-1.0 / 3628800.0 + x * (1.0 / 479001600.0)) +
                           x2 * (-1.0 / 87178291200.0 + x * (1.0 / 20922789888000.0)));
    return 1.0 + x * p;
}

// sin / cos for moderate arguments (|x| < 1e6 here).
inline void dsincos(double x, double& s, double& c) {
    constexpr double kTwoOverPi = 0.63661977236758134308;
    constexpr double kPio2Hi = 1.57079632673412561417e+00;
    constexpr double kPio2Lo = 6.07710050650619224932e-11;
    const double k = std::rint(x * kTwoOverPi);
    const double r = (x - k * kPio2Hi) - k * kPio2Lo;
    const double sr = sin_kernel(r), cr = cos_kernel(r);
    switch (static_cast<int64_t>(k) & 3) {
        case 0: s = sr; c = cr; break;
        case 1: s = cr; c = -sr; break;
        case 2: s = -sr; c = -cr; break;
        default: s = -cr; c = sr; break;
    }
}
// ---------------------------------------------------------------------------------------------
// Counter-based random numbers: splitmix64 of (stream key + index).

inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
inline uint64_t hash_at(uint64_t key, uint64_t i) {
    return mix64(key + (i + 1) * 0x9e3779b97f4a7c15ULL);
}
inline double u01(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }  // [0, 1)

enum Stream : uint64_t {
    kNoise = 1,       // Gaussian phase noise
    kTopo = 2,        // topography lattice values (+ octave)
    kCoh = 40,        // coherence texture lattice (+ octave)
    kParams = 80,     // scene parameters (bowls, centres, river, holes)
    kHoleNoise = 81,  // uniform phase inside holes
};

inline uint64_t stream_key(uint64_t seed, uint64_t case_id, uint64_t stream) {
    return mix64(mix64(seed ^ 0x5851f42d4c957f2dULL) + case_id * 0x9e3779b97f4a7c15ULL +
                 stream * 0xd1b54a32d192ed03ULL);
}

// Sequential draws for scene parameters.
struct Draws {
    uint64_t key;
    uint64_t i = 0;
    double uniform(double lo, double hi) { return lo + (hi - lo) * u01(hash_at(key, i++)); }
    uint64_t bits() { return hash_at(key, i++); }
};

// Box-Muller: a pair of independent standard normals from two hashes of pair index p. The
// uniform angle is drawn as a quadrant (2 bits) plus an offset in [-pi/4, pi/4) (51 other bits),
// so that only the short-range sin/cos kernels are needed.
inline void gauss_pair(uint64_t key, uint64_t p, double& z0, double& z1) {
    const uint64_t h1 = hash_at(key, 2 * p), h2 = hash_at(key, 2 * p + 1);
    const double u1 = static_cast<double>((h1 >> 11) + 1) * 0x1.0p-53;  // (0, 1]
    const double rad = std::sqrt(-2.0 * dlog(u1));
    const double t = (static_cast<double>((h2 >> 11) & ((uint64_t{1} << 51) - 1)) * 0x1.0p-51 - 0.5) *
                     (0.5 * kPi);
    const double c = cos_kernel(t), s = sin_kernel(t);
    double x, y;
    switch (h2 >> 62) {
        case 0: x = c; y = s; break;
        case 1: x = -s; y = c; break;
        case 2: x = -c; y = -s; break;
        default: x = s; y = -c; break;
    }
    z0 = rad * x;
    z1 = rad * y;
}

// out[c] = standard normal number i0 + c, for c in [0, n): normal i is component (i & 1) of
// pair i >> 1, whatever the row layout, so the value depends on the global index only.
void gauss_row(uint64_t key, uint64_t i0, int64_t n, double* out) {
    int64_t c = 0;
    double z0, z1;
    if ((i0 & 1) != 0 && n > 0) {
        gauss_pair(key, i0 >> 1, z0, z1);
        out[0] = z1;
        c = 1;
    }
    for (; c + 1 < n; c += 2) {
        gauss_pair(key, (i0 + static_cast<uint64_t>(c)) >> 1, z0, z1);
        out[c] = z0;
        out[c + 1] = z1;
    }
    if (c < n) {
        gauss_pair(key, (i0 + static_cast<uint64_t>(c)) >> 1, z0, z1);
        out[c] = z0;
    }
}

// wrap(x) into [-pi, pi), cast to float and kept strictly inside after the cast.
inline double floor_d(double v) {  // |v| < 2^62; exact, and no libm call without SSE4.1
    double t = static_cast<double>(static_cast<int64_t>(v));
    return t > v ? t - 1.0 : t;
}
inline float wrap_f(double x) {
    constexpr double kInvTwoPi = 0.15915494309189533577;
    double w = x - kTwoPi * floor_d((x + kPi) * kInvTwoPi);
    if (w >= kPi) w -= kTwoPi;
    if (w < -kPi) w += kTwoPi;
    float f = static_cast<float>(w);
    if (f > kMaxWrapped) f = kMaxWrapped;
    if (f < -kMaxWrapped) f = -kMaxWrapped;
    return f;
}

inline double clamp01(double v) { return v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v); }

// atan2(y, x) in (-pi, pi] from + - * / and sqrt only (IEEE-exact), so the same bits on any
// machine: two half-angle steps take |t| <= 1 below tan(pi/16), then 12 terms of the series
// (error below 1e-13).
inline double datan2(double y, double x) {
    if (x == 0.0 && y == 0.0) return 0.0;
    const double ax = std::fabs(x), ay = std::fabs(y);
    double t = ay <= ax ? ay / ax : ax / ay;  // [0, 1]
    t = t / (1.0 + std::sqrt(1.0 + t * t));
    t = t / (1.0 + std::sqrt(1.0 + t * t));
    const double t2 = t * t;
    double sum = 0.0;
    for (int k = 23; k >= 1; k -= 2) sum = ((k / 2) % 2 ? -1.0 : 1.0) / k + t2 * sum;
    double a = 4.0 * t * sum;  // atan of the [0, 1] ratio
    if (ay > ax) a = kPi / 2.0 - a;
    if (x < 0.0) a = kPi - a;
    return y < 0.0 ? -a : a;
}

// ---------------------------------------------------------------------------------------------
// Fractal value noise: octaves of lattice values in [-1, 1) interpolated with the quintic fade,
// amplitude halving and cell size halving per octave. Evaluated a row at a time: the lattice is
// first interpolated vertically into a row of lattice columns, then horizontally per pixel with
// precomputed column indices and weights.

inline double fade(double t) { return t * t * t * (t * (t * 6.0 - 15.0) + 10.0); }

struct Octave {
    double inv_cell = 1.0, off_r = 0.0, amp = 1.0;
    int64_t nlr = 0, nlc = 0;
    std::vector<float> lattice;  // nlr x nlc
    std::vector<int32_t> cidx;   // per image column
    std::vector<float> cw;       // per image column: faded weight
};

class Fractal {
public:
    // cell0: cell size of the coarsest octave in pixels; octaves stop at max_octaves or when the
    // cell would be smaller than min_cell (at least one octave always).
    Fractal(uint64_t seed, uint64_t case_id, uint64_t stream0, int64_t rows, int64_t cols,
            double cell0, int max_octaves, double min_cell) {
        Draws d{stream_key(seed, case_id, stream0 + 20)};
        double cell = std::max(cell0, 1.0), amp = 1.0;
        for (int o = 0; o < max_octaves; ++o) {
            if (o > 0 && cell < min_cell) break;
            Octave oc;
            oc.inv_cell = 1.0 / cell;
            oc.amp = amp;
            oc.off_r = d.uniform(0.0, 1.0);
            const double off_c = d.uniform(0.0, 1.0);
            oc.nlr = static_cast<int64_t>(std::floor((rows - 1) * oc.inv_cell + oc.off_r)) + 2;
            oc.nlc = static_cast<int64_t>(std::floor((cols - 1) * oc.inv_cell + off_c)) + 2;
            oc.lattice.resize(static_cast<size_t>(oc.nlr * oc.nlc));
            const uint64_t key = stream_key(seed, case_id, stream0 + static_cast<uint64_t>(o));
            const int64_t nl = oc.nlr * oc.nlc;
#pragma omp parallel for schedule(static)
            for (int64_t i = 0; i < nl; ++i) {
                oc.lattice[static_cast<size_t>(i)] =
                    static_cast<float>(2.0 * u01(hash_at(key, static_cast<uint64_t>(i))) - 1.0);
            }
            oc.cidx.resize(static_cast<size_t>(cols));
            oc.cw.resize(static_cast<size_t>(cols));
            for (int64_t c = 0; c < cols; ++c) {
                const double x = c * oc.inv_cell + off_c;
                const double ix = std::floor(x);
                oc.cidx[static_cast<size_t>(c)] = static_cast<int32_t>(ix);
                oc.cw[static_cast<size_t>(c)] = static_cast<float>(fade(x - ix));
            }
            max_nlc_ = std::max(max_nlc_, oc.nlc);
            amp_sum_ += amp;
            octaves_.push_back(std::move(oc));
            cell *= 0.5;
            amp *= 0.5;
        }
    }

    int64_t scratch_size() const { return max_nlc_; }
    double amp_sum() const { return amp_sum_; }

    // out[c] = sum over octaves (unnormalised, |out| < amp_sum()). scratch: scratch_size() floats.
    void row(int64_t r, int64_t cols, float* out, float* scratch) const {
        std::fill(out, out + cols, 0.0f);
        for (const Octave& oc : octaves_) {
            const double y = r * oc.inv_cell + oc.off_r;
            const double iy = std::floor(y);
            const float ty = static_cast<float>(fade(y - iy));
            const float* l0 = oc.lattice.data() + static_cast<int64_t>(iy) * oc.nlc;
            const float* l1 = l0 + oc.nlc;
            for (int64_t j = 0; j < oc.nlc; ++j) scratch[j] = l0[j] + ty * (l1[j] - l0[j]);
            const float a = static_cast<float>(oc.amp);
            const int32_t* ci = oc.cidx.data();
            const float* cw = oc.cw.data();
            for (int64_t c = 0; c < cols; ++c) {
                const float v0 = scratch[ci[c]], v1 = scratch[ci[c] + 1];
                out[c] += a * (v0 + cw[c] * (v1 - v0));
            }
        }
    }

private:
    std::vector<Octave> octaves_;
    int64_t max_nlc_ = 1;
    double amp_sum_ = 0.0;
};

// Largest |difference| along any horizontal or vertical edge of f (NaN-free).
double max_edge_step(const std::vector<float>& f, int64_t rows, int64_t cols) {
    double m = 0.0;
#pragma omp parallel for schedule(static) reduction(max : m)
    for (int64_t r = 0; r < rows; ++r) {
        const float* a = f.data() + r * cols;
        float mr = 0.0f;
        for (int64_t c = 0; c + 1 < cols; ++c) mr = std::max(mr, std::fabs(a[c + 1] - a[c]));
        if (r + 1 < rows) {
            const float* b = a + cols;
            for (int64_t c = 0; c < cols; ++c) mr = std::max(mr, std::fabs(b[c] - a[c]));
        }
        m = std::max(m, static_cast<double>(mr));
    }
    return m;
}

// The q-quantile of |difference| along horizontal and vertical edges of f, given their
// maximum: a histogram of 4096 bins (integer counts, so the result does not depend on the
// number of threads), read at the upper edge of the bin that reaches q.
double edge_step_quantile(const std::vector<float>& f, int64_t rows, int64_t cols, double max_step,
                          double q) {
    if (!(max_step > 0.0)) return 0.0;
    constexpr int kBins = 4096;
    const double to_bin = kBins / max_step;
    std::vector<int64_t> hist(kBins, 0);
#pragma omp parallel
    {
        std::vector<int64_t> h(kBins, 0);
        auto add = [&](float d) {
            h[static_cast<size_t>(std::min<double>(kBins - 1, std::fabs(d) * to_bin))] += 1;
        };
#pragma omp for schedule(static) nowait
        for (int64_t r = 0; r < rows; ++r) {
            const float* a = f.data() + r * cols;
            for (int64_t c = 0; c + 1 < cols; ++c) add(a[c + 1] - a[c]);
            if (r + 1 < rows)
                for (int64_t c = 0; c < cols; ++c) add(a[c + cols] - a[c]);
        }
#pragma omp critical(tessera_synth_hist)
        for (int b = 0; b < kBins; ++b) hist[static_cast<size_t>(b)] += h[static_cast<size_t>(b)];
    }
    int64_t total = 0;
    for (int64_t v : hist) total += v;
    const double want = q * static_cast<double>(total);
    int64_t acc = 0;
    for (int b = 0; b < kBins; ++b) {
        acc += hist[static_cast<size_t>(b)];
        if (static_cast<double>(acc) >= want) return (b + 1) / to_bin;
    }
    return max_step;
}

// Coherence texture: a few smooth octaves, returned in [-1, 1].
struct CohTexture {
    Fractal fr;
    CohTexture(uint64_t seed, uint64_t case_id, int64_t rows, int64_t cols)
        : fr(seed, case_id, kCoh, rows, cols, std::max(rows, cols) / 3.0, 4, 8.0) {}
};

constexpr uint64_t kCaseBowl = 1, kCaseTopo = 2, kCaseHoles = 3, kCaseFringes = 4, kCaseNoisy = 5;

// ---------------------------------------------------------------------------------------------
// bowl: Gaussian deformation bowls + ramp, noise std 0.15, coherence 0.90-0.95.

void make_bowl(SynthScene& sc, uint64_t seed) {
    const int64_t H = sc.rows, W = sc.cols;
    const double M = static_cast<double>(std::min(H, W));
    Draws d{stream_key(seed, kCaseBowl, kParams)};
    const int nb = 2 + static_cast<int>(d.bits() & 1);
    struct Bowl {
        double depth;
        std::vector<double> gr, gc;  // separable Gaussian factors
    };
    std::vector<Bowl> bowls(static_cast<size_t>(nb));
    for (int b = 0; b < nb; ++b) {
        const double r0 = d.uniform(0.2, 0.8) * H, c0 = d.uniform(0.2, 0.8) * W;
        const double sigma = M * d.uniform(0.07, 0.15) + 0.5;
        const double cycles = d.uniform(6.0, 16.0);
        const double sign = (b == 0 || (d.bits() & 3) != 0) ? -1.0 : 1.0;  // mostly subsidence
        Bowl& bw = bowls[static_cast<size_t>(b)];
        bw.depth = sign * kTwoPi * cycles;
        const double k = -0.5 / (sigma * sigma);
        bw.gr.resize(static_cast<size_t>(H));
        bw.gc.resize(static_cast<size_t>(W));
        for (int64_t r = 0; r < H; ++r) bw.gr[static_cast<size_t>(r)] = dexp(k * (r - r0) * (r - r0));
        for (int64_t c = 0; c < W; ++c) bw.gc[static_cast<size_t>(c)] = dexp(k * (c - c0) * (c - c0));
    }
    const double ramp_cycles = d.uniform(2.0, 4.0);
    double rs, rc;
    dsincos(d.uniform(0.0, kTwoPi), rs, rc);
    const double ramp_r = kTwoPi * ramp_cycles * rs / H, ramp_c = kTwoPi * ramp_cycles * rc / W;

    // Pass 1: deterministic field (unscaled) into truth.
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < H; ++r) {
        float* t = sc.truth.data() + r * W;
        for (int64_t c = 0; c < W; ++c) {
            double v = ramp_r * (r - 0.5 * H) + ramp_c * (c - 0.5 * W);
            for (const Bowl& bw : bowls)
                v += bw.depth * (bw.gr[static_cast<size_t>(r)] * bw.gc[static_cast<size_t>(c)]);
            t[c] = static_cast<float>(v);
        }
    }
    // Keep it unwrappable at small sizes: at most 0.6 rad per pixel step.
    const double step = max_edge_step(sc.truth, H, W);
    const double scale = step > 0.6 ? 0.6 / step : 1.0;

    CohTexture tex(seed, kCaseBowl, H, W);
    const uint64_t nkey = stream_key(seed, kCaseBowl, kNoise);
#pragma omp parallel
    {
        std::vector<float> texrow(static_cast<size_t>(W)), s(static_cast<size_t>(tex.fr.scratch_size()));
        std::vector<double> z(static_cast<size_t>(W));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < H; ++r) {
            tex.fr.row(r, W, texrow.data(), s.data());
            gauss_row(nkey, static_cast<uint64_t>(r * W), W, z.data());
            const double inv = 1.0 / tex.fr.amp_sum();
            float* t = sc.truth.data() + r * W;
            float* w = sc.wrapped.data() + r * W;
            float* g = sc.coherence.data() + r * W;
            for (int64_t c = 0; c < W; ++c) {
                const float tv = scale == 1.0 ? t[c] : static_cast<float>(scale * t[c]);
                t[c] = tv;
                w[c] = wrap_f(static_cast<double>(tv) + 0.15 * z[static_cast<size_t>(c)]);
                g[c] = static_cast<float>(0.925 + 0.025 * (texrow[static_cast<size_t>(c)] * inv));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// topo and holes share the topography, the coherence and the noise (holes adds to them).

struct River {
    bool vertical = true;  // crosses from the top row to the bottom row (else left to right)
    std::vector<double> centre, half;  // per along-track index: centre and half width (pixels)
    bool contains(int64_t r, int64_t c) const {
        const int64_t t = vertical ? r : c;
        const double x = static_cast<double>(vertical ? c : r);
        return std::fabs(x - centre[static_cast<size_t>(t)]) <= half[static_cast<size_t>(t)];
    }
};

struct Disc {
    double r0, c0, radius;
};

River make_river(Draws& d, int64_t H, int64_t W) {
    River rv;
    rv.vertical = (d.bits() & 1) != 0;
    const int64_t along = rv.vertical ? H : W, across = rv.vertical ? W : H;
    const double width = std::min(12.0, 3.0 + static_cast<double>(std::min(H, W)) / 512.0);
    const double base = d.uniform(0.35, 0.65), a1 = 0.12, a2 = 0.04;
    const double f1 = d.uniform(0.8, 1.6), f2 = d.uniform(2.0, 3.5);
    const double p1 = d.uniform(0.0, kTwoPi), p2 = d.uniform(0.0, kTwoPi);
    rv.centre.resize(static_cast<size_t>(along));
    rv.half.resize(static_cast<size_t>(along));
    for (int64_t t = 0; t < along; ++t) {
        const double x = static_cast<double>(t) / static_cast<double>(along);
        double s1, c1, s2, c2;
        dsincos(kTwoPi * f1 * x + p1, s1, c1);
        dsincos(kTwoPi * f2 * x + p2, s2, c2);
        rv.centre[static_cast<size_t>(t)] = (across - 1) * (base + a1 * s1 + a2 * s2);
        // d(centre)/dt, so that the width across the flow stays `width`.
        const double slope = (across - 1) * kTwoPi * (a1 * f1 * c1 + a2 * f2 * c2) / along;
        rv.half[static_cast<size_t>(t)] = 0.5 * width * std::sqrt(1.0 + slope * slope);
    }
    return rv;
}

std::vector<std::vector<Disc>> make_holes(Draws& d, int64_t H, int64_t W) {
    const double M = static_cast<double>(std::min(H, W));
    const int n = 5 + static_cast<int>(d.bits() % 4);
    std::vector<std::vector<Disc>> holes;
    for (int h = 0; h < n; ++h) {
        std::vector<Disc> blob;
        const double R = M * d.uniform(0.015, 0.04) + 2.0;
        const double r0 = d.uniform(0.08, 0.92) * H, c0 = d.uniform(0.08, 0.92) * W;
        blob.push_back({r0, c0, R});
        const int extra = static_cast<int>(d.bits() % 3);  // blobs: up to two more lobes
        for (int e = 0; e < extra; ++e) {
            const double dr = d.uniform(-0.7, 0.7) * R, dc = d.uniform(-0.7, 0.7) * R;
            blob.push_back({r0 + dr, c0 + dc, R * d.uniform(0.5, 0.9)});
        }
        holes.push_back(std::move(blob));
    }
    return holes;
}

void make_topo(SynthScene& sc, uint64_t seed, bool with_holes) {
    const int64_t H = sc.rows, W = sc.cols;
    const double N = static_cast<double>(std::max(H, W));
    // Up to 8 octaves from N/2 down to cells of 4 pixels.
    Fractal topo(seed, kCaseTopo, kTopo, H, W, N / 2.0, 8, 4.0);
    CohTexture tex(seed, kCaseTopo, H, W);

    // Pass 1: unscaled topography into truth, coherence texture into coherence.
#pragma omp parallel
    {
        std::vector<float> s(static_cast<size_t>(std::max(topo.scratch_size(), tex.fr.scratch_size())));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < H; ++r) {
            topo.row(r, W, sc.truth.data() + r * W, s.data());
            tex.fr.row(r, W, sc.coherence.data() + r * W, s.data());
        }
    }
    // Many fringes, but unwrappable: 99.9 % of the pixel steps below 0.65 rad, none above 1.1.
    const double step_max = max_edge_step(sc.truth, H, W);
    const double step_q = edge_step_quantile(sc.truth, H, W, step_max, 0.999);
    const double kMaxStep = 0.65;  // rad per pixel, "steep" for the coherence model
    const double scale = step_q > 0.0 ? std::min(kMaxStep / step_q, 1.1 / step_max) : 0.0;
    const double inv_tex = 1.0 / tex.fr.amp_sum();

    River river;
    std::vector<std::vector<Disc>> holes;
    if (with_holes) {
        Draws d{stream_key(seed, kCaseHoles, kParams)};
        river = make_river(d, H, W);
        holes = make_holes(d, H, W);
    }
    const uint64_t nkey = stream_key(seed, kCaseTopo, kNoise);
    const uint64_t hkey = stream_key(seed, kCaseHoles, kHoleNoise);
    const double inv_sqrt_2L = 1.0 / std::sqrt(2.0 * 4.0);  // L = 4 looks
    const int64_t kb = std::clamp<int64_t>(static_cast<int64_t>(N) / 128, 1, 8);
    const float nanf = std::numeric_limits<float>::quiet_NaN();

    // Pass 2: coherence (from texture and local slope) and wrapped phase. truth is only read.
#pragma omp parallel
    {
        std::vector<const Disc*> near;
        std::vector<double> z(static_cast<size_t>(W));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < H; ++r) {
            gauss_row(nkey, static_cast<uint64_t>(r * W), W, z.data());
            const float* f = sc.truth.data() + r * W;
            // Slope over a baseline of +-kb pixels: smooth, free of the finest octave's texture.
            const int64_t ru = std::max<int64_t>(r - kb, 0), rd = std::min<int64_t>(r + kb, H - 1);
            const float* fu = sc.truth.data() + ru * W;
            const float* fd = sc.truth.data() + rd * W;
            const double dr_den = static_cast<double>(std::max<int64_t>(rd - ru, 1));
            float* w = sc.wrapped.data() + r * W;
            float* g = sc.coherence.data() + r * W;
            near.clear();
            for (const auto& blob : holes)
                for (const Disc& dc : blob)
                    if (std::fabs(r - dc.r0) < 1.25 * dc.radius + 1.0) near.push_back(&dc);
            for (int64_t c = 0; c < W; ++c) {
                const uint64_t i = static_cast<uint64_t>(r * W + c);
                if (with_holes && river.contains(r, c)) {
                    w[c] = nanf;
                    g[c] = 0.0f;
                    continue;
                }
                const int64_t cl = std::max<int64_t>(c - kb, 0), cr = std::min<int64_t>(c + kb, W - 1);
                const double dx = (f[cr] - f[cl]) / static_cast<double>(std::max<int64_t>(cr - cl, 1));
                const double dy = (fd[c] - fu[c]) / dr_den;
                const double slope = clamp01(scale * std::max(std::fabs(dx), std::fabs(dy)) / kMaxStep);
                const double texv = g[c] * inv_tex;  // about [-0.6, 0.6]
                double coh = 0.98 - 0.63 * clamp01(0.45 + 0.9 * texv + 0.6 * (slope - 0.3));
                bool inside = false;
                if (!near.empty()) {
                    double rho = 1e30;  // distance / radius to the nearest disc
                    for (const Disc* dc : near) {
                        const double a = (r - dc->r0), b = (c - dc->c0);
                        rho = std::min(rho, std::sqrt(a * a + b * b) / dc->radius);
                    }
                    if (rho < 1.0) {
                        inside = true;
                        coh = 0.05;
                    } else if (rho < 1.25) {
                        coh = 0.05 + (coh - 0.05) * (rho - 1.0) / 0.25;
                    }
                }
                g[c] = static_cast<float>(coh);
                const double tv = static_cast<float>(scale * f[c]);
                if (inside) {
                    w[c] = wrap_f(-kPi + kTwoPi * u01(hash_at(hkey, i)));
                } else {
                    const double sigma = std::sqrt(1.0 - coh * coh) / coh * inv_sqrt_2L;
                    const double n = std::clamp(sigma * z[static_cast<size_t>(c)], -kPi, kPi);
                    w[c] = wrap_f(tv + n);
                }
            }
        }
    }
    // Pass 3: scale truth in place; NaN under the river.
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < H; ++r) {
        float* t = sc.truth.data() + r * W;
        const float* w = sc.wrapped.data() + r * W;
        for (int64_t c = 0; c < W; ++c) t[c] = std::isnan(w[c]) ? nanf : static_cast<float>(scale * t[c]);
    }
}

// ---------------------------------------------------------------------------------------------
// fringes: concentric quadratic phase, fringe spacing ~5 px at the farthest corner, noise 0.5.

void make_fringes(SynthScene& sc, uint64_t seed) {
    const int64_t H = sc.rows, W = sc.cols;
    Draws d{stream_key(seed, kCaseFringes, kParams)};
    const double r0 = (H - 1) * d.uniform(0.4, 0.6), c0 = (W - 1) * d.uniform(0.4, 0.6);
    double dmax2 = 0.0;
    for (double cr : {0.0, static_cast<double>(H - 1)})
        for (double cc : {0.0, static_cast<double>(W - 1)})
            dmax2 = std::max(dmax2, (cr - r0) * (cr - r0) + (cc - c0) * (cc - c0));
    const double spacing = d.uniform(4.5, 5.5);
    // gradient 2*a*d = 2*pi/spacing at d = dmax.
    const double a = kPi / (spacing * std::max(std::sqrt(dmax2), 1.0));
    CohTexture tex(seed, kCaseFringes, H, W);
    const double inv_tex = 1.0 / tex.fr.amp_sum();
    const uint64_t nkey = stream_key(seed, kCaseFringes, kNoise);
#pragma omp parallel
    {
        std::vector<float> s(static_cast<size_t>(tex.fr.scratch_size()));
        std::vector<double> z(static_cast<size_t>(W));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < H; ++r) {
            gauss_row(nkey, static_cast<uint64_t>(r * W), W, z.data());
            float* t = sc.truth.data() + r * W;
            float* w = sc.wrapped.data() + r * W;
            float* g = sc.coherence.data() + r * W;
            tex.fr.row(r, W, g, s.data());
            const double dr2 = (r - r0) * (r - r0);
            for (int64_t c = 0; c < W; ++c) {
                const float tv = static_cast<float>(a * (dr2 + (c - c0) * (c - c0)));
                t[c] = tv;
                w[c] = wrap_f(static_cast<double>(tv) + 0.5 * z[static_cast<size_t>(c)]);
                g[c] = static_cast<float>(0.7 + 0.03 * (g[c] * inv_tex));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// noisy: topo's topography under a smooth coherence field (0.1-0.95) and the phase noise of a
// two-look interferogram drawn as such (two products of correlated circular Gaussian pairs):
// residues on about a tenth of the pixels, the regime of docs/ARCHITECTURE.md 2.1's guide.

void make_noisy(SynthScene& sc, uint64_t seed) {
    make_topo(sc, seed, false);  // the truth; its coherence and wrapped phase are replaced
    const int64_t H = sc.rows, W = sc.cols;
    CohTexture tex(seed, kCaseNoisy, H, W);
    const double inv_tex = 1.0 / tex.fr.amp_sum();
    constexpr int kLooks = 2;
#pragma omp parallel
    {
        std::vector<float> s(static_cast<size_t>(tex.fr.scratch_size()));
        std::vector<double> z(static_cast<size_t>(4 * kLooks * W));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < H; ++r) {
            for (int j = 0; j < 4 * kLooks; ++j)
                gauss_row(stream_key(seed, kCaseNoisy, kNoise + 100 + j), static_cast<uint64_t>(r * W), W, z.data() + j * W);
            float* g = sc.coherence.data() + r * W;
            float* w = sc.wrapped.data() + r * W;
            const float* t = sc.truth.data() + r * W;
            tex.fr.row(r, W, g, s.data());
            for (int64_t c = 0; c < W; ++c) {
                const double coh = std::clamp(0.62 + 0.75 * (g[c] * inv_tex), 0.1, 0.95);
                const double q = std::sqrt(1.0 - coh * coh);
                double re = 0.0, im = 0.0;  // sum over looks of s1 * conj(coh s1 + q n)
                for (int l = 0; l < kLooks; ++l) {
                    const double* zl = z.data() + 4 * l * W;
                    const double a = zl[c], b = zl[W + c], nr = zl[2 * W + c], ni = zl[3 * W + c];
                    const double cr = coh * a + q * nr, ci = coh * b + q * ni;
                    re += a * cr + b * ci, im += b * cr - a * ci;
                }
                g[c] = static_cast<float>(coh);
                w[c] = wrap_f(static_cast<double>(t[c]) + datan2(im, re));
            }
        }
    }
}

}  // namespace

const std::vector<std::string>& synth_case_names() {
    static const std::vector<std::string> names{"bowl", "topo", "holes", "fringes"};
    return names;
}

SynthScene make_scene(const std::string& name, int64_t rows, int64_t cols, uint64_t seed) {
    const auto& names = synth_case_names();
    if (name != "noisy" && std::find(names.begin(), names.end(), name) == names.end()) {
        throw std::invalid_argument("unknown synthetic case '" + name +
                                    "' (expected bowl, topo, holes, fringes or noisy)");
    }
    if (rows < 2 || cols < 2) {
        throw std::invalid_argument("synthetic scene must be at least 2x2, got " +
                                    std::to_string(rows) + "x" + std::to_string(cols));
    }
    if (rows > (int64_t{1} << 31) || cols > (int64_t{1} << 31)) {
        throw std::invalid_argument("synthetic scene too large: " + std::to_string(rows) + "x" +
                                    std::to_string(cols));
    }
    SynthScene sc;
    sc.name = name;
    sc.rows = rows;
    sc.cols = cols;
    const size_t n = static_cast<size_t>(rows * cols);
    sc.wrapped.resize(n);
    sc.coherence.resize(n);
    sc.truth.resize(n);
    if (name == "bowl") {
        make_bowl(sc, seed);
    } else if (name == "topo") {
        make_topo(sc, seed, false);
    } else if (name == "holes") {
        make_topo(sc, seed, true);
    } else if (name == "noisy") {
        make_noisy(sc, seed);
    } else {
        make_fringes(sc, seed);
    }
    return sc;
}

std::vector<std::string> scene_files(const std::string& name, const std::string& dir) {
    const std::filesystem::path base(dir);
    return {(base / (name + "_wrapped.tif")).string(), (base / (name + "_coherence.tif")).string(),
            (base / (name + "_truth.tif")).string()};
}

std::string write_scene(const SynthScene& scene, const std::string& dir) {
    GeoRef geo;
    // A plausible UTM zone 11N frame: 30 m pixels, north up, upper-left corner in the zone.
    geo.has_geotransform = true;
    geo.geotransform = {350000.0, 30.0, 0.0, 3900000.0, 0.0, -30.0};
    geo.projection_wkt = epsg_wkt(32611);
    // Noisy float phase barely deflates, and decoding it would dominate the benchmarks' reads.
    geo.compress = false;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<std::string> files = scene_files(scene.name, dir);
    write_geotiff_f32(files[0], scene.rows, scene.cols, scene.wrapped.data(), geo, nan);
    write_geotiff_f32(files[1], scene.rows, scene.cols, scene.coherence.data(), geo, std::nullopt);
    write_geotiff_f32(files[2], scene.rows, scene.cols, scene.truth.data(), geo, nan);
    return files[0];
}

}  // namespace tessera
