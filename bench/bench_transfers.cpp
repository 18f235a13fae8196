// What the bus and the host allow a host-to-host unwrap (issue 5's "copies alone bound it"):
// pinned and registered copies each way and both ways at once, the cost of page-locking, and
// the host passes that could replace bytes on the bus (labels widened from 8 bits, u rebuilt
// from the phase and k), alone and beside a download.
//   tessera_bench_transfers [--pixels N] [--repeat R]
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#ifdef __SSE2__
#include <immintrin.h>
#endif

namespace {

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "bench_transfers: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

double seconds(const std::function<void()>& f) {
    const auto t = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median_of(int repeat, const std::function<double()>& f) {
    std::vector<double> v;
    for (int r = 0; r < repeat; ++r) v.push_back(f());
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <class T>
T* pinned(size_t n) {
    void* p = nullptr;
    check(cudaMallocHost(&p, n * sizeof(T)), "cudaMallocHost");
    std::memset(p, 1, n * sizeof(T));
    return static_cast<T*>(p);
}

template <class T>
T* pageable(size_t n) {
    T* p = static_cast<T*>(std::aligned_alloc(4096, (n * sizeof(T) + 4095) / 4096 * 4096));
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) p[i] = T(1);
    return p;
}

void widen_plain(const uint8_t* in, uint32_t* out, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) out[i] = in[i];
}

// Streaming stores: no read-for-ownership of the destination.
void widen_stream(const uint8_t* in, uint32_t* out, size_t n) {
#ifdef __SSE2__
    const size_t blocks = n / 16;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < blocks; ++b) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + b * 16));
        const __m128i z = _mm_setzero_si128();
        const __m128i lo = _mm_unpacklo_epi8(v, z), hi = _mm_unpackhi_epi8(v, z);
        __m128i* o = reinterpret_cast<__m128i*>(out + b * 16);
        _mm_stream_si128(o + 0, _mm_unpacklo_epi16(lo, z));
        _mm_stream_si128(o + 1, _mm_unpackhi_epi16(lo, z));
        _mm_stream_si128(o + 2, _mm_unpacklo_epi16(hi, z));
        _mm_stream_si128(o + 3, _mm_unpackhi_epi16(hi, z));
    }
    _mm_sfence();
    for (size_t i = blocks * 16; i < n; ++i) out[i] = in[i];
#else
    widen_plain(in, out, n);
#endif
}

void rebuild_u(float* phase, const int8_t* k, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) phase[i] = phase[i] + 6.2831855f * static_cast<float>(k[i]);
}

}  // namespace

