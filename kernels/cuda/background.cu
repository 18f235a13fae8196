// Background surface fit and removal on the device (kernels/cuda/background.h). The moments
// are exact integers (kernels/background.h): integer sums are associative, so the device may
// group the pixels as it likes and still produce the CPU's integers. It keeps the CPU's
// factorisation: per row, the 128-bit sums of Z X_p over the used pixels and of X_p over the
// unused ones (subtracted from the window's full column sums), then the rows times Y_q into
// 256-bit accumulators. X_p and Y_q come from the host's coordinate doubles by the CPU's own
// double steps (products from 1.0, round(v * 2^62) ties to even), so they are its integers.
//
// Passes over the pixels: max |z|, the row sums (fit); the subtraction and the residual
// sums (subtract). Everything else runs over per-row or per-column vectors.
#include "kernels/cuda/background.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

using u64 = unsigned long long;
typedef unsigned __int128 u128;  // two's complement: also the signed 128-bit sums

constexpr int kMaxN = kMaxSurfaceDegree;
constexpr double kTwo62 = 4611686018427387904.0;  // 2^62: X_p, Y_q = round(x^p 2^62)
constexpr unsigned kFull = 0xffffffffu;

// --- exact integer helpers (the CPU's, for the device) ------------------------------

// round(v * 2^62), ties to even: std::llrint(std::ldexp(v, 62)) (|v| <= 1, the product is exact).
__device__ __forceinline__ long long fixed62(double v) { return __double2ll_rn(__dmul_rn(v, kTwo62)); }

// The signed 64 x 64 -> 128-bit product.
__device__ __forceinline__ u128 mul_s64(long long a, long long b) {
    const u64 lo = static_cast<u64>(a) * static_cast<u64>(b);
    const u64 hi = static_cast<u64>(__mul64hi(a, b));
    return (static_cast<u128>(hi) << 64) | lo;
}

__device__ __forceinline__ u128 shfl_down128(u128 v, int d) {
    const u64 lo = __shfl_down_sync(kFull, static_cast<u64>(v), d);
    const u64 hi = __shfl_down_sync(kFull, static_cast<u64>(v >> 64), d);
    return (static_cast<u128>(hi) << 64) | lo;
}

__device__ __forceinline__ u128 warp_sum128(u128 v) {
    for (int d = 16; d > 0; d >>= 1) v += shfl_down128(v, d);
    return v;  // lane 0
}

struct Sum256 {
    u64 w[4];
};

__device__ __forceinline__ void add256(Sum256& acc, const Sum256& v) {
    u64 carry = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const u64 a = acc.w[k];
        const u64 s = a + v.w[k];
        const u64 c1 = s < a;
        const u64 s2 = s + carry;
        const u64 c2 = s2 < s;
        acc.w[k] = s2;
        carry = c1 | c2;
    }
}

__device__ __forceinline__ void negate256(Sum256& v) {
    u64 carry = 1;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const u64 x = ~v.w[k];
        v.w[k] = x + carry;
        carry = (carry && v.w[k] == 0) ? 1 : 0;
    }
}

// acc += a * b exactly (a: a signed 128-bit value, |a| < 2^127; b: signed 64-bit).
__device__ __forceinline__ void mul_add(Sum256& acc, u128 a, long long b) {
    if (a == 0 || b == 0) return;
    const bool an = (a >> 127) != 0;
    const bool neg = an != (b < 0);
    const u128 ua = an ? static_cast<u128>(0) - a : a;
    const u64 ub = b < 0 ? 0ull - static_cast<u64>(b) : static_cast<u64>(b);
    const u64 a0 = static_cast<u64>(ua), a1 = static_cast<u64>(ua >> 64);
    const u128 lo = (static_cast<u128>(__umul64hi(a0, ub)) << 64) | (a0 * ub);
    const u128 hi = (static_cast<u128>(__umul64hi(a1, ub)) << 64) | (a1 * ub);
    const u128 mid = (lo >> 64) + static_cast<u64>(hi);
    Sum256 w{{static_cast<u64>(lo), static_cast<u64>(mid), static_cast<u64>(hi >> 64) + static_cast<u64>(mid >> 64), 0}};
    if (neg) negate256(w);
    add256(acc, w);
}

