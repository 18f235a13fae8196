// Timing of the quicklook kernels of either backend on N x N synthetic images (README
// "Performance"; ARCHITECTURE.md section 8): the degree-3 background fit + subtraction
// (kernels/background.h) and CLAHE (kernels/clahe.h). Prints one markdown row per case:
// the median over --repeat runs (after one warm-up run) of
//   device-resident: the data already on the GPU, results left there (CUDA only);
//   host-to-host:    from host arrays (pageable std::vector) to host arrays, allocation,
//                    copies and synchronisation included (the commands' path);
// Mpx/s from the device-resident time on CUDA, the host-to-host time on the CPU.
// With --check the CUDA results are compared bit for bit with the CPU backend's.
//   tessera_bench_kernels --backend cuda --size 8192 --repeat 10 --check
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/background.h"
#include "kernels/clahe.h"
#include "partition/clahe.h"
#include "partition/comm.h"
#include "partition/surface_fit.h"
#ifdef TESSERA_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/background.h"
#include "kernels/cuda/clahe.h"
#include "kernels/cuda/device_buffer.h"
#include "partition/cuda/clahe.h"
#include "partition/cuda/surface_fit.h"
#endif

using namespace tessera;

namespace {

double median_ms(int repeat, const std::function<void()>& prepare, const std::function<void()>& run) {
    prepare();
    run();  // warm-up
    std::vector<double> t;
    for (int i = 0; i < repeat; ++i) {
        prepare();
        const auto t0 = std::chrono::steady_clock::now();
        run();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (t.empty()) return 0;  // --check's reference runs only
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

void row(const char* what, int64_t n, const std::string& backend, double dev_ms, double h2h_ms) {
    const double ms = dev_ms > 0 ? dev_ms : h2h_ms;
    const double mpx = static_cast<double>(n) * static_cast<double>(n) / 1e6 / (ms / 1e3);
    char dev[32] = "-";
    if (dev_ms > 0) std::snprintf(dev, sizeof dev, "%.3f", dev_ms);
    std::printf("| %s | %lldx%lld | %s | %s | %.3f | %.0f |\n", what, static_cast<long long>(n),
                static_cast<long long>(n), backend.c_str(), dev, h2h_ms, mpx);
    std::fflush(stdout);
}

// A smooth cubic surface plus noise, 1 % invalid pixels (an unwrapped phase).
void make_phase(int64_t n, std::vector<float>& z, std::vector<uint8_t>& valid) {
    z.resize(static_cast<size_t>(n * n));
    valid.assign(z.size(), 1);
#pragma omp parallel
    {
        std::mt19937_64 rng(1234 + static_cast<uint64_t>(omp_get_thread_num()));
        std::normal_distribution<double> noise(0.0, 0.3);
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n; ++r)
            for (int64_t c = 0; c < n; ++c) {
                const double x = surface_coord(c, n), y = surface_coord(r, n);
                const size_t i = static_cast<size_t>(r * n + c);
                z[i] = static_cast<float>(3 + 2 * x - 5 * y + 4 * x * x * y - 7 * y * y * y + noise(rng));
                if (((r * 7919 + c * 104729) % 100) == 0) valid[i] = 0;
            }
    }
}

// An amplitude-like uint16 image, every pixel valid.
std::vector<uint16_t> make_amplitude(int64_t n) {
    std::vector<uint16_t> a(static_cast<size_t>(n * n));
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n; ++r) {
        uint64_t h = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(r + 1);
        for (int64_t c = 0; c < n; ++c) {
            h ^= h >> 33;
            h *= 0xff51afd7ed558ccdull;
            h ^= h >> 29;
            const double base = 20000 + 15000 * std::sin(0.0013 * static_cast<double>(r)) *
                                            std::cos(0.0021 * static_cast<double>(c));
            a[static_cast<size_t>(r * n + c)] = static_cast<uint16_t>(base + static_cast<double>(h % 6000) - 3000);
        }
    }
    return a;
}

int g_mismatches = 0;

template <class T>
void check_same(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
    const bool same = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
    std::printf("check: %s: %s\n", what, same ? "bit-identical to the CPU backend" : "DIFFERS from the CPU backend");
    g_mismatches += !same;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    std::string backend = "cpu";
    int64_t n = 4096;
    int repeat = 5, bins = 4096;
    bool check = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
        if (a == "--backend") backend = next();
        else if (a == "--size") n = std::stoll(next());
        else if (a == "--repeat") repeat = std::stoi(next());
        else if (a == "--bins") bins = std::stoi(next());
        else if (a == "--check") check = true;
        else {
            std::fprintf(stderr,
                         "usage: tessera_bench_kernels [--backend cpu|cuda] [--size N] [--repeat R] [--bins B] "
                         "[--check]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (backend != "cpu" && backend != "cuda") {
        std::fprintf(stderr, "tessera_bench_kernels: --backend cpu or cuda\n");
        MPI_Finalize();
        return 2;
    }
#ifdef TESSERA_HAVE_CUDA
    if (backend == "cuda") {
        int devices = 0;
        if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
            std::fprintf(stderr, "tessera_bench_kernels: no CUDA device visible\n");
            MPI_Finalize();
            return 2;
        }
        cuda::check(cudaSetDevice(0), "cudaSetDevice");
    }
#else
    if (backend == "cuda") {
        std::fprintf(stderr, "tessera_bench_kernels: built without the CUDA backend (TESSERA_CUDA=OFF)\n");
        MPI_Finalize();
        return 2;
    }
#endif
    Comm self(MPI_COMM_SELF);
    const Window whole{0, 0, n, n};
    const int degree = 3;
    ClaheParams cp16;  // what a 16-bit quicklook uses (tessera clahe --bits 16 defaults)
    cp16.tile_rows = cp16.tile_cols = 8;
    cp16.clip_limit = 2.0;
    cp16.out_bits = 16;
    cp16.nbins = bins;
    ClaheParams cp8 = cp16;  // the command's float path: 8-bit, 256 bins
    cp8.out_bits = 8;
    cp8.nbins = 256;

    std::vector<float> z0;
    std::vector<uint8_t> valid;
    make_phase(n, z0, valid);
    const std::vector<uint16_t> amp = make_amplitude(n);
    std::vector<float> z(z0.size());
    std::vector<uint16_t> out16(amp.size());
    std::vector<uint8_t> out8(amp.size());
    auto restore = [&] { std::copy(z0.begin(), z0.end(), z.begin()); };

    std::printf("<!-- tessera_bench_kernels: %s backend, %d OpenMP threads, median of %d runs after a warm-up; "
                "CLAHE 8x8 tiles, clip 2; 16-bit with %d bins -->\n",
                backend.c_str(), omp_get_max_threads(), repeat, bins);
    std::printf("| case | size | backend | ms device-resident | ms host-to-host | Mpx/s |\n");
    std::printf("| --- | --- | --- | --- | --- | --- |\n");
    const std::string bg_case = "background degree-3 fit + subtract", cl16_case =
        "CLAHE uint16 -> 16-bit, " + std::to_string(bins) + " bins", cl8_case = "CLAHE float -> 8-bit, 256 bins";

    // CPU results (timed for --backend cpu; the reference for --check).
    SurfaceFit cpu_fit;
    std::vector<float> cpu_z;
    std::vector<uint16_t> cpu16;
    std::vector<uint8_t> cpu8;
    if (backend == "cpu" || check) {
        const bool timed = backend == "cpu";
        const int reps = timed ? repeat : 0;
        const double bg = median_ms(reps, restore, [&] {
            cpu_fit = fit_surface(z.data(), valid.data(), nullptr, whole, n, n, n, degree, self);
            subtract_surface(z.data(), valid.data(), nullptr, whole, n, n, n, cpu_fit);
        });
        cpu_z = z;
        const double c16 = median_ms(reps, [] {}, [&] { clahe(amp.data(), nullptr, whole, n, n, n, cp16, self, out16.data(), n); });
        cpu16 = out16;
        const double c8 = median_ms(reps, [] {}, [&] { clahe(z0.data(), valid.data(), whole, n, n, n, cp8, self, out8.data(), n); });
        cpu8 = out8;
        if (timed) {
            row(bg_case.c_str(), n, backend, 0, bg);
            row(cl16_case.c_str(), n, backend, 0, c16);
            row(cl8_case.c_str(), n, backend, 0, c8);
        }
    }

#ifdef TESSERA_HAVE_CUDA
    if (backend == "cuda") {
        cudaDeviceProp prop{};
        cuda::check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
        std::printf("<!-- device: %s -->\n", prop.name);
        const cuda::Stream s;
        const size_t np = z0.size();
        cuda::DeviceBuffer<float> d_z0(np), d_z(np);
        cuda::DeviceBuffer<uint8_t> d_valid(np), d_out8(np);
        cuda::DeviceBuffer<uint16_t> d_amp(np), d_out16(np);
        cuda::check(cudaMemcpy(d_z0.get(), z0.data(), np * sizeof(float), cudaMemcpyHostToDevice), "upload");
        cuda::check(cudaMemcpy(d_valid.get(), valid.data(), np, cudaMemcpyHostToDevice), "upload");
        cuda::check(cudaMemcpy(d_amp.get(), amp.data(), np * sizeof(uint16_t), cudaMemcpyHostToDevice), "upload");
        cuda::check(cudaDeviceSynchronize(), "upload (sync)");  // the kernels run on a non-blocking stream

        // Background: device-resident (z restored from a device copy, not timed), then host-to-host.
        SurfaceFit fit;
        const double bg_dev = median_ms(
            repeat,
            [&] {
                cuda::check(cudaMemcpyAsync(d_z.get(), d_z0.get(), np * sizeof(float), cudaMemcpyDeviceToDevice,
                                            s.get()),
                            "restore");
                cuda::check(cudaStreamSynchronize(s.get()), "restore (sync)");
            },
            [&] {
                fit = cuda::fit_surface(d_z.get(), d_valid.get(), nullptr, whole, n, n, n, degree, self, s.get());
                cuda::subtract_surface(d_z.get(), d_valid.get(), nullptr, whole, n, n, n, fit, s.get());
            });
        std::vector<float> dev_z(np);
        cuda::check(cudaMemcpy(dev_z.data(), d_z.get(), np * sizeof(float), cudaMemcpyDeviceToHost), "download");
        const double bg_h2h = median_ms(repeat, restore, [&] {
            cuda::SurfaceBand band(z.data(), valid.data(), nullptr, whole, n, n, n);
            band.subtract(fit_surface(band, degree, self));
        });
        row(bg_case.c_str(), n, backend, bg_dev, bg_h2h);
        if (check) {
            check_same(fit.coeffs, cpu_fit.coeffs, "background coefficients (device-resident)");
            check_same(dev_z, cpu_z, "background subtracted image (device-resident)");
            check_same(z, cpu_z, "background subtracted image (host-to-host)");
        }

        const double c16_dev = median_ms(repeat, [] {}, [&] {
            cuda::clahe(d_amp.get(), nullptr, whole, n, n, n, cp16, self, d_out16.get(), n, s.get());
        });
        const double c16_h2h = median_ms(repeat, [] {}, [&] {
            cuda::clahe_from_host(amp.data(), nullptr, whole, n, n, n, cp16, self, out16.data(), n);
        });
        row(cl16_case.c_str(), n, backend, c16_dev, c16_h2h);
        const double c8_dev = median_ms(repeat, [] {}, [&] {
            cuda::clahe(d_z0.get(), d_valid.get(), whole, n, n, n, cp8, self, d_out8.get(), n, s.get());
        });
        const double c8_h2h = median_ms(repeat, [] {}, [&] {
            cuda::clahe_from_host(z0.data(), valid.data(), whole, n, n, n, cp8, self, out8.data(), n);
        });
        row(cl8_case.c_str(), n, backend, c8_dev, c8_h2h);
        if (check) {
            std::vector<uint16_t> dev16(np);
            std::vector<uint8_t> dev8(np);
            cuda::check(cudaMemcpy(dev16.data(), d_out16.get(), np * sizeof(uint16_t), cudaMemcpyDeviceToHost), "download");
            cuda::check(cudaMemcpy(dev8.data(), d_out8.get(), np, cudaMemcpyDeviceToHost), "download");
            check_same(dev16, cpu16, "CLAHE 16-bit (device-resident)");
            check_same(out16, cpu16, "CLAHE 16-bit (host-to-host)");
            check_same(dev8, cpu8, "CLAHE 8-bit (device-resident)");
            check_same(out8, cpu8, "CLAHE 8-bit (host-to-host)");
        }
    }
#endif
    MPI_Finalize();
    return g_mismatches == 0 ? 0 : 1;
}