int main(int argc, char** argv) {
    size_t n = size_t{16384} * 16384;
    int repeat = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--pixels" && i + 1 < argc) n = std::stoull(argv[++i]);
        else if (a == "--repeat" && i + 1 < argc) repeat = std::stoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: tessera_bench_transfers [--pixels N] [--repeat R]\n");
            return 2;
        }
    }
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    std::printf("device %s, %d host threads, %zu pixels (4 B: %.3f GB)\n", prop.name, omp_get_max_threads(), n,
                n * 4 / 1e9);

    float *d_a = nullptr, *d_b = nullptr;
    uint8_t* d_k = nullptr;
    check(cudaMalloc(&d_a, n * 4), "cudaMalloc");
    check(cudaMalloc(&d_b, n * 4), "cudaMalloc");
    check(cudaMalloc(&d_k, n), "cudaMalloc");
    check(cudaMemset(d_k, 3, n), "cudaMemset");
    cudaStream_t s1, s2;
    check(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "stream");
    check(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "stream");

    float* h_phase = pinned<float>(n);
    float* h_u = pinned<float>(n);
    uint32_t* h_label = pinned<uint32_t>(n);
    uint8_t* h_k = pinned<uint8_t>(n);

    auto copy = [&](void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
        check(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
    };
    auto sync = [&] {
        check(cudaStreamSynchronize(s1), "sync");
        check(cudaStreamSynchronize(s2), "sync");
    };
    auto row = [&](const char* what, double bytes, double t) {
        std::printf("| %s | %.2f ms | %.1f GB/s | %.2f Gpx/s |\n", what, t * 1e3, bytes / t / 1e9, n / t / 1e9);
    };
    std::printf("| what | time | rate | pixels/s |\n|---|---|---|---|\n");

    const double up = median_of(repeat, [&] {
        return seconds([&] { copy(d_a, h_phase, n * 4, cudaMemcpyHostToDevice, s1), sync(); });
    });
    row("H2D 4 B/px, cudaMallocHost, one call", n * 4.0, up);
    row("H2D 4 B/px, 8 calls", n * 4.0, median_of(repeat, [&] {
            return seconds([&] {
                for (int c = 0; c < 8; ++c)
                    copy(d_a + n / 8 * c, h_phase + n / 8 * c, n / 8 * 4, cudaMemcpyHostToDevice, s1);
                sync();
            });
        }));
    const double down = median_of(repeat, [&] {
        return seconds([&] { copy(h_u, d_a, n * 4, cudaMemcpyDeviceToHost, s1), sync(); });
    });
    row("D2H 4 B/px, one call", n * 4.0, down);
    row("D2H 8 B/px (u + u32 labels)", n * 8.0, median_of(repeat, [&] {
            return seconds([&] {
                copy(h_u, d_a, n * 4, cudaMemcpyDeviceToHost, s1);
                copy(h_label, d_b, n * 4, cudaMemcpyDeviceToHost, s1);
                sync();
            });
        }));
    row("D2H 1 B/px (u8)", n * 1.0, median_of(repeat, [&] {
            return seconds([&] { copy(h_k, d_k, n, cudaMemcpyDeviceToHost, s1), sync(); });
        }));
    row("H2D 4 B/px and D2H 4 B/px at once", n * 8.0, median_of(repeat, [&] {
            return seconds([&] {
                copy(d_a, h_phase, n * 4, cudaMemcpyHostToDevice, s1);
                copy(h_u, d_b, n * 4, cudaMemcpyDeviceToHost, s2);
                sync();
            });
        }));

    row("host: widen u8 -> u32 labels, plain stores", n * 5.0, median_of(repeat, [&] {
            return seconds([&] { widen_plain(h_k, h_label, n); });
        }));
    row("host: widen u8 -> u32 labels, streaming stores", n * 5.0, median_of(repeat, [&] {
            return seconds([&] { widen_stream(h_k, h_label, n); });
        }));
    {
        double t_widen = 0;
        const double t = median_of(repeat, [&] {
            return seconds([&] {
                copy(h_u, d_a, n * 4, cudaMemcpyDeviceToHost, s1);
                t_widen = seconds([&] { widen_stream(h_k, h_label, n); });
                sync();
            });
        });
        row("D2H 4 B/px with the streaming widen beside it (both done)", n * 4.0, t);
        std::printf("|   (the widen alone took %.2f ms of that) | | | |\n", t_widen * 1e3);
    }
    row("host: u = phase + 2 pi k (int8 k), in place", n * 9.0, median_of(repeat, [&] {
            return seconds([&] { rebuild_u(h_u, reinterpret_cast<const int8_t*>(h_k), n); });
        }));

    // Page-locking a pageable array (what cuda::Region does for a caller's arrays).
    float* pg = pageable<float>(n);
    double t_reg = 0, t_unreg = 0, t_up_reg = 0;
    for (int r = 0; r < std::min(repeat, 3); ++r) {
        t_reg += seconds([&] { check(cudaHostRegister(pg, n * 4, cudaHostRegisterDefault), "cudaHostRegister"); });
        t_up_reg += seconds([&] { copy(d_a, pg, n * 4, cudaMemcpyHostToDevice, s1), sync(); });
        t_unreg += seconds([&] { check(cudaHostUnregister(pg), "cudaHostUnregister"); });
    }
    const int rr = std::min(repeat, 3);
    row("cudaHostRegister of 4 B/px", n * 4.0, t_reg / rr);
    row("H2D 4 B/px from registered memory", n * 4.0, t_up_reg / rr);
    row("cudaHostUnregister of 4 B/px", n * 4.0, t_unreg / rr);
    row("H2D 4 B/px from pageable memory", n * 4.0, median_of(std::min(repeat, 3), [&] {
            return seconds([&] { copy(d_a, pg, n * 4, cudaMemcpyHostToDevice, s1), sync(); });
        }));
    std::free(pg);
    return 0;
}