__device__ __forceinline__ Sum256 shfl_down256(const Sum256& v, int d) {
    Sum256 o;
#pragma unroll
    for (int k = 0; k < 4; ++k) o.w[k] = __shfl_down_sync(kFull, v.w[k], d);
    return o;
}

// Term t of a degree-n surface: (i, j) = x^i y^j (tessera::surface_term).
__device__ __forceinline__ void term(int t, int& i, int& j) {
    int d = 0;
    while ((d + 1) * (d + 2) / 2 <= t) ++d;
    j = t - d * (d + 1) / 2;
    i = d - j;
}

__device__ __forceinline__ bool used_px(float v, const uint8_t* valid, const uint8_t* mask, int64_t i) {
    return isfinite(v) && (valid == nullptr || valid[i] != 0) && (mask == nullptr || mask[i] != 0);
}

// --- launch geometry -------------------------------------------------------------------

constexpr int kBX = 32, kBY = 8;

// Reductions: about 4096 blocks of 32 x 8 threads, each thread walking its column down a
// band of rows, so that one atomic per block suffices.
dim3 reduce_grid(const Window& own) {
    const int64_t gx = (own.cols + kBX - 1) / kBX;
    if (gx > 0x7fffffff) throw std::runtime_error("CUDA background: window too wide");
    const int64_t gy = std::max<int64_t>(1, std::min<int64_t>((own.rows + kBY - 1) / kBY, (4096 + gx - 1) / gx));
    return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(std::min<int64_t>(gy, 65535)), 1);
}

// Pixel passes: one thread per pixel of 8 rows; rows past 65535 * 8 by a grid stride.
dim3 pixel_grid(const Window& own) {
    const int64_t gx = (own.cols + kBX - 1) / kBX;
    if (gx > 0x7fffffff) throw std::runtime_error("CUDA background: window too wide");
    const int64_t gy = std::min<int64_t>((own.rows + kBY - 1) / kBY, 65535);
    return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(std::max<int64_t>(gy, 1)), 1);
}

unsigned blocks_for(int64_t n, int threads) {
    const int64_t b = (n + threads - 1) / threads;
    if (b > 0x7fffffff) throw std::runtime_error("CUDA background: too many rows");
    return static_cast<unsigned>(std::max<int64_t>(b, 1));
}

// --- max |z| ---------------------------------------------------------------------------

__global__ void max_abs_kernel(const float* z, const uint8_t* valid, const uint8_t* mask, int64_t rows, int64_t cols,
                               int64_t stride, unsigned* out) {
    // |z| as float bits: for non-negative floats the unsigned order is the numeric order.
    __shared__ unsigned warp_max[kBY];
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kBX + threadIdx.x;
    unsigned m = 0;
    if (c < cols) {
#pragma unroll 4
        for (int64_t r = static_cast<int64_t>(blockIdx.y) * kBY + threadIdx.y; r < rows;
             r += static_cast<int64_t>(gridDim.y) * kBY) {
            const int64_t i = r * stride + c;
            const float v = z[i];
            if (used_px(v, valid, mask, i)) m = max(m, __float_as_uint(fabsf(v)));
        }
    }
    m = __reduce_max_sync(kFull, m);
    if (threadIdx.x == 0) warp_max[threadIdx.y] = m;
    __syncthreads();
    if (threadIdx.y == 0 && threadIdx.x == 0) {
        for (int k = 1; k < kBY; ++k) m = max(m, warp_max[k]);
        if (m != 0) atomicMax(out, m);
    }
}

// --- moments ---------------------------------------------------------------------------

constexpr int kRowThreads = 256;  // one block per row segment of up to 256 * kMaxPerThread columns
constexpr int kMaxPerThread = 32;

// Slots of a row segment's partial sums (128-bit each): 0 sum Z, 1 unused count,
// 2 .. n+1 sum Z X_p (p = 1..n), n+2 .. 3n+1 sum over unused pixels of X_p (p = 1..2n).
// (X_0 = 2^62 exactly, so its sums are the count and sum Z times 2^62.)
__host__ __device__ constexpr int partial_slots(int n) { return 3 * n + 2; }
// Slots of a row's sums: g_p = sum over used of X_p (p = 0..2n), then h_p = sum Z X_p (p = 0..n).
__host__ __device__ constexpr int row_slots(int n) { return 3 * n + 2; }

