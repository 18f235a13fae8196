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
#include "bench/bench_support.h"
#include "bench/device_parts.h"

using namespace tessera;
using bench::median_ms;
using bench::row;

namespace {

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
    std::string device;
    if (backend == "cuda" && !bench::device_ready(device)) {
        std::fprintf(stderr, "tessera_bench_kernels: no CUDA device visible (or built without the CUDA backend)\n");
        MPI_Finalize();
        return 2;
    }
    if (!device.empty()) std::printf("<!-- device: %s -->\n", device.c_str());
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

    if (backend == "cuda") {
        bench::KernelCase k;
        k.n = n, k.repeat = repeat, k.bins = bins, k.degree = degree, k.check = check;
        k.z0 = &z0, k.valid = &valid, k.amp = &amp;
        k.cpu_coeffs = &cpu_fit.coeffs, k.cpu_z = &cpu_z, k.cpu16 = &cpu16, k.cpu8 = &cpu8;
        g_mismatches += bench::device_kernel_rows(k);
    }
    MPI_Finalize();
    return g_mismatches == 0 ? 0 : 1;
}
