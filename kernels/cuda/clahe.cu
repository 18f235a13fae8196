// CLAHE on the device (kernels/cuda/clahe.h; kernels/clahe.h defines the steps). Three
// passes over the pixels: the range, the histograms and the interpolation. Histograms are
// integer counts, so the order of the atomic additions does not matter; each block counts
// one piece of one tile in shared memory and adds it to the tile's histogram once.
#include "kernels/cuda/clahe.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kBX = 32, kBY = 8;

// --- per-pixel definitions (kernels/clahe.h) --------------------------------------------

__device__ __forceinline__ bool valid_px(float v, const uint8_t* valid, int64_t i) {
    return (valid == nullptr || valid[i] != 0) && isfinite(v);
}
__device__ __forceinline__ bool valid_px(uint16_t, const uint8_t* valid, int64_t i) {
    return valid == nullptr || valid[i] != 0;
}

// Section "Bin of v": double arithmetic, no contraction (scale from the host, as the CPU's).
struct Binner {
    double lo = 0, scale = 0;
    int nb = 1;
    __device__ __forceinline__ int operator()(double v) const {
        const double t = __dmul_rn(__dsub_rn(v, lo), scale);
        if (!(t > 0.0)) return 0;
        if (t >= static_cast<double>(nb)) return nb - 1;
        return __double2int_rz(t);
    }
};

Binner make_binner(const ClaheRange& r, int nbins) {
    Binner b;
    b.lo = r.lo;
    b.nb = nbins;
    b.scale = r.hi > r.lo ? static_cast<double>(nbins) / (r.hi - r.lo) : 0.0;
    return b;
}

// An unsigned key in the order of the values (floats: sign-magnitude to offset binary).
__device__ __forceinline__ unsigned order_key(float v) {
    const unsigned u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ unsigned order_key(uint16_t v) { return v; }

double from_key(unsigned k, const float*) {
    const unsigned u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return static_cast<double>(f);
}
double from_key(unsigned k, const uint16_t*) { return static_cast<double>(k); }

// --- range -----------------------------------------------------------------------------

struct RangeAcc {
    unsigned kmin, kmax;
    unsigned long long count;
};

template <class T>
__global__ void range_kernel(const T* img, const uint8_t* valid, int64_t rows, int64_t cols, int64_t stride,
                             RangeAcc* acc) {
    __shared__ unsigned smin[kBY], smax[kBY], scnt[kBY];
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kBX + threadIdx.x;
    unsigned mn = 0xffffffffu, mx = 0, n = 0;
    if (c < cols) {
#pragma unroll 4
        for (int64_t r = static_cast<int64_t>(blockIdx.y) * kBY + threadIdx.y; r < rows;
             r += static_cast<int64_t>(gridDim.y) * kBY) {
            const int64_t i = r * stride + c;
            const T v = img[i];
            if (!valid_px(v, valid, i)) continue;
            const unsigned k = order_key(v);
            mn = min(mn, k);
            mx = max(mx, k);
            ++n;
        }
    }
    mn = __reduce_min_sync(kFull, mn);
    mx = __reduce_max_sync(kFull, mx);
    n = __reduce_add_sync(kFull, n);
    if (threadIdx.x == 0) {
        smin[threadIdx.y] = mn;
        smax[threadIdx.y] = mx;
        scnt[threadIdx.y] = n;
    }
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned long long total = 0;
        for (int k = 0; k < kBY; ++k) {
            mn = min(mn, smin[k]);
            mx = max(mx, smax[k]);
            total += scnt[k];
        }
        if (total != 0) {
            atomicMin(&acc->kmin, mn);
            atomicMax(&acc->kmax, mx);
            atomicAdd(&acc->count, total);
        }
    }
}

// Reductions: about 4096 blocks, each thread walking its column down a band of rows.
dim3 reduce_grid(const Window& own) {
    const int64_t gx = (own.cols + kBX - 1) / kBX;
    if (gx > 0x7fffffff) throw std::runtime_error("CUDA clahe: window too wide");
    const int64_t gy = std::max<int64_t>(1, std::min<int64_t>((own.rows + kBY - 1) / kBY, (4096 + gx - 1) / gx));
    return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(std::min<int64_t>(gy, 65535)), 1);
}

// Pixel passes: one thread per pixel of 8 rows; rows past 65535 * 8 by a grid stride.
dim3 pixel_grid(const Window& own) {
    const int64_t gx = (own.cols + kBX - 1) / kBX;
    if (gx > 0x7fffffff) throw std::runtime_error("CUDA clahe: window too wide");
    const int64_t gy = std::min<int64_t>((own.rows + kBY - 1) / kBY, 65535);
    return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(std::max<int64_t>(gy, 1)), 1);
}