template <int N>
__global__ void __launch_bounds__(kRowThreads) row_partials_kernel(const float* z, const uint8_t* valid,
                                                                   const uint8_t* mask, int64_t rows, int64_t cols,
                                                                   int64_t stride, const double* xs, double zscale,
                                                                   int per_thread, int64_t nseg, u128* partials) {
    constexpr int NS = partial_slots(N);
    constexpr int kWarps = kRowThreads / 32;
    __shared__ u128 sh[kWarps][NS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t seg_cols = static_cast<int64_t>(kRowThreads) * per_thread;
    for (int64_t b = blockIdx.x; b < rows * nseg; b += gridDim.x) {
        const int64_t r = b / nseg, c0 = (b % nseg) * seg_cols;
        const int64_t c1 = c0 + seg_cols < cols ? c0 + seg_cols : cols;
        const float* zr = z + r * stride;
        const uint8_t* vr = valid ? valid + r * stride : nullptr;
        const uint8_t* mr = mask ? mask + r * stride : nullptr;
        long long zsum = 0;
        unsigned ucnt = 0;
        u128 h[N + 1], u[2 * N + 1];
#pragma unroll
        for (int p = 0; p <= N; ++p) h[p] = 0;
#pragma unroll
        for (int p = 0; p <= 2 * N; ++p) u[p] = 0;
        for (int k0 = 0; k0 < per_thread; k0 += 4) {
            // Four pixels' loads first (independent), then their arithmetic.
            float v[4];
            double x[4];
            int state[4];  // 0 outside the segment, 1 not used, 2 used
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int64_t c = c0 + static_cast<int64_t>(k0 + j) * kRowThreads + threadIdx.x;
                state[j] = 0;
                v[j] = 0.0f;
                x[j] = 0.0;
                if (k0 + j < per_thread && c < c1) {
                    v[j] = zr[c];
                    x[j] = xs[c];
                    state[j] = used_px(v[j], vr, mr, c) ? 2 : 1;
                }
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                double xp = 1.0;  // x^p by the CPU's repeated products
                if (state[j] == 2) {
                    const long long Z = __double2ll_rn(__dmul_rn(static_cast<double>(v[j]), zscale));
                    zsum += Z;
#pragma unroll
                    for (int p = 1; p <= N; ++p) {
                        xp = __dmul_rn(xp, x[j]);
                        h[p] += mul_s64(Z, fixed62(xp));
                    }
                } else if (state[j] == 1) {
                    ++ucnt;
#pragma unroll
                    for (int p = 1; p <= 2 * N; ++p) {
                        xp = __dmul_rn(xp, x[j]);
                        u[p] += static_cast<u128>(static_cast<__int128>(fixed62(xp)));
                    }
                }
            }
        }
        // Warp sums, then the block's (slot s of warp w in sh[w][s]).
        const u128 zs = warp_sum128(static_cast<u128>(static_cast<__int128>(zsum)));
        const unsigned uc = __reduce_add_sync(kFull, ucnt);
        if (lane == 0) {
            sh[warp][0] = zs;
            sh[warp][1] = uc;
        }
#pragma unroll
        for (int p = 1; p <= N; ++p) {
            const u128 t = warp_sum128(h[p]);
            if (lane == 0) sh[warp][1 + p] = t;
        }
        if (uc != 0) {  // warp-uniform: most warps see no unused pixel
#pragma unroll
            for (int p = 1; p <= 2 * N; ++p) {
                const u128 t = warp_sum128(u[p]);
                if (lane == 0) sh[warp][N + 1 + p] = t;
            }
        } else if (lane == 0) {
#pragma unroll
            for (int p = 1; p <= 2 * N; ++p) sh[warp][N + 1 + p] = 0;
        }
        __syncthreads();
        if (threadIdx.x < NS) {
            u128 t = 0;
            for (int w = 0; w < kWarps; ++w) t += sh[w][threadIdx.x];
            partials[b * NS + threadIdx.x] = t;
        }
        __syncthreads();  // sh is reused by the next segment
    }
}

