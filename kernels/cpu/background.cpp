// Background surface fit and removal, CPU backend (kernels/background.h explains the
// exact, partition-invariant summation of the moments).
#include "kernels/background.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tessera {

namespace {

// Windows smaller than this run on one thread (parallel regions cost more than they
// save there, and much more when the cores are oversubscribed).
constexpr int64_t kParallelMinPixels = int64_t{1} << 16;

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

constexpr int kFracBits = 62;  // X_p, Y_q = round(x^p * 2^62)

inline void add256(ExactSum& acc, const uint64_t w[4]) {
    uint64_t carry = 0;
    for (int k = 0; k < 4; ++k) {
        const uint64_t a = acc[static_cast<size_t>(k)];
        const uint64_t s = a + w[k];
        const uint64_t c1 = s < a;
        const uint64_t s2 = s + carry;
        const uint64_t c2 = s2 < s;
        acc[static_cast<size_t>(k)] = s2;
        carry = c1 | c2;
    }
}

inline void negate256(uint64_t w[4]) {
    uint64_t carry = 1;
    for (int k = 0; k < 4; ++k) {
        const uint64_t v = ~w[k];
        w[k] = v + carry;
        carry = (carry && w[k] == 0) ? 1 : 0;
    }
}

// acc += a * b, exactly (|a| < 2^127, |b| < 2^63: the product fits 192 bits).
inline void mul_add(ExactSum& acc, i128 a, int64_t b) {
    if (a == 0 || b == 0) return;
    const bool neg = (a < 0) != (b < 0);
    const u128 ua = a < 0 ? -static_cast<u128>(a) : static_cast<u128>(a);
    const uint64_t ub = b < 0 ? -static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
    const u128 lo = static_cast<u128>(static_cast<uint64_t>(ua)) * ub;
    const u128 hi = static_cast<u128>(static_cast<uint64_t>(ua >> 64)) * ub;
    const u128 mid = (lo >> 64) + static_cast<uint64_t>(hi);
    uint64_t w[4] = {static_cast<uint64_t>(lo), static_cast<uint64_t>(mid),
                     static_cast<uint64_t>(hi >> 64) + static_cast<uint64_t>(mid >> 64), 0};
    if (neg) negate256(w);
    add256(acc, w);
}

inline void add_int(ExactSum& acc, int64_t v) {
    const uint64_t ext = v < 0 ? ~uint64_t{0} : 0;
    const uint64_t w[4] = {static_cast<uint64_t>(v), ext, ext, ext};
    add256(acc, w);
}

// Nearest double (from the top 128 significant bits; the same integer always gives
// the same double) times 2^-scale.
double to_double(const ExactSum& s, int scale) {
    uint64_t w[4] = {s[0], s[1], s[2], s[3]};
    const bool neg = (w[3] >> 63) != 0;
    if (neg) negate256(w);
    int k = 3;
    while (k > 0 && w[k] == 0) --k;
    double v;
    if (k == 0) {
        v = static_cast<double>(w[0]);
    } else {
        const u128 top = (static_cast<u128>(w[k]) << 64) | w[k - 1];
        v = std::ldexp(static_cast<double>(top), 64 * (k - 1));
    }
    v = std::ldexp(v, -scale);
    return neg ? -v : v;
}

// round(v) to nearest, ties to even (llrint in the default rounding mode), inlined:
// glibc's llrint is a call, which dominated the per-pixel loop.
inline int64_t round_even(double v) {
#if defined(__SSE2__)
    return _mm_cvtsd_si64(_mm_set_sd(v));
#else
    return static_cast<int64_t>(std::llrint(v));
#endif
}

inline int64_t fixed62(double v) { return static_cast<int64_t>(std::llrint(std::ldexp(v, kFracBits))); }

inline bool used(const float* z, const uint8_t* valid, const uint8_t* mask, int64_t i) {
    return (valid == nullptr || valid[i] != 0) && (mask == nullptr || mask[i] != 0) && std::isfinite(z[i]);
}

// One row's exact sums: rg[p] = sum X_p, rz[p] = sum Z X_p (p <= n), over used pixels.
// full[p]: sum X_p over all the window's columns; the pixels not used are subtracted
// from it (images are mostly valid), so a used pixel costs only its Z X_p products.
template <int N>
int64_t row_sums(const float* z, const uint8_t* valid, const uint8_t* mask, int64_t cols, const int64_t* X,
                 const i128* full, double zscale, i128* rg, i128* rz) {
    constexpr int NP = 2 * N + 1;
    i128 g[NP];
    for (int p = 0; p < NP; ++p) g[p] = full[p];
    i128 h[N + 1] = {};
    int64_t cnt = cols;
    for (int64_t c = 0; c < cols; ++c) {
        const int64_t* xc = X + c * NP;
        if (!used(z, valid, mask, c)) {
            --cnt;
            for (int p = 0; p < NP; ++p) g[p] -= xc[p];
            continue;
        }
        const int64_t Z = round_even(static_cast<double>(z[c]) * zscale);
        for (int p = 0; p <= N; ++p) h[p] += static_cast<i128>(Z) * xc[p];
    }
    for (int p = 0; p < NP; ++p) rg[p] = g[p];
    for (int p = 0; p <= N; ++p) rz[p] = h[p];
    return cnt;
}

using RowSumsFn = int64_t (*)(const float*, const uint8_t*, const uint8_t*, int64_t, const int64_t*, const i128*,
                              double, i128*, i128*);

RowSumsFn row_sums_for(int degree) {
    switch (degree) {
        case 0: return &row_sums<0>;
        case 1: return &row_sums<1>;
        case 2: return &row_sums<2>;
        case 3: return &row_sums<3>;
        case 4: return &row_sums<4>;
        case 5: return &row_sums<5>;
        default: return &row_sums<6>;
    }
}

// Coefficients of the x-polynomial at row coordinate y: a[i] = sum_j c(i, j) y^j (Horner in y).
void row_poly(const SurfaceFit& f, double y, double* a) {
    const int n = f.degree;
    for (int i = 0; i <= n; ++i) {
        double acc = f.coeffs[static_cast<size_t>(moment_index(i, n - i, n))];
        for (int j = n - i - 1; j >= 0; --j) acc = acc * y + f.coeffs[static_cast<size_t>(moment_index(i, j, n))];
        a[i] = acc;
    }
}

inline double eval_x(const double* a, int n, double x) {
    double s = a[n];
    for (int i = n - 1; i >= 0; --i) s = s * x + a[i];
    return s;
}

}  // namespace