template <class T>
ClaheRange local_range(const T* img, const uint8_t* valid, const Window& own, int64_t stride, cudaStream_t s) {
    ClaheRange out{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0};
    if (own.rows <= 0 || own.cols <= 0) return out;
    RangeAcc* d = nullptr;
    check(cudaMallocAsync(reinterpret_cast<void**>(&d), sizeof(RangeAcc), s), "clahe_local_range (cudaMallocAsync)");
    RangeAcc h{0xffffffffu, 0, 0};
    cudaError_t e = cudaMemcpyAsync(d, &h, sizeof h, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) {
        range_kernel<T><<<reduce_grid(own), dim3(kBX, kBY), 0, s>>>(img, valid, own.rows, own.cols, stride, d);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    (void)cudaFreeAsync(d, s);
    check(e, "clahe_local_range");
    if (h.count == 0) return out;
    out.lo = from_key(h.kmin, img);
    out.hi = from_key(h.kmax, img);
    out.count = static_cast<int64_t>(h.count);
    return out;
}

// --- histograms ------------------------------------------------------------------------

constexpr int kHistThreads = 512;

// The pieces of tiles the window meets, each cut into `chunks` bands of rows (one block each).
struct Pieces {
    int64_t H, W;
    int ty, tx, nb;
    int i0, j0, ni, nj, chunks;
    int64_t row0, col0, rows, cols;  // the window
};

template <class T, bool kShared>
__global__ void __launch_bounds__(kHistThreads) hist_kernel(const T* img, const uint8_t* valid, int64_t stride,
                                                            Pieces pc, Binner bin, uint32_t* hist) {
    extern __shared__ uint32_t sh[];
    const int64_t nblocks = static_cast<int64_t>(pc.ni) * pc.nj * pc.chunks;
    for (int64_t blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
        const int64_t piece = blk / pc.chunks;
        const int chunk = static_cast<int>(blk % pc.chunks);
        const int i = pc.i0 + static_cast<int>(piece / pc.nj), j = pc.j0 + static_cast<int>(piece % pc.nj);
        const int64_t tr0 = static_cast<int64_t>(i) * pc.H / pc.ty, tr1 = static_cast<int64_t>(i + 1) * pc.H / pc.ty;
        const int64_t tc0 = static_cast<int64_t>(j) * pc.W / pc.tx, tc1 = static_cast<int64_t>(j + 1) * pc.W / pc.tx;
        const int64_t r0 = max(pc.row0, tr0), r1 = min(pc.row0 + pc.rows, tr1);
        const int64_t c0 = max(pc.col0, tc0), c1 = min(pc.col0 + pc.cols, tc1);
        const int64_t pr = r1 - r0, pw = c1 - c0;
        const int64_t cr0 = r0 + pr * chunk / pc.chunks, cr1 = r0 + pr * (chunk + 1) / pc.chunks;
        uint32_t* tile_hist = hist + static_cast<int64_t>(i * pc.tx + j) * pc.nb;
        uint32_t* h = kShared ? sh : tile_hist;
        if (kShared) {
            for (int b = threadIdx.x; b < pc.nb; b += kHistThreads) sh[b] = 0;
            __syncthreads();
        }
        // The band's pixels in raster order (< 2^32: a tile has fewer pixels).
        const uint32_t w = static_cast<uint32_t>(pw);
        const uint32_t npx = static_cast<uint32_t>((cr1 - cr0) * pw);
        for (uint32_t k = threadIdx.x; k < npx; k += kHistThreads) {
            const uint32_t rr = k / w, cc = k - rr * w;
            const int64_t idx = (cr0 + rr - pc.row0) * stride + (c0 + cc - pc.col0);
            const T v = img[idx];
            if (valid_px(v, valid, idx)) atomicAdd(&h[bin(static_cast<double>(v))], 1u);
        }
        if (kShared) {
            __syncthreads();
            for (int b = threadIdx.x; b < pc.nb; b += kHistThreads)
                if (sh[b] != 0) atomicAdd(&tile_hist[b], sh[b]);
            __syncthreads();  // sh is cleared for the next piece
        }
    }
}

int shared_optin_bytes() {
    int dev = 0, v = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
    return v;
}

template <class T>
void histograms(const T* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                const ClaheParams& p, const ClaheRange& range, uint32_t* hist, cudaStream_t s) {
    if (own.rows <= 0 || own.cols <= 0) return;
    Pieces pc{};
    pc.H = g.H;
    pc.W = g.W;
    pc.ty = g.ty;
    pc.tx = g.tx;
    pc.nb = p.nbins;
    pc.i0 = g.tile_row(own.row0);
    pc.j0 = g.tile_col(own.col0);
    pc.ni = g.tile_row(own.row0 + own.rows - 1) - pc.i0 + 1;
    pc.nj = g.tile_col(own.col0 + own.cols - 1) - pc.j0 + 1;
    pc.row0 = own.row0;
    pc.col0 = own.col0;
    pc.rows = own.rows;
    pc.cols = own.cols;
    const size_t shared = static_cast<size_t>(p.nbins) * sizeof(uint32_t);
    const bool use_shared = shared <= static_cast<size_t>(shared_optin_bytes());
    // Bands of at least 8192 pixels, and 4 pixels per bin so that the flush stays small.
    const int64_t tile_rows = (g.H + g.ty - 1) / g.ty, tile_cols = (g.W + g.tx - 1) / g.tx;
    const int64_t piece_rows = std::min(tile_rows, own.rows), piece_cols = std::min(tile_cols, own.cols);
    const int64_t target = use_shared ? std::max<int64_t>(8192, 4 * int64_t{p.nbins}) : 8192;
    pc.chunks = static_cast<int>(
        std::clamp<int64_t>((piece_rows * piece_cols + target - 1) / target, 1, std::max<int64_t>(piece_rows, 1)));
    const int64_t blocks = std::min<int64_t>(static_cast<int64_t>(pc.ni) * pc.nj * pc.chunks, 0x7fffffff);
    const Binner bin = make_binner(range, p.nbins);
    if (use_shared) {
        auto kernel = &hist_kernel<T, true>;
        if (shared > 48 * 1024)
            check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)),
                  "clahe_histograms (shared memory size)");
        kernel<<<static_cast<unsigned>(blocks), kHistThreads, shared, s>>>(img, valid, stride, pc, bin, hist);
    } else {
        hist_kernel<T, false><<<static_cast<unsigned>(blocks), kHistThreads, 0, s>>>(img, valid, stride, pc, bin, hist);
    }
    check(cudaGetLastError(), "clahe_histograms (launch)");
}