// full[p] = sum of X_p over the window's columns (p = 0..2n), one block.
__global__ void column_sums_kernel(const double* xs, int64_t cols, int n, u128* full) {
    constexpr int kThreads = 1024;
    __shared__ u128 sh[kThreads / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int p = 0; p <= 2 * n; ++p) {
        u128 acc = 0;
        for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
            double xp = 1.0;
            for (int k = 0; k < p; ++k) xp = __dmul_rn(xp, xs[c]);
            acc += static_cast<u128>(static_cast<__int128>(fixed62(xp)));
        }
        acc = warp_sum128(acc);
        if (lane == 0) sh[warp] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            u128 t = 0;
            for (int w = 0; w < kThreads / 32; ++w) t += sh[w];
            full[p] = t;
        }
        __syncthreads();
    }
}

// Row sums from the segments' partials: g_p = full_p - unused_p, h_p; and the row's count.
__global__ void row_sums_kernel(const u128* partials, int64_t rows, int64_t cols, int64_t nseg, int n,
                                const u128* full, u128* rowsum, long long* rowcnt) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const int NS = partial_slots(n), NR = row_slots(n);
    u128 s[partial_slots(kMaxN)];
    for (int k = 0; k < NS; ++k) s[k] = 0;
    for (int64_t g = 0; g < nseg; ++g)
        for (int k = 0; k < NS; ++k) s[k] += partials[(r * nseg + g) * NS + k];
    const long long ucnt = static_cast<long long>(static_cast<u64>(s[1]));
    const long long cnt = cols - ucnt;
    u128* out = rowsum + r * NR;
    out[0] = static_cast<u128>(static_cast<__int128>(cnt)) << 62;  // sum of X_0 = 2^62 over the used pixels
    for (int p = 1; p <= 2 * n; ++p) out[p] = full[p] - s[n + 1 + p];
    out[2 * n + 1] = s[0] << 62;  // sum Z X_0
    for (int p = 1; p <= n; ++p) out[2 * n + 1 + p] = s[1 + p];
    rowcnt[r] = cnt;
}

// Block t < Tg: geo term t (x^p y^q, p + q <= 2n) = sum over rows of g_p Y_q; the next Tz
// blocks the zm terms (h_p Y_q, p + q <= n); the last block the pixel count.
__global__ void fold_kernel(const u128* rowsum, const long long* rowcnt, const double* ys, int64_t rows, int n,
                            Sum256* out) {
    constexpr int kThreads = 256;
    __shared__ Sum256 sh[kThreads / 32];
    __shared__ long long shc[kThreads / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n2 = 2 * n, Tg = (n2 + 1) * (n2 + 2) / 2, Tz = (n + 1) * (n + 2) / 2;
    const int t = blockIdx.x;
    if (t == Tg + Tz) {
        long long c = 0;
        for (int64_t r = threadIdx.x; r < rows; r += kThreads) c += rowcnt[r];
        for (int d = 16; d > 0; d >>= 1) c += __shfl_down_sync(kFull, c, d);
        if (lane == 0) shc[warp] = c;
        __syncthreads();
        if (threadIdx.x == 0) {
            long long total = 0;
            for (int w = 0; w < kThreads / 32; ++w) total += shc[w];
            out[t] = Sum256{{static_cast<u64>(total), 0, 0, 0}};
        }
        return;
    }
    int p, q, slot;
    if (t < Tg) {
        term(t, p, q);
        slot = p;
    } else {
        term(t - Tg, p, q);
        slot = n2 + 1 + p;
    }
    const int NR = row_slots(n);
    Sum256 acc{{0, 0, 0, 0}};
    for (int64_t r = threadIdx.x; r < rows; r += kThreads) {
        double yq = 1.0;  // y^q by the CPU's repeated products
        for (int k = 0; k < q; ++k) yq = __dmul_rn(yq, ys[r]);
        mul_add(acc, rowsum[r * NR + slot], fixed62(yq));
    }
    for (int d = 16; d > 0; d >>= 1) add256(acc, shfl_down256(acc, d));
    if (lane == 0) sh[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        Sum256 total = sh[0];
        for (int w = 1; w < kThreads / 32; ++w) add256(total, sh[w]);
        out[t] = total;
    }
}

// --- subtraction -----------------------------------------------------------------------

struct Coeffs {
    double c[(kMaxN + 1) * (kMaxN + 2) / 2];
};

__host__ __device__ constexpr int mindex(int p, int q) { return (p + q) * (p + q + 1) / 2 + q; }

// a_i(row) = sum_j c(i, j) y^j by Horner in y (the CPU's row_poly), rows x (n + 1).
__global__ void row_poly_kernel(Coeffs k, int n, const double* ys, int64_t rows, double* a) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const double y = ys[r];
    for (int i = 0; i <= n; ++i) {
        double acc = k.c[mindex(i, n - i)];
        for (int j = n - i - 1; j >= 0; --j) acc = __dadd_rn(__dmul_rn(acc, y), k.c[mindex(i, j)]);
        a[r * (n + 1) + i] = acc;
    }
}