void check_surface_degree(int degree) {
    if (degree < 0 || degree > kMaxSurfaceDegree)
        throw std::invalid_argument("surface degree " + std::to_string(degree) + " out of range 0.." +
                                    std::to_string(kMaxSurfaceDegree));
}

void add_exact(ExactSum& into, const ExactSum& v) { add256(into, v.data()); }

ExactSum exact_from(int64_t v) {
    ExactSum s{};
    add_int(s, v);
    return s;
}

std::pair<int, int> surface_term(int t) {
    int d = 0;
    while ((d + 1) * (d + 2) / 2 <= t) ++d;
    const int j = t - d * (d + 1) / 2;
    return {d - j, j};
}

double surface_max_abs(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                       int64_t stride) {
    double m = 0;
#pragma omp parallel for reduction(max : m) schedule(static) if (own.size() >= kParallelMinPixels)
    for (int64_t r = 0; r < own.rows; ++r) {
        const int64_t o = r * stride;
        for (int64_t c = 0; c < own.cols; ++c)
            if (used(z + o, valid ? valid + o : nullptr, mask ? mask + o : nullptr, c))
                m = std::max(m, static_cast<double>(std::fabs(z[o + c])));
    }
    return m;
}

int surface_zexp(double max_abs) {
    if (!(max_abs > 0) || !std::isfinite(max_abs)) return 0;
    int e = 0;
    std::frexp(max_abs, &e);  // max_abs < 2^e
    return 31 - e;
}