// --- LUTs ------------------------------------------------------------------------------

constexpr int kLutThreads = 256;

// static_cast<int64_t>(double) as x86-64 computes it (cvttsd2si: out of range gives INT64_MIN).
__device__ __forceinline__ long long x86_trunc(double v) {
    return (v > -9223372036854775808.0 && v < 9223372036854775808.0) ? __double2ll_rz(v)
                                                                      : static_cast<long long>(0x8000000000000000ull);
}

// One block per tile: clip, redistribute (OpenCV's), integrate (kernels/clahe.h, "Clip", "LUT").
__global__ void __launch_bounds__(kLutThreads) lut_kernel(const uint32_t* hist, int nb, double clip_limit,
                                                          unsigned long long out_max, uint16_t* lut) {
    using Reduce = cub::BlockReduce<unsigned long long, kLutThreads>;
    using Scan = cub::BlockScan<unsigned long long, kLutThreads>;
    __shared__ union {
        typename Reduce::TempStorage reduce;
        typename Scan::TempStorage scan;
    } tmp;
    __shared__ unsigned long long s_val;
    const uint32_t* h = hist + static_cast<int64_t>(blockIdx.x) * nb;
    uint16_t* dst = lut + static_cast<int64_t>(blockIdx.x) * nb;

    unsigned long long part = 0;
    for (int b = threadIdx.x; b < nb; b += kLutThreads) part += h[b];
    const unsigned long long sum = Reduce(tmp.reduce).Sum(part);
    if (threadIdx.x == 0) s_val = sum;
    __syncthreads();
    const unsigned long long n = s_val;
    __syncthreads();
    if (n == 0) {  // no valid pixel: the ramp
        for (int b = threadIdx.x; b < nb; b += kLutThreads)
            dst[b] = static_cast<uint16_t>((2ull * static_cast<unsigned long long>(b) * out_max + (nb - 1)) /
                                           (2ull * static_cast<unsigned long long>(nb - 1)));
        return;
    }
    const bool clipping = clip_limit > 0;
    long long clip = 0, batch = 0, residual = 0, step = 1;
    if (clipping) {
        clip = x86_trunc(__ddiv_rn(__dmul_rn(clip_limit, static_cast<double>(n)), static_cast<double>(nb)));
        if (clip < 1) clip = 1;
        unsigned long long ex = 0;
        for (int b = threadIdx.x; b < nb; b += kLutThreads)
            if (static_cast<long long>(h[b]) > clip) ex += static_cast<unsigned long long>(h[b] - clip);
        const unsigned long long excess = Reduce(tmp.reduce).Sum(ex);
        if (threadIdx.x == 0) s_val = excess;
        __syncthreads();
        const long long e = static_cast<long long>(s_val);
        __syncthreads();
        batch = e / nb;
        residual = e - batch * nb;
        if (residual > 0) step = max(static_cast<long long>(nb) / residual, 1ll);
    }
    unsigned long long running = 0;
    for (int base = 0; base < nb; base += kLutThreads) {
        const int b = base + threadIdx.x;
        unsigned long long v = 0;
        if (b < nb) {
            long long hv = h[b];
            if (clipping) {
                hv = min(hv, clip) + batch;
                // The residual goes one each to bins 0, step, 2 step, ... (residual of them).
                if (residual > 0 && b % step == 0 && b / step < residual) ++hv;
            }
            v = static_cast<unsigned long long>(hv);
        }
        unsigned long long inc = 0, total = 0;
        Scan(tmp.scan).InclusiveSum(v, inc, total);
        if (b < nb) dst[b] = static_cast<uint16_t>((2 * (running + inc) * out_max + n) / (2 * n));
        running += total;
        __syncthreads();  // tmp is reused
    }
}