template <int N>
__global__ void subtract_kernel(float* z, const uint8_t* valid, int64_t rows, int64_t cols, int64_t stride,
                                const double* xs, const double* a) {
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kBX + threadIdx.x;
    if (c >= cols) return;
    const double x = xs[c];
    const float nan = __int_as_float(0x7fc00000);  // the CPU's quiet NaN bits
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * kBY + threadIdx.y; r < rows;
         r += static_cast<int64_t>(gridDim.y) * kBY) {
        const int64_t i = r * stride + c;
        const double* ar = a + r * (N + 1);
        double s = ar[N];
#pragma unroll
        for (int k = N - 1; k >= 0; --k) s = __dadd_rn(__dmul_rn(s, x), ar[k]);
        const float v = z[i];
        const bool ok = isfinite(v) && (valid == nullptr || valid[i] != 0);
        z[i] = ok ? __fsub_rn(v, __double2float_rn(s)) : nan;
    }
}

// Row r's residual sums as the CPU forms them: four partials over the columns c = k mod 4
// (each in column order; thread 4r + k), then (s0 + s1) + (s2 + s3).
__global__ void residual_rows_kernel(const float* z, const uint8_t* mask, int64_t rows, int64_t cols, int64_t stride,
                                     double* row_sq, long long* row_n) {
    const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t r = g >> 2;
    const int k = static_cast<int>(g & 3);
    double sq = 0.0;
    long long cnt = 0;
    if (r < rows) {
        const float* zr = z + r * stride;
        const uint8_t* mr = mask ? mask + r * stride : nullptr;
#pragma unroll 16
        for (int64_t c = k; c < cols; c += 4) {
            const float d = zr[c];
            const bool use = !isnan(d) && (mr == nullptr || mr[c] != 0);
            sq = __dadd_rn(sq, use ? __dmul_rn(static_cast<double>(d), static_cast<double>(d)) : 0.0);
            cnt += use;
        }
    }
    // Lanes 4m .. 4m+3 hold one row's partials (blockDim is a multiple of 32).
    const double s13 = __shfl_down_sync(kFull, sq, 1);
    const double pair = __dadd_rn(sq, s13);  // lanes 4m: s0 + s1, 4m+2: s2 + s3
    const double other = __shfl_down_sync(kFull, pair, 2);
    cnt += __shfl_down_sync(kFull, cnt, 1);
    cnt += __shfl_down_sync(kFull, cnt, 2);
    if (k == 0 && r < rows) {
        row_sq[r] = __dadd_rn(pair, other);
        row_n[r] = cnt;
    }
}

// The rows' sums added in row order (the CPU's), one block; counts in any order.
__global__ void residual_total_kernel(const double* row_sq, const long long* row_n, int64_t rows, double* out_sq,
                                      long long* out_n) {
    constexpr int kThreads = 1024;
    __shared__ double buf[kThreads];
    __shared__ long long shc[kThreads / 32];
    double total = 0.0;
    long long cnt = 0;
    for (int64_t base = 0; base < rows; base += kThreads) {
        const int64_t r = base + threadIdx.x;
        buf[threadIdx.x] = r < rows ? row_sq[r] : 0.0;
        cnt += r < rows ? row_n[r] : 0;
        __syncthreads();
        if (threadIdx.x == 0) {
            const int m = rows - base < kThreads ? static_cast<int>(rows - base) : kThreads;
            for (int j = 0; j < m; ++j) total = __dadd_rn(total, buf[j]);
        }
        __syncthreads();
    }
    for (int d = 16; d > 0; d >>= 1) cnt += __shfl_down_sync(kFull, cnt, d);
    if ((threadIdx.x & 31) == 0) shc[threadIdx.x >> 5] = cnt;
    __syncthreads();
    if (threadIdx.x == 0) {
        long long c = 0;
        for (int w = 0; w < kThreads / 32; ++w) c += shc[w];
        *out_sq = total;
        *out_n = c;
    }
}