SurfaceMoments surface_moments(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                               int64_t stride, int64_t H, int64_t W, int degree, int zexp) {
    check_surface_degree(degree);
    const int n = degree, n2 = 2 * n, np = n2 + 1;
    SurfaceMoments m;
    m.degree = n;
    m.zexp = zexp;
    m.geo.assign(static_cast<size_t>(surface_terms(n2)), ExactSum{});
    m.zm.assign(static_cast<size_t>(surface_terms(n)), ExactSum{});
    if (own.rows <= 0 || own.cols <= 0) return m;

    // X_p of the window's columns, interleaved per column.
    std::vector<int64_t> X(static_cast<size_t>(own.cols * np));
    for (int64_t c = 0; c < own.cols; ++c) {
        const double x = surface_coord(own.col0 + c, W);
        double xp = 1.0;
        for (int p = 0; p < np; ++p) {
            X[static_cast<size_t>(c * np + p)] = fixed62(xp);
            xp *= x;
        }
    }
    i128 full[2 * kMaxSurfaceDegree + 1] = {};
    for (int64_t c = 0; c < own.cols; ++c)
        for (int p = 0; p < np; ++p) full[p] += X[static_cast<size_t>(c * np + p)];
    const double zscale = std::ldexp(1.0, zexp);  // a power of two: z * zscale is exact
    const RowSumsFn row_fn = row_sums_for(n);

#pragma omp parallel if (own.size() >= kParallelMinPixels)
    {
        std::vector<ExactSum> geo(m.geo.size(), ExactSum{}), zm(m.zm.size(), ExactSum{});
        int64_t count = 0;
        i128 rg[2 * kMaxSurfaceDegree + 1], rz[kMaxSurfaceDegree + 1];
        int64_t Y[2 * kMaxSurfaceDegree + 1];
#pragma omp for schedule(static)
        for (int64_t r = 0; r < own.rows; ++r) {
            const int64_t o = r * stride;
            const int64_t cnt = row_fn(z + o, valid ? valid + o : nullptr, mask ? mask + o : nullptr, own.cols,
                                       X.data(), full, zscale, rg, rz);
            if (cnt == 0) continue;
            count += cnt;
            const double y = surface_coord(own.row0 + r, H);
            double yq = 1.0;
            for (int q = 0; q < np; ++q) {
                Y[q] = fixed62(yq);
                yq *= y;
            }
            for (int p = 0; p <= n2; ++p)
                for (int q = 0; q <= n2 - p; ++q) mul_add(geo[static_cast<size_t>(moment_index(p, q, n2))], rg[p], Y[q]);
            for (int p = 0; p <= n; ++p)
                for (int q = 0; q <= n - p; ++q) mul_add(zm[static_cast<size_t>(moment_index(p, q, n))], rz[p], Y[q]);
        }
#pragma omp critical(tessera_surface_moments)
        {
            // Exact: the order in which the threads arrive does not matter.
            for (size_t k = 0; k < geo.size(); ++k) add256(m.geo[k], geo[k].data());
            for (size_t k = 0; k < zm.size(); ++k) add256(m.zm[k], zm[k].data());
            m.count += count;
        }
    }
    return m;
}

void add_moments(SurfaceMoments& into, const SurfaceMoments& other) {
    if (into.degree != other.degree || into.zexp != other.zexp || into.geo.size() != other.geo.size() ||
        into.zm.size() != other.zm.size())
        throw std::invalid_argument("add_moments: moments of different degree or quantisation");
    for (size_t k = 0; k < into.geo.size(); ++k) add256(into.geo[k], other.geo[k].data());
    for (size_t k = 0; k < into.zm.size(); ++k) add256(into.zm[k], other.zm[k].data());
    into.count += other.count;
}

