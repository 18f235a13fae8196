// CLAHE on the device (kernels/cuda/clahe.h) against the CPU backend (kernels/clahe.h), bit
// for bit (ARCHITECTURE.md section 1), stage by stage: the range, the tile histograms (as
// integers), the LUTs and the interpolated 8- and 16-bit outputs (the output padding
// untouched), for float input with NaN, infinities and invalid pixels and for uint16 input,
// clipping on and off, tile grids that do not divide the image, 2..65536 bins (65536: the
// global-atomics path), windows of larger images with row strides, the integer division
// path of the interpolation, random histograms with empty tiles; then the collective, the
// commands' host-array entry and across ranks (CudaDistributed). Every test skips, saying
// why, when no CUDA device is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/clahe.h"
#include "kernels/cuda/clahe.h"
#include "kernels/cuda/device_buffer.h"
#include "partition/clahe.h"
#include "partition/comm.h"
#include "partition/cuda/clahe.h"
#include "support/gpu_skip.h"

namespace tessera {
namespace {

// An H x W image of T stored with row stride W + pad (padding: values that would show if read).
template <class T>
struct Image {
    int64_t H = 0, W = 0, stride = 0;
    std::vector<T> v;
    std::vector<uint8_t> valid;
};

Image<float> float_image(int64_t H, int64_t W, int64_t pad, uint64_t seed, double holes = 0.05) {
    Image<float> im{H, W, W + pad, std::vector<float>(static_cast<size_t>(H * (W + pad)), 1e30f),
                    std::vector<uint8_t>(static_cast<size_t>(H * (W + pad)), 1)};
    std::mt19937_64 rng(seed);
    std::gamma_distribution<double> amp(1.5, 2.0);  // speckle-like
    std::uniform_real_distribution<double> u(0, 1);
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const size_t k = static_cast<size_t>(r * im.stride + c);
            im.v[k] = static_cast<float>(amp(rng) * (1.0 + 0.5 * std::sin(0.1 * r + 0.05 * c)) - 1.0);
            const double x = u(rng);
            if (x < holes / 2) im.valid[k] = 0;
            else if (x < holes * 0.8) im.v[k] = std::numeric_limits<float>::quiet_NaN();
            else if (x < holes) im.v[k] = std::numeric_limits<float>::infinity();
        }
    return im;
}

Image<uint16_t> u16_image(int64_t H, int64_t W, int64_t pad, uint64_t seed, double holes = 0.05) {
    Image<uint16_t> im{H, W, W + pad, std::vector<uint16_t>(static_cast<size_t>(H * (W + pad)), 65535),
                       std::vector<uint8_t>(static_cast<size_t>(H * (W + pad)), 1)};
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const size_t k = static_cast<size_t>(r * im.stride + c);
            const double base = 20000 + 15000 * std::sin(0.013 * r) * std::cos(0.021 * c);
            im.v[k] = static_cast<uint16_t>(std::clamp(base + 3000 * (u(rng) - 0.5), 100.0, 60000.0));
            if (u(rng) < holes) im.valid[k] = 0;
        }
    return im;
}