// --- host side -------------------------------------------------------------------------

void check_degree(int degree) {
    if (degree < 0 || degree > kMaxSurfaceDegree)
        throw std::invalid_argument("surface degree " + std::to_string(degree) + " out of range 0.." +
                                    std::to_string(kMaxSurfaceDegree));
}

// Stream-ordered scratch, freed on the stream when the scope ends (also on an exception).
class Scratch {
public:
    Scratch(size_t bytes, cudaStream_t s) : s_(s) { check(cudaMallocAsync(&p_, std::max<size_t>(bytes, 256), s), "cudaMallocAsync (background scratch)"); }
    ~Scratch() { (void)cudaFreeAsync(p_, s_); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    // The next `count` T's, 256-byte aligned.
    template <class T>
    T* take(size_t count) {
        T* out = reinterpret_cast<T*>(static_cast<char*>(p_) + used_);
        used_ += (count * sizeof(T) + 255) / 256 * 256;
        return out;
    }
    static size_t room(size_t bytes) { return (bytes + 255) / 256 * 256; }

private:
    void* p_ = nullptr;
    size_t used_ = 0;
    cudaStream_t s_;
};

// The coordinates of the window's columns (or rows) exactly as the CPU computes them.
std::vector<double> coords(int64_t first, int64_t count, int64_t n) {
    std::vector<double> v(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) v[static_cast<size_t>(k)] = surface_coord(first + k, n);
    return v;
}

template <int N>
void launch_row_partials(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride,
                         const double* xs, double zscale, int per_thread, int64_t nseg, u128* partials,
                         cudaStream_t s) {
    const int64_t blocks = std::min<int64_t>(own.rows * nseg, 0x7fffffff);
    row_partials_kernel<N><<<static_cast<unsigned>(blocks), kRowThreads, 0, s>>>(
        z, valid, mask, own.rows, own.cols, stride, xs, zscale, per_thread, nseg, partials);
}

template <int N>
void launch_subtract(float* z, const uint8_t* valid, const Window& own, int64_t stride, const double* xs,
                     const double* a, cudaStream_t s) {
    subtract_kernel<N><<<pixel_grid(own), dim3(kBX, kBY), 0, s>>>(z, valid, own.rows, own.cols, stride, xs, a);
}

}  // namespace

double surface_max_abs(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride,
                       cudaStream_t s) {
    if (own.rows <= 0 || own.cols <= 0) return 0.0;
    Scratch scratch(256, s);
    unsigned* d_max = scratch.take<unsigned>(1);
    check(cudaMemsetAsync(d_max, 0, sizeof(unsigned), s), "surface_max_abs (memset)");
    max_abs_kernel<<<reduce_grid(own), dim3(kBX, kBY), 0, s>>>(z, valid, mask, own.rows, own.cols, stride, d_max);
    check(cudaGetLastError(), "surface_max_abs (launch)");
    unsigned bits = 0;
    check(cudaMemcpyAsync(&bits, d_max, sizeof bits, cudaMemcpyDeviceToHost, s), "surface_max_abs (download)");
    check(cudaStreamSynchronize(s), "surface_max_abs (sync)");
    float m;
    static_assert(sizeof m == sizeof bits);
    std::memcpy(&m, &bits, sizeof m);
    return static_cast<double>(m);
}