SurfaceFit solve_surface(const SurfaceMoments& mo) {
    check_surface_degree(mo.degree);
    const int n = mo.degree, M = surface_terms(n);
    const std::string what = "degree-" + std::to_string(n) + " surface (" + std::to_string(M) + " terms)";
    if (mo.count < M)
        throw SurfaceFitError("too few valid pixels for a " + what + ": " + std::to_string(mo.count) +
                              " used, at least " + std::to_string(M) + " needed");
    std::vector<double> G(static_cast<size_t>(M * M)), b(static_cast<size_t>(M)), s(static_cast<size_t>(M));
    for (int a = 0; a < M; ++a) {
        const auto [ia, ja] = surface_term(a);
        for (int c = 0; c < M; ++c) {
            const auto [ic, jc] = surface_term(c);
            G[static_cast<size_t>(a * M + c)] =
                to_double(mo.geo[static_cast<size_t>(moment_index(ia + ic, ja + jc, 2 * n))], 2 * kFracBits);
        }
        b[static_cast<size_t>(a)] = to_double(mo.zm[static_cast<size_t>(moment_index(ia, ja, n))], 2 * kFracBits + mo.zexp);
    }
    // Jacobi equilibration: A = S G S with unit diagonal, r = S b.
    for (int a = 0; a < M; ++a) {
        const double d = G[static_cast<size_t>(a * M + a)];
        if (!(d > 0))
            throw SurfaceFitError("the valid pixels do not determine a " + what + " (" + std::to_string(mo.count) +
                                  " pixels used; they all lie on x = 0 or y = 0)");
        s[static_cast<size_t>(a)] = 1.0 / std::sqrt(d);
    }
    std::vector<double> A(G.size()), r(b.size());
    for (int a = 0; a < M; ++a) {
        for (int c = 0; c < M; ++c)
            A[static_cast<size_t>(a * M + c)] =
                G[static_cast<size_t>(a * M + c)] * s[static_cast<size_t>(a)] * s[static_cast<size_t>(c)];
        r[static_cast<size_t>(a)] = b[static_cast<size_t>(a)] * s[static_cast<size_t>(a)];
    }
    // Cholesky A = L L^T (lower triangle of L).
    std::vector<double> L(G.size(), 0.0);
    double min_pivot = 1.0;
    for (int j = 0; j < M; ++j) {
        double d = A[static_cast<size_t>(j * M + j)];
        for (int k = 0; k < j; ++k) d -= L[static_cast<size_t>(j * M + k)] * L[static_cast<size_t>(j * M + k)];
        min_pivot = std::min(min_pivot, d);
        if (!(d > kSurfacePivotMin)) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.2g", d);
            throw SurfaceFitError("normal equations of the " + what + " are not positive definite (pivot " + buf +
                                  " of term " + std::to_string(j) + "): the " + std::to_string(mo.count) +
                                  " pixels used do not determine it (too few, on a line, or too concentrated); "
                                  "lower the degree or use more pixels");
        }
        const double ljj = std::sqrt(d);
        L[static_cast<size_t>(j * M + j)] = ljj;
        for (int i = j + 1; i < M; ++i) {
            double v = A[static_cast<size_t>(i * M + j)];
            for (int k = 0; k < j; ++k) v -= L[static_cast<size_t>(i * M + k)] * L[static_cast<size_t>(j * M + k)];
            L[static_cast<size_t>(i * M + j)] = v / ljj;
        }
    }
    auto chol_solve = [&](std::vector<double> v) {
        for (int i = 0; i < M; ++i) {
            double t = v[static_cast<size_t>(i)];
            for (int k = 0; k < i; ++k) t -= L[static_cast<size_t>(i * M + k)] * v[static_cast<size_t>(k)];
            v[static_cast<size_t>(i)] = t / L[static_cast<size_t>(i * M + i)];
        }
        for (int i = M - 1; i >= 0; --i) {
            double t = v[static_cast<size_t>(i)];
            for (int k = i + 1; k < M; ++k) t -= L[static_cast<size_t>(k * M + i)] * v[static_cast<size_t>(k)];
            v[static_cast<size_t>(i)] = t / L[static_cast<size_t>(i * M + i)];
        }
        return v;
    };
    std::vector<double> w = chol_solve(r);
    // One step of iterative refinement on the equilibrated system.
    std::vector<double> res(r);
    for (int a = 0; a < M; ++a)
        for (int c = 0; c < M; ++c) res[static_cast<size_t>(a)] -= A[static_cast<size_t>(a * M + c)] * w[static_cast<size_t>(c)];
    const std::vector<double> dw = chol_solve(res);
    SurfaceFit f;
    f.degree = n;
    f.count = mo.count;
    f.min_pivot = min_pivot;
    f.coeffs.resize(static_cast<size_t>(M));
    for (int a = 0; a < M; ++a)
        f.coeffs[static_cast<size_t>(a)] = (w[static_cast<size_t>(a)] + dw[static_cast<size_t>(a)]) * s[static_cast<size_t>(a)];
    return f;
}

double evaluate_surface(const SurfaceFit& fit, int64_t r, int64_t c, int64_t H, int64_t W) {
    double a[kMaxSurfaceDegree + 1] = {};
    row_poly(fit, surface_coord(r, H), a);
    return eval_x(a, fit.degree, surface_coord(c, W));
}

