// Background surface fit and removal on the device: the CUDA twins of kernels/background.h,
// which defines the algorithm (exact integer moments, double Horner subtraction). The device
// produces the very same integers and bits as the CPU backend (ARCHITECTURE.md section 1);
// the fit is a reduction and the subtraction pointwise (section 5).
//
// Pointers are device memory at the window's first pixel with row stride `stride` elements;
// valid and mask may be null (every pixel). Work goes on stream s; every call returns after
// the stream has finished it (the results are host values). Only the moments (a few KB) and
// a few scalars cross the bus.
//
// Compiled by nvcc (C++17, background.cu) and g++ (C++20): only C++17 headers here.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/background.h"
#include "kernels/types.h"

namespace tessera::cuda {

// Largest |z| over the pixels used (0 when none): tessera::surface_max_abs.
double surface_max_abs(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride,
                       cudaStream_t s);

// Exact moments of the window's used pixels: the same integers as tessera::surface_moments.
SurfaceMoments surface_moments(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                               int64_t stride, int64_t H, int64_t W, int degree, int zexp, cudaStream_t s);

// In place z = z - float(s) (NaN at invalid pixels), bit-identical to tessera::subtract_surface,
// residual sums included (the CPU's summation order is reproduced: per row four interleaved
// partials, then the rows in order).
ResidualSums subtract_surface(float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride,
                              int64_t H, int64_t W, const SurfaceFit& fit, cudaStream_t s);

// One rank's window of device arrays as the collective fit sees it (partition/surface_fit.h:
// fit_surface; partition/cuda/surface_fit.h: cuda::fit_surface): its local results only.
struct DeviceSurfaceWindow {
    const float* z;
    const uint8_t* valid;
    const uint8_t* mask;
    Window own;
    int64_t stride, H, W;
    cudaStream_t s;
    double max_abs() const { return surface_max_abs(z, valid, mask, own, stride, s); }
    SurfaceMoments moments(int degree, int zexp) const {
        return surface_moments(z, valid, mask, own, stride, H, W, degree, zexp, s);
    }
};

// A rank's band for the commands: host arrays uploaded once (contiguous on the device),
// fitted (partition/surface_fit.h: fit_surface(band, degree, comm)) and subtracted there,
// the result downloaded into the host z.
class SurfaceBand {
public:
    SurfaceBand(float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride, int64_t H,
                int64_t W);
    ~SurfaceBand();
    SurfaceBand(const SurfaceBand&) = delete;
    SurfaceBand& operator=(const SurfaceBand&) = delete;

    double max_abs();                            // the fit's local results (DeviceSurfaceWindow)
    SurfaceMoments moments(int degree, int zexp);
    ResidualSums subtract(const SurfaceFit& fit);  // and download into the host z

private:
    void release() noexcept;
    float* host_z_;
    Window own_;
    int64_t host_stride_, H_, W_;
    cudaStream_t s_ = nullptr;
    float* z_ = nullptr;
    uint8_t* valid_ = nullptr;
    uint8_t* mask_ = nullptr;
};

}  // namespace tessera::cuda