SurfaceMoments surface_moments(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                               int64_t stride, int64_t H, int64_t W, int degree, int zexp, cudaStream_t s) {
    check_degree(degree);
    const int n = degree, n2 = 2 * n;
    SurfaceMoments m;
    m.degree = n;
    m.zexp = zexp;
    m.geo.assign(static_cast<size_t>(surface_terms(n2)), ExactSum{});
    m.zm.assign(static_cast<size_t>(surface_terms(n)), ExactSum{});
    if (own.rows <= 0 || own.cols <= 0) return m;

    // Segments of up to 256 * 32 columns, as few threads per segment as the row needs.
    const int per_thread =
        static_cast<int>(std::min<int64_t>(kMaxPerThread, (own.cols + kRowThreads - 1) / kRowThreads));
    const int64_t seg_cols = static_cast<int64_t>(kRowThreads) * per_thread;
    const int64_t nseg = (own.cols + seg_cols - 1) / seg_cols;
    const int NS = partial_slots(n), NR = row_slots(n);
    const int T = static_cast<int>(m.geo.size() + m.zm.size());

    const std::vector<double> xs = coords(own.col0, own.cols, W), ys = coords(own.row0, own.rows, H);
    const size_t bytes = Scratch::room(xs.size() * sizeof(double)) + Scratch::room(ys.size() * sizeof(double)) +
                         Scratch::room(static_cast<size_t>(own.rows * nseg * NS) * sizeof(u128)) +
                         Scratch::room(static_cast<size_t>(own.rows * NR) * sizeof(u128)) +
                         Scratch::room(static_cast<size_t>(own.rows) * sizeof(long long)) +
                         Scratch::room(static_cast<size_t>(n2 + 1) * sizeof(u128)) +
                         Scratch::room(static_cast<size_t>(T + 1) * sizeof(Sum256));
    Scratch scratch(bytes, s);
    double* d_xs = scratch.take<double>(xs.size());
    double* d_ys = scratch.take<double>(ys.size());
    u128* d_part = scratch.take<u128>(static_cast<size_t>(own.rows * nseg * NS));
    u128* d_rows = scratch.take<u128>(static_cast<size_t>(own.rows * NR));
    long long* d_cnt = scratch.take<long long>(static_cast<size_t>(own.rows));
    u128* d_full = scratch.take<u128>(static_cast<size_t>(n2 + 1));
    Sum256* d_out = scratch.take<Sum256>(static_cast<size_t>(T + 1));
    check(cudaMemcpyAsync(d_xs, xs.data(), xs.size() * sizeof(double), cudaMemcpyHostToDevice, s),
          "surface_moments (upload x)");
    check(cudaMemcpyAsync(d_ys, ys.data(), ys.size() * sizeof(double), cudaMemcpyHostToDevice, s),
          "surface_moments (upload y)");

    const double zscale = std::ldexp(1.0, zexp);  // a power of two: z * zscale is exact
    switch (n) {
        case 0: launch_row_partials<0>(z, valid, mask, own, stride, d_xs, zscale, per_thread, nseg, d_part, s); break;
        case 1: launch_row_partials<1>(z, valid, mask, own, stride, d_xs, zscale, per_thread, nseg, d_part, s); break;
        case 2: launch_row_partials<2>(z, valid, mask, own, stride, d_xs, zscale, per_thread, nseg, d_part, s); break;
        case 3: launch_row_partials<3>(z, valid, mask, own, stride, d_xs, zscale, per_thread, nseg, d_part, s); break;
        case 4: launch_row_partials<4>(z, valid, mask, own, stride, d_xs, zscale, per_thread, nseg, d_part, s); break;
        case 5: launch_row_partials<5>(z, valid, mask, own, stride, d_xs, zscale, per_thread, nseg, d_part, s); break;
        default: launch_row_partials<6>(z, valid, mask, own, stride, d_xs, zscale, per_thread, nseg, d_part, s); break;
    }
    check(cudaGetLastError(), "surface_moments (row partials)");
    column_sums_kernel<<<1, 1024, 0, s>>>(d_xs, own.cols, n, d_full);
    check(cudaGetLastError(), "surface_moments (column sums)");
    row_sums_kernel<<<blocks_for(own.rows, 256), 256, 0, s>>>(d_part, own.rows, own.cols, nseg, n, d_full, d_rows,
                                                               d_cnt);
    check(cudaGetLastError(), "surface_moments (row sums)");
    fold_kernel<<<static_cast<unsigned>(T + 1), 256, 0, s>>>(d_rows, d_cnt, d_ys, own.rows, n, d_out);
    check(cudaGetLastError(), "surface_moments (fold)");

    std::vector<Sum256> out(static_cast<size_t>(T + 1));
    check(cudaMemcpyAsync(out.data(), d_out, out.size() * sizeof(Sum256), cudaMemcpyDeviceToHost, s),
          "surface_moments (download)");
    check(cudaStreamSynchronize(s), "surface_moments (sync)");
    for (size_t k = 0; k < m.geo.size(); ++k) std::copy(out[k].w, out[k].w + 4, m.geo[k].begin());
    for (size_t k = 0; k < m.zm.size(); ++k) std::copy(out[m.geo.size() + k].w, out[m.geo.size() + k].w + 4, m.zm[k].begin());
    m.count = static_cast<int64_t>(out[static_cast<size_t>(T)].w[0]);
    return m;
}