// One row of subtract_surface: first the residuals (no branches, so the loop can be
// vectorised; the same double Horner steps as eval_x), then the squares of the used
// ones in 4 interleaved partial sums (the RMS is a report; this order is fixed for a
// given window).
template <int N>
void subtract_row(float* zr, const uint8_t* vr, const uint8_t* mr, int64_t cols, const double* xs, const double* a,
                  double& sq_out, int64_t& cnt_out) {
    // Validity and the NaN select in integer bits: a floating-point compare or select
    // may trap (-ftrapping-math), which keeps the compiler from vectorising the loop.
    constexpr uint32_t kNaN = 0x7fc00000u, kExp = 0x7f800000u;
    auto residuals = [&](auto has_valid) {
        for (int64_t c = 0; c < cols; ++c) {
            const float v = zr[c];
            double s = a[N];
            for (int i = N - 1; i >= 0; --i) s = s * xs[c] + a[i];
            const float d = v - static_cast<float>(s);
            bool ok = (std::bit_cast<uint32_t>(v) & kExp) != kExp;  // finite
            if constexpr (decltype(has_valid)::value) ok = ok & (vr[c] != 0);
            const uint32_t m = 0u - static_cast<uint32_t>(ok);
            zr[c] = std::bit_cast<float>((std::bit_cast<uint32_t>(d) & m) | (kNaN & ~m));
        }
    };
    if (vr) residuals(std::true_type{});
    else residuals(std::false_type{});
    double sq[4] = {0, 0, 0, 0};
    int64_t cnt = 0;
    for (int64_t c = 0; c < cols; ++c) {
        const float d = zr[c];
        const bool use = !std::isnan(d) && (mr == nullptr || mr[c] != 0);
        sq[c & 3] += use ? static_cast<double>(d) * static_cast<double>(d) : 0.0;
        cnt += use;
    }
    sq_out = (sq[0] + sq[1]) + (sq[2] + sq[3]);
    cnt_out = cnt;
}

using SubtractRowFn = void (*)(float*, const uint8_t*, const uint8_t*, int64_t, const double*, const double*,
                               double&, int64_t&);

SubtractRowFn subtract_row_for(int degree) {
    switch (degree) {
        case 0: return &subtract_row<0>;
        case 1: return &subtract_row<1>;
        case 2: return &subtract_row<2>;
        case 3: return &subtract_row<3>;
        case 4: return &subtract_row<4>;
        case 5: return &subtract_row<5>;
        default: return &subtract_row<6>;
    }
}

ResidualSums subtract_surface(float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                              int64_t stride, int64_t H, int64_t W, const SurfaceFit& fit) {
    check_surface_degree(fit.degree);
    if (fit.coeffs.size() != static_cast<size_t>(surface_terms(fit.degree)))
        throw std::invalid_argument("subtract_surface: wrong number of coefficients");
    ResidualSums out;
    if (own.rows <= 0 || own.cols <= 0) return out;
    std::vector<double> xs(static_cast<size_t>(own.cols));
    for (int64_t c = 0; c < own.cols; ++c) xs[static_cast<size_t>(c)] = surface_coord(own.col0 + c, W);
    std::vector<double> row_sq(static_cast<size_t>(own.rows), 0.0);
    std::vector<int64_t> row_n(static_cast<size_t>(own.rows), 0);
    const SubtractRowFn row_fn = subtract_row_for(fit.degree);
#pragma omp parallel for schedule(static) if (own.size() >= kParallelMinPixels)
    for (int64_t r = 0; r < own.rows; ++r) {
        double a[kMaxSurfaceDegree + 1] = {};
        row_poly(fit, surface_coord(own.row0 + r, H), a);
        row_fn(z + r * stride, valid ? valid + r * stride : nullptr, mask ? mask + r * stride : nullptr, own.cols,
               xs.data(), a, row_sq[static_cast<size_t>(r)], row_n[static_cast<size_t>(r)]);
    }
    for (int64_t r = 0; r < own.rows; ++r) {
        out.sum_sq += row_sq[static_cast<size_t>(r)];
        out.count += row_n[static_cast<size_t>(r)];
    }
    return out;
}

std::string describe_surface(const SurfaceFit& fit) {
    std::string s;
    char buf[64];
    for (size_t t = 0; t < fit.coeffs.size(); ++t) {
        const auto [i, j] = surface_term(static_cast<int>(t));
        const double c = fit.coeffs[t];
        if (t == 0) {
            std::snprintf(buf, sizeof buf, "%.6g", c);
        } else {
            std::snprintf(buf, sizeof buf, " %c %.6g", c < 0 ? '-' : '+', std::fabs(c));
        }
        s += buf;
        if (i > 0) s += i == 1 ? " x" : " x^" + std::to_string(i);
        if (j > 0) s += j == 1 ? " y" : " y^" + std::to_string(j);
    }
    return s;
}

}  // namespace tessera