// --- interpolation ---------------------------------------------------------------------

// Interpolation pair of one axis position (kernels/clahe.h, "Interpolation"; the CPU's
// axis_weight, integer).
struct AxisW {
    int32_t t1, t2;
    int64_t w, d;
};

__global__ void axis_kernel(int64_t first, int64_t count, int64_t n, int tiles, AxisW* out) {
    const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= count) return;
    const int64_t k = first + idx;
    auto start = [&](int i) { return static_cast<int64_t>(i) * n / tiles; };
    auto centre2 = [&](int i) { return start(i) + start(i + 1) - 1; };
    const int64_t R = 2 * k;
    AxisW a{0, 0, 0, 1};
    if (tiles == 1 || R <= centre2(0)) {
        // (0, 0)
    } else if (R >= centre2(tiles - 1)) {
        a.t1 = a.t2 = tiles - 1;
    } else {
        int t = static_cast<int>(((k + 1) * tiles - 1) / n);  // the tile holding k
        if (R < centre2(t)) --t;
        a.t1 = t;
        a.t2 = t + 1;
        a.w = R - centre2(t);
        a.d = centre2(t + 1) - centre2(t);
    }
    out[idx] = a;
}

template <bool kFast, class T, class O>
__global__ void apply_kernel(const T* img, const uint8_t* valid, int64_t rows, int64_t cols, int64_t stride,
                             Binner bin, int tx, const AxisW* roww, const AxisW* colw, const uint16_t* lut, O* out,
                             int64_t out_stride) {
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kBX + threadIdx.x;
    if (c >= cols) return;
    const int64_t nb = bin.nb;
    const AxisW cw = colw[c];
    const int64_t o1 = cw.t1 * nb, o2 = cw.t2 * nb;
    const uint64_t wx = static_cast<uint32_t>(cw.w), vx = static_cast<uint32_t>(cw.d - cw.w),
                   dx = static_cast<uint64_t>(cw.d);
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * kBY + threadIdx.y; r < rows;
         r += static_cast<int64_t>(gridDim.y) * kBY) {
        const int64_t i = r * stride + c;
        O* o = out + r * out_stride + c;
        const T v = img[i];
        if (!valid_px(v, valid, i)) {
            *o = 0;
            continue;
        }
        const AxisW rw = roww[r];
        const uint16_t* top = lut + static_cast<int64_t>(rw.t1) * tx * nb;
        const uint16_t* bot = lut + static_cast<int64_t>(rw.t2) * tx * nb;
        const uint64_t wy = static_cast<uint64_t>(rw.w), vy = static_cast<uint64_t>(rw.d - rw.w),
                       dy = static_cast<uint64_t>(rw.d);
        const int b = bin(static_cast<double>(v));
        const uint64_t t = uint64_t{top[o1 + b]} * vx + uint64_t{top[o2 + b]} * wx;
        const uint64_t u = uint64_t{bot[o1 + b]} * vx + uint64_t{bot[o2 + b]} * wx;
        const uint64_t num = t * vy + u * wy, den = dx * dy;
        uint64_t q;
        if (kFast)
            q = __double2ull_rz(__dadd_rn(__ddiv_rn(__ull2double_rn(num), __ull2double_rn(den)), 0.5));
        else
            q = (2 * num + den) / (2 * den);
        *o = static_cast<O>(q);
    }
}