ResidualSums subtract_surface(float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride,
                              int64_t H, int64_t W, const SurfaceFit& fit, cudaStream_t s) {
    check_degree(fit.degree);
    if (fit.coeffs.size() != static_cast<size_t>(surface_terms(fit.degree)))
        throw std::invalid_argument("subtract_surface: wrong number of coefficients");
    ResidualSums out;
    if (own.rows <= 0 || own.cols <= 0) return out;
    const int n = fit.degree;
    Coeffs k{};
    std::copy(fit.coeffs.begin(), fit.coeffs.end(), k.c);

    const std::vector<double> xs = coords(own.col0, own.cols, W), ys = coords(own.row0, own.rows, H);
    const size_t bytes = Scratch::room(xs.size() * sizeof(double)) + Scratch::room(ys.size() * sizeof(double)) +
                         Scratch::room(static_cast<size_t>(own.rows * (n + 1)) * sizeof(double)) +
                         Scratch::room(static_cast<size_t>(own.rows) * sizeof(double)) +
                         Scratch::room(static_cast<size_t>(own.rows) * sizeof(long long)) + 2 * 256;
    Scratch scratch(bytes, s);
    double* d_xs = scratch.take<double>(xs.size());
    double* d_ys = scratch.take<double>(ys.size());
    double* d_a = scratch.take<double>(static_cast<size_t>(own.rows * (n + 1)));
    double* d_rsq = scratch.take<double>(static_cast<size_t>(own.rows));
    long long* d_rn = scratch.take<long long>(static_cast<size_t>(own.rows));
    double* d_sq = scratch.take<double>(1);
    long long* d_n = scratch.take<long long>(1);
    check(cudaMemcpyAsync(d_xs, xs.data(), xs.size() * sizeof(double), cudaMemcpyHostToDevice, s),
          "subtract_surface (upload x)");
    check(cudaMemcpyAsync(d_ys, ys.data(), ys.size() * sizeof(double), cudaMemcpyHostToDevice, s),
          "subtract_surface (upload y)");
    row_poly_kernel<<<blocks_for(own.rows, 256), 256, 0, s>>>(k, n, d_ys, own.rows, d_a);
    check(cudaGetLastError(), "subtract_surface (row polynomials)");
    switch (n) {
        case 0: launch_subtract<0>(z, valid, own, stride, d_xs, d_a, s); break;
        case 1: launch_subtract<1>(z, valid, own, stride, d_xs, d_a, s); break;
        case 2: launch_subtract<2>(z, valid, own, stride, d_xs, d_a, s); break;
        case 3: launch_subtract<3>(z, valid, own, stride, d_xs, d_a, s); break;
        case 4: launch_subtract<4>(z, valid, own, stride, d_xs, d_a, s); break;
        case 5: launch_subtract<5>(z, valid, own, stride, d_xs, d_a, s); break;
        default: launch_subtract<6>(z, valid, own, stride, d_xs, d_a, s); break;
    }
    check(cudaGetLastError(), "subtract_surface (subtract)");
    residual_rows_kernel<<<blocks_for(own.rows * 4, 256), 256, 0, s>>>(z, mask, own.rows, own.cols, stride, d_rsq,
                                                                        d_rn);
    check(cudaGetLastError(), "subtract_surface (residual rows)");
    residual_total_kernel<<<1, 1024, 0, s>>>(d_rsq, d_rn, own.rows, d_sq, d_n);
    check(cudaGetLastError(), "subtract_surface (residual total)");
    long long cnt = 0;
    check(cudaMemcpyAsync(&out.sum_sq, d_sq, sizeof(double), cudaMemcpyDeviceToHost, s), "subtract_surface (download)");
    check(cudaMemcpyAsync(&cnt, d_n, sizeof cnt, cudaMemcpyDeviceToHost, s), "subtract_surface (download)");
    check(cudaStreamSynchronize(s), "subtract_surface (sync)");
    out.count = static_cast<int64_t>(cnt);
    return out;
}

}  // namespace tessera::cuda