template <class T>
std::vector<T> download(const cuda::DeviceBuffer<T>& d) {
    std::vector<T> out(d.size());
    cuda::check(cudaMemcpy(out.data(), d.get(), out.size() * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return out;
}

template <class T>
cuda::DeviceBuffer<T> upload(const std::vector<T>& h) {
    cuda::DeviceBuffer<T> d(h.size());
    cuda::check(cudaMemcpy(d.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
    // A pageable copy may return before its DMA ends; the kernels run on non-blocking streams.
    cuda::check(cudaDeviceSynchronize(), "upload (sync)");
    return d;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <class T>
void expect_same(const std::vector<T>& dev, const std::vector<T>& cpu, const std::string& what) {
    ASSERT_EQ(dev.size(), cpu.size()) << what;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < cpu.size(); ++i)
        if (dev[i] != cpu[i] && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " differences, first at " << first << ": " << +dev[first] << " vs "
                       << +cpu[first];
}

std::string describe(int64_t H, int64_t W, const Window& w, const ClaheParams& p, const char* type) {
    return std::string(type) + " " + std::to_string(H) + "x" + std::to_string(W) + " window (" +
           std::to_string(w.row0) + "," + std::to_string(w.col0) + " " + std::to_string(w.rows) + "x" +
           std::to_string(w.cols) + ") tiles " + std::to_string(p.tile_rows) + "x" + std::to_string(p.tile_cols) +
           " clip " + std::to_string(p.clip_limit) + " bins " + std::to_string(p.nbins) + " bits " +
           std::to_string(p.out_bits);
}

// Every stage over window w of the image (the grid is the whole image's), device vs CPU.
template <class T>
void compare_stages(const Image<T>& im, const Window& w, const ClaheParams& p, bool use_valid) {
    const std::string what = describe(im.H, im.W, w, p, std::is_same_v<T, float> ? "float" : "uint16");
    SCOPED_TRACE(what);
    const ClaheGrid g = make_clahe_grid(im.H, im.W, p);
    const cuda::Stream s;
    const auto d_img = upload(im.v);
    const auto d_valid = upload(im.valid);
    const size_t off = static_cast<size_t>(w.row0 * im.stride + w.col0);
    const T* h_img = im.v.data() + off;
    const uint8_t* h_val = use_valid ? im.valid.data() + off : nullptr;
    const T* dv_img = d_img.get() + off;
    const uint8_t* dv_val = use_valid ? d_valid.get() + off : nullptr;

    // Range.
    const ClaheRange cr = clahe_local_range(h_img, h_val, w, im.stride);
    const ClaheRange dr = cuda::clahe_local_range(dv_img, dv_val, w, im.stride, s.get());
    EXPECT_TRUE(same_bits(dr.lo, cr.lo)) << dr.lo << " vs " << cr.lo;
    EXPECT_TRUE(same_bits(dr.hi, cr.hi)) << dr.hi << " vs " << cr.hi;
    EXPECT_EQ(dr.count, cr.count);
    ClaheRange range = cr;
    if (cr.count == 0) range = {0.0, 1.0, 0};
    if (p.fixed_range) range = {p.lo, p.hi, cr.count};

    // Histograms (added to a non-zero start: they accumulate).
    const size_t nh = static_cast<size_t>(g.tiles()) * static_cast<size_t>(p.nbins);
    std::vector<uint32_t> ch(nh, 3);
    clahe_histograms(h_img, h_val, w, im.stride, g, p, range, ch.data());
    auto d_hist = upload(std::vector<uint32_t>(nh, 3));
    cuda::clahe_histograms(dv_img, dv_val, w, im.stride, g, p, range, d_hist.get(), s.get());
    cuda::check(cudaStreamSynchronize(s.get()), "sync");
    expect_same(download(d_hist), ch, what + ": histograms");

    // LUTs from the (identical) histograms.
    std::vector<uint16_t> cl(nh);
    clahe_luts(ch.data(), g, p, cl.data());
    cuda::DeviceBuffer<uint16_t> d_lut(nh);
    cuda::clahe_luts(d_hist.get(), g, p, d_lut.get(), s.get());
    cuda::check(cudaStreamSynchronize(s.get()), "sync");
    expect_same(download(d_lut), cl, what + ": LUTs");

    // Interpolation, into an output with its own stride (padding must stay).
    const int64_t os = w.cols + 3;
    auto run_apply = [&](auto zero) {
        using O = decltype(zero);
        std::vector<O> co(static_cast<size_t>(std::max<int64_t>(w.rows, 0) * os), O{0xA5});
        clahe_apply(h_img, h_val, w, im.stride, g, p, range, cl.data(), co.data(), os);
        auto d_out = upload(std::vector<O>(co.size(), O{0xA5}));
        cuda::clahe_apply(dv_img, dv_val, w, im.stride, g, p, range, d_lut.get(), d_out.get(), os, s.get());
        cuda::check(cudaStreamSynchronize(s.get()), "sync");
        expect_same(download(d_out), co, what + (sizeof(O) == 1 ? ": 8-bit output" : ": 16-bit output"));
    };
    run_apply(uint16_t{0});
    if (p.out_bits == 8) run_apply(uint8_t{0});
}

ClaheParams params(int ty, int tx, double clip, int nbins, int bits) {
    ClaheParams p;
    p.tile_rows = ty;
    p.tile_cols = tx;
    p.clip_limit = clip;
    p.nbins = nbins;
    p.out_bits = bits;
    return p;
}

const ClaheParams kCases[] = {
    params(8, 8, 2.0, 256, 8),   params(3, 5, 2.0, 256, 8),    params(5, 7, 0.0, 256, 8),
    params(1, 1, 2.0, 256, 8),   params(4, 3, 40.0, 256, 8),   params(6, 5, 0.5, 64, 8),
    params(8, 8, 2.0, 4096, 16), params(3, 5, 3.0, 65536, 16), params(7, 2, 0.0, 4096, 16),
    params(2, 9, 1.0, 1000, 16), params(10, 10, 2.0, 2, 8),    params(2, 3, 1.5, 17, 16),
};

TEST(CudaClahe, FloatStagesMatchCpu) {
    SKIP_WITHOUT_GPU();
    uint64_t seed = 0;
    for (const auto& [H, W] : {std::pair<int64_t, int64_t>{1, 1}, {37, 53}, {64, 64}, {101, 29}, {300, 263}}) {
        const Image<float> im = float_image(H, W, H % 2 ? 7 : 0, ++seed);
        for (const ClaheParams& p : kCases) {
            if (p.tile_rows > H || p.tile_cols > W) continue;
            compare_stages(im, Window{0, 0, H, W}, p, true);
        }
        compare_stages(im, Window{0, 0, H, W}, params(1, 1, 2.0, 256, 8), false);
    }
}

TEST(CudaClahe, Uint16StagesMatchCpu) {
    SKIP_WITHOUT_GPU();
    uint64_t seed = 50;
    for (const auto& [H, W] : {std::pair<int64_t, int64_t>{2, 3}, {64, 64}, {257, 511}, {513, 1031}}) {
        const Image<uint16_t> im = u16_image(H, W, 5, ++seed);
        for (const ClaheParams& p : kCases) {
            if (p.tile_rows > H || p.tile_cols > W) continue;
            compare_stages(im, Window{0, 0, H, W}, p, true);
            compare_stages(im, Window{0, 0, H, W}, p, false);
        }
    }
}

TEST(CudaClahe, WindowsOfALargerImageAndFixedRanges) {
    SKIP_WITHOUT_GPU();
    const Image<float> f = float_image(233, 317, 11, 7);
    const Image<uint16_t> u = u16_image(233, 317, 11, 8);
    const Window windows[] = {{0, 0, 233, 317}, {17, 23, 150, 201}, {0, 100, 233, 1}, {232, 0, 1, 317}, {50, 50, 0, 9}};
    for (const Window& w : windows)
        for (ClaheParams p : {params(8, 8, 2.0, 256, 8), params(5, 3, 2.0, 4096, 16), params(4, 4, 1.0, 65536, 16)}) {
            compare_stages(f, w, p, true);
            compare_stages(u, w, p, true);
            p.fixed_range = true;
            p.lo = 0.5;
            p.hi = 4.0;  // clamps most float values to the end bins
            compare_stages(f, w, p, true);
            p.lo = p.hi = 20000;  // empty range: every value bin 0
            compare_stages(u, w, p, false);
        }
}

TEST(CudaClahe, EmptyTilesAndFlatImages) {
    SKIP_WITHOUT_GPU();
    // A nodata block covering whole tiles (ramp LUTs) and a flat image (hi == lo).
    Image<float> im = float_image(120, 140, 0, 21, 0.0);
    for (int64_t r = 0; r < 60; ++r)
        for (int64_t c = 0; c < 70; ++c) im.valid[static_cast<size_t>(r * im.stride + c)] = 0;
    for (const ClaheParams& p : {params(4, 4, 2.0, 256, 8), params(4, 4, 0.0, 4096, 16)})
        compare_stages(im, Window{0, 0, im.H, im.W}, p, true);
    Image<uint16_t> flat = u16_image(50, 60, 0, 3, 0.0);
    std::fill(flat.v.begin(), flat.v.end(), uint16_t{1234});
    compare_stages(flat, Window{0, 0, 50, 60}, params(3, 3, 2.0, 256, 8), true);
}

// LUTs of random histograms (empty tiles, spikes that clip, residual redistribution), and
// the interpolation's integer path: centre gaps whose product exceeds 2^26 (2 x 2 tiles of a
// 20000 x 20000 image; only a window around the centre is stored).
TEST(CudaClahe, RandomHistogramsAndTheIntegerInterpolationPath) {
    SKIP_WITHOUT_GPU();
    const cuda::Stream s;
    std::mt19937 rng(5);
    for (const ClaheParams& p : {params(2, 2, 2.0, 256, 8), params(2, 2, 0.0, 4096, 16), params(2, 2, 3.5, 777, 16),
                                 params(2, 2, 0.01, 65536, 16)}) {
        const ClaheGrid g = make_clahe_grid(20000, 20000, p);
        const size_t nh = static_cast<size_t>(g.tiles()) * static_cast<size_t>(p.nbins);
        std::vector<uint32_t> hist(nh, 0);
        for (int t = 1; t < g.tiles(); ++t)  // tile 0 stays empty
            for (int k = 0; k < 3000; ++k) {
                const int b = (rng() % 4 == 0) ? static_cast<int>(rng() % static_cast<unsigned>(p.nbins))
                                               : static_cast<int>(rng() % 7);  // spikes in the low bins
                hist[static_cast<size_t>(t) * static_cast<size_t>(p.nbins) + static_cast<size_t>(b)] += 1 + rng() % 50;
            }
        std::vector<uint16_t> cl(nh);
        clahe_luts(hist.data(), g, p, cl.data());
        const auto d_hist = upload(hist);
        cuda::DeviceBuffer<uint16_t> d_lut(nh);
        cuda::clahe_luts(d_hist.get(), g, p, d_lut.get(), s.get());
        cuda::check(cudaStreamSynchronize(s.get()), "sync");
        expect_same(download(d_lut), cl, "random histograms, bins " + std::to_string(p.nbins));

        Image<uint16_t> im = u16_image(64, 80, 0, 9, 0.1);
        const Window w{9968, 9960, 64, 80};
        const ClaheRange range{100.0, 60000.0, 1};
        std::vector<uint16_t> co(static_cast<size_t>(w.size()), 7);
        clahe_apply(im.v.data(), im.valid.data(), w, im.stride, g, p, range, cl.data(), co.data(), w.cols);
        const auto d_img = upload(im.v);
        const auto d_val = upload(im.valid);
        auto d_out = upload(std::vector<uint16_t>(co.size(), 7));
        cuda::clahe_apply(d_img.get(), d_val.get(), w, im.stride, g, p, range, d_lut.get(), d_out.get(), w.cols,
                          s.get());
        cuda::check(cudaStreamSynchronize(s.get()), "sync");
        expect_same(download(d_out), co, "integer interpolation path, bins " + std::to_string(p.nbins));
    }
}

TEST(CudaClahe, CollectiveAndHostEntryMatchCpu) {
    SKIP_WITHOUT_GPU();
    Comm self(MPI_COMM_SELF);
    const cuda::Stream s;
    const Image<float> f = float_image(199, 241, 3, 33);
    const Image<uint16_t> u = u16_image(199, 241, 3, 34);
    const Window w{0, 0, 199, 241};
    for (ClaheParams p : {params(8, 8, 2.0, 256, 8), params(3, 7, 2.0, 4096, 16), params(5, 5, 0.0, 65536, 16)}) {
        for (const bool fixed : {false, true}) {
            p.fixed_range = fixed;
            p.lo = 0.25;
            p.hi = 9.0;
            std::vector<uint16_t> c16(f.v.size(), 1), d16(f.v.size(), 1), h16(f.v.size(), 1);
            const ClaheRange cr = clahe(f.v.data(), f.valid.data(), w, f.stride, f.H, f.W, p, self, c16.data(), f.stride);
            auto d_img = upload(f.v);
            auto d_val = upload(f.valid);
            auto d_out = upload(d16);
            const ClaheRange dr = cuda::clahe(d_img.get(), d_val.get(), w, f.stride, f.H, f.W, p, self, d_out.get(),
                                              f.stride, s.get());
            expect_same(download(d_out), c16, "collective float");
            EXPECT_TRUE(same_bits(dr.lo, cr.lo) && same_bits(dr.hi, cr.hi) && dr.count == cr.count);
            cuda::clahe_from_host(f.v.data(), f.valid.data(), w, f.stride, f.H, f.W, p, self, h16.data(), f.stride);
            expect_same(h16, c16, "host entry float");
            if (p.out_bits == 8) {
                std::vector<uint8_t> c8(f.v.size(), 1), h8(f.v.size(), 1);
                clahe(f.v.data(), f.valid.data(), w, f.stride, f.H, f.W, p, self, c8.data(), f.stride);
                cuda::clahe_from_host(f.v.data(), f.valid.data(), w, f.stride, f.H, f.W, p, self, h8.data(), f.stride);
                expect_same(h8, c8, "host entry float, 8-bit");
            }
            std::vector<uint16_t> cu(u.v.size(), 1), hu(u.v.size(), 1);
            clahe(u.v.data(), nullptr, w, u.stride, u.H, u.W, p, self, cu.data(), u.stride);
            cuda::clahe_from_host(u.v.data(), nullptr, w, u.stride, u.H, u.W, p, self, hu.data(), u.stride);
            expect_same(hu, cu, "host entry uint16");
        }
    }
    // The same errors: no valid pixel, an 8-bit buffer for 16-bit output, a bad grid.
    std::vector<uint8_t> none(f.valid.size(), 0);
    std::vector<uint8_t> o8(f.v.size());
    EXPECT_THROW(cuda::clahe_from_host(f.v.data(), none.data(), w, f.stride, f.H, f.W, params(2, 2, 2, 256, 8), self,
                                       o8.data(), f.stride),
                 std::runtime_error);
    EXPECT_THROW(cuda::clahe_from_host(f.v.data(), nullptr, w, f.stride, f.H, f.W, params(2, 2, 2, 256, 16), self,
                                       o8.data(), f.stride),
                 std::invalid_argument);
    EXPECT_THROW(cuda::clahe_from_host(f.v.data(), nullptr, w, f.stride, f.H, f.W, params(500, 2, 2, 256, 8), self,
                                       o8.data(), f.stride),
                 std::invalid_argument);
}

// Under mpirun: every rank equalises its band on the device, collectively; its rows must
// equal the CPU's on the whole image (one rank), for float 8-bit and uint16 16-bit output.
TEST(CudaDistributed, ClaheAcrossRanksEqualsOneCpuRank) {
    SKIP_WITHOUT_GPU();
    Comm world(MPI_COMM_WORLD), self(MPI_COMM_SELF);
    const Image<float> f = float_image(211, 157, 0, 61);
    const Image<uint16_t> u = u16_image(211, 157, 0, 62);
    const int P = world.size(), k = world.rank();
    auto cut = [&](int i) { return i == 0 ? int64_t{0} : (i == P ? f.H : std::min<int64_t>(f.H, 1 + (i - 1) * 90)); };
    const int64_t r0 = cut(k);
    const Window own{r0, 0, cut(k + 1) - r0, f.W};
    const size_t off = static_cast<size_t>(r0 * f.W), n = static_cast<size_t>(own.size());
    const Window whole{0, 0, f.H, f.W};
    {
        const ClaheParams p = params(5, 4, 2.0, 256, 8);
        std::vector<uint8_t> cpu(f.v.size()), band(n + 1);
        clahe(f.v.data(), f.valid.data(), whole, f.W, f.H, f.W, p, self, cpu.data(), f.W);
        cuda::clahe_from_host(f.v.data() + off, f.valid.data() + off, own, f.W, f.H, f.W, p, world, band.data(), f.W);
        EXPECT_EQ(std::memcmp(band.data(), cpu.data() + off, n), 0) << "rank " << k << " float 8-bit";
    }
    {
        const ClaheParams p = params(3, 6, 3.0, 4096, 16);
        std::vector<uint16_t> cpu(u.v.size()), band(n + 1);
        clahe(u.v.data(), u.valid.data(), whole, u.W, u.H, u.W, p, self, cpu.data(), u.W);
        cuda::clahe_from_host(u.v.data() + off, u.valid.data() + off, own, u.W, u.H, u.W, p, world, band.data(), u.W);
        EXPECT_EQ(std::memcmp(band.data(), cpu.data() + off, n * sizeof(uint16_t)), 0) << "rank " << k << " uint16";
    }
}

}  // namespace
}  // namespace tessera