// The CPU's test for its double path (kernels/cpu/clahe.cpp): both paths give the same
// values there, so the device takes the same one.
int64_t max_centre_gap(int64_t n, int tiles) {
    int64_t m = 1;
    for (int i = 0; i + 1 < tiles; ++i) {
        const int64_t c0 = static_cast<int64_t>(i) * n / tiles + static_cast<int64_t>(i + 1) * n / tiles - 1;
        const int64_t c1 = static_cast<int64_t>(i + 1) * n / tiles + static_cast<int64_t>(i + 2) * n / tiles - 1;
        m = std::max(m, c1 - c0);
    }
    return m;
}

unsigned blocks_for(int64_t n, int threads) {
    return static_cast<unsigned>(std::max<int64_t>((n + threads - 1) / threads, 1));
}

template <class T, class O>
void apply(const T* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
           const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, O* out, int64_t out_stride,
           cudaStream_t s) {
    if (std::is_same_v<O, uint8_t> && p.out_bits != 8)
        throw std::invalid_argument("clahe: an 8-bit output buffer needs out_bits = 8");
    if (own.rows <= 0 || own.cols <= 0) return;
    AxisW* tables = nullptr;
    check(cudaMallocAsync(reinterpret_cast<void**>(&tables), static_cast<size_t>(own.rows + own.cols) * sizeof(AxisW),
                          s),
          "clahe_apply (cudaMallocAsync)");
    AxisW* roww = tables;
    AxisW* colw = tables + own.rows;
    axis_kernel<<<blocks_for(own.rows, 256), 256, 0, s>>>(own.row0, own.rows, g.H, g.ty, roww);
    axis_kernel<<<blocks_for(own.cols, 256), 256, 0, s>>>(own.col0, own.cols, g.W, g.tx, colw);
    const Binner bin = make_binner(range, p.nbins);
    if (max_centre_gap(g.W, g.tx) * max_centre_gap(g.H, g.ty) <= (int64_t{1} << 26))
        apply_kernel<true, T, O><<<pixel_grid(own), dim3(kBX, kBY), 0, s>>>(img, valid, own.rows, own.cols, stride,
                                                                           bin, g.tx, roww, colw, lut, out,
                                                                           out_stride);
    else
        apply_kernel<false, T, O><<<pixel_grid(own), dim3(kBX, kBY), 0, s>>>(img, valid, own.rows, own.cols, stride,
                                                                            bin, g.tx, roww, colw, lut, out,
                                                                            out_stride);
    const cudaError_t e = cudaGetLastError();
    (void)cudaFreeAsync(tables, s);
    check(e, "clahe_apply (launch)");
}

}  // namespace

ClaheRange clahe_local_range(const float* img, const uint8_t* valid, const Window& own, int64_t stride,
                             cudaStream_t s) {
    return local_range(img, valid, own, stride, s);
}
ClaheRange clahe_local_range(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride,
                             cudaStream_t s) {
    return local_range(img, valid, own, stride, s);
}

void clahe_histograms(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                      const ClaheParams& p, const ClaheRange& range, uint32_t* hist, cudaStream_t s) {
    histograms(img, valid, own, stride, g, p, range, hist, s);
}
void clahe_histograms(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride,
                      const ClaheGrid& g, const ClaheParams& p, const ClaheRange& range, uint32_t* hist,
                      cudaStream_t s) {
    histograms(img, valid, own, stride, g, p, range, hist, s);
}

void clahe_luts(const uint32_t* hist, const ClaheGrid& g, const ClaheParams& p, uint16_t* lut, cudaStream_t s) {
    if (g.tiles() <= 0) return;
    lut_kernel<<<static_cast<unsigned>(g.tiles()), kLutThreads, 0, s>>>(hist, p.nbins, p.clip_limit,
                                                                        p.out_bits == 8 ? 255ull : 65535ull, lut);
    check(cudaGetLastError(), "clahe_luts (launch)");
}

void clahe_apply(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint16_t* out,
                 int64_t out_stride, cudaStream_t s) {
    apply(img, valid, own, stride, g, p, range, lut, out, out_stride, s);
}
void clahe_apply(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint16_t* out,
                 int64_t out_stride, cudaStream_t s) {
    apply(img, valid, own, stride, g, p, range, lut, out, out_stride, s);
}
void clahe_apply(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint8_t* out,
                 int64_t out_stride, cudaStream_t s) {
    apply(img, valid, own, stride, g, p, range, lut, out, out_stride, s);
}
void clahe_apply(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint8_t* out,
                 int64_t out_stride, cudaStream_t s) {
    apply(img, valid, own, stride, g, p, range, lut, out, out_stride, s);
}

}  // namespace tessera::cuda
