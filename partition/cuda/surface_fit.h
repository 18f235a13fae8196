// The collective background fit over device arrays (the CUDA backend's twin of
// partition/surface_fit.h's host-array fit_surface; g++ only, CUDA builds).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/background.h"
#include "partition/comm.h"
#include "partition/surface_fit.h"

namespace tessera::cuda {

// Collective over comm, as tessera::fit_surface: max |z| allreduce, device moments (work on
// stream s), one allreduce of the moments, host solve. Bit-identical coefficients for any
// backend and split.
inline SurfaceFit fit_surface(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                              int64_t stride, int64_t H, int64_t W, int degree, Comm& comm, cudaStream_t s) {
    DeviceSurfaceWindow window{z, valid, mask, own, stride, H, W, s};
    return tessera::fit_surface(window, degree, comm);
}

}  // namespace tessera::cuda
