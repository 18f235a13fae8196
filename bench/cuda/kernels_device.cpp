// bench_kernels' CUDA cases (bench/device_parts.h): the background fit and CLAHE, device-resident
// and host-to-host, each checked against the CPU's results when asked.
#include <cuda_runtime_api.h>

#include <vector>

#include "bench/bench_support.h"
#include "bench/device_parts.h"
#include "kernels/cuda/background.h"
#include "kernels/cuda/clahe.h"
#include "kernels/cuda/device_buffer.h"
#include "partition/comm.h"
#include "partition/cuda/clahe.h"
#include "partition/cuda/surface_fit.h"
#include "partition/surface_fit.h"

namespace tessera::bench {

int device_kernel_rows(const KernelCase& k) {
    const int64_t n = k.n;
    const int repeat = k.repeat, degree = k.degree;
    const std::string backend = "cuda";
    const std::vector<float>& z0 = *k.z0;
    const std::vector<uint8_t>& valid = *k.valid;
    const std::vector<uint16_t>& amp = *k.amp;
    Comm self(MPI_COMM_SELF);
    const Window whole{0, 0, n, n};
    ClaheParams cp16;  // as bench_kernels' CPU cases
    cp16.tile_rows = cp16.tile_cols = 8;
    cp16.clip_limit = 2.0;
    cp16.out_bits = 16;
    cp16.nbins = k.bins;
    ClaheParams cp8 = cp16;
    cp8.out_bits = 8;
    cp8.nbins = 256;
    std::vector<float> z(z0.size());
    std::vector<uint16_t> out16(amp.size());
    std::vector<uint8_t> out8(amp.size());
    auto restore = [&] { std::copy(z0.begin(), z0.end(), z.begin()); };
    const std::string bg_case = "background degree-3 fit + subtract", cl16_case =
        "CLAHE uint16 -> 16-bit, " + std::to_string(k.bins) + " bins", cl8_case = "CLAHE float -> 8-bit, 256 bins";
    int mismatches = 0;

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
            cuda::check(cudaMemcpyAsync(d_z.get(), d_z0.get(), np * sizeof(float), cudaMemcpyDeviceToDevice, s.get()),
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
    if (k.check) {
        mismatches += check_same(fit.coeffs, *k.cpu_coeffs, "background coefficients (device-resident)");
        mismatches += check_same(dev_z, *k.cpu_z, "background subtracted image (device-resident)");
        mismatches += check_same(z, *k.cpu_z, "background subtracted image (host-to-host)");
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
    if (k.check) {
        std::vector<uint16_t> dev16(np);
        std::vector<uint8_t> dev8(np);
        cuda::check(cudaMemcpy(dev16.data(), d_out16.get(), np * sizeof(uint16_t), cudaMemcpyDeviceToHost), "download");
        cuda::check(cudaMemcpy(dev8.data(), d_out8.get(), np, cudaMemcpyDeviceToHost), "download");
        mismatches += check_same(dev16, *k.cpu16, "CLAHE 16-bit (device-resident)");
        mismatches += check_same(out16, *k.cpu16, "CLAHE 16-bit (host-to-host)");
        mismatches += check_same(dev8, *k.cpu8, "CLAHE 8-bit (device-resident)");
        mismatches += check_same(out8, *k.cpu8, "CLAHE 8-bit (host-to-host)");
    }
    return mismatches;
}

}  // namespace tessera::bench
