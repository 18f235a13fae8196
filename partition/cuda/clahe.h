// CLAHE over the ranks on the device: the CUDA backend's twin of partition/clahe.h (the
// steps are kernels/cuda/clahe.h's; bit-identical to the CPU backend). g++ only, CUDA builds.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/clahe.h"
#include "kernels/types.h"
#include "partition/comm.h"

namespace tessera::cuda {

// Collective over comm, as tessera::clahe, on device arrays: range allreduce (unless fixed),
// device histograms (with more than one rank: downloaded, summed by one allreduce, uploaded),
// device LUTs and interpolation. The same exceptions as tessera::clahe. Returns the range.
ClaheRange clahe(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride, cudaStream_t s);
ClaheRange clahe(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride, cudaStream_t s);
ClaheRange clahe(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride, cudaStream_t s);
ClaheRange clahe(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride, cudaStream_t s);

// The same over HOST arrays (the commands): uploads the window, equalises it on the current
// device, downloads out. Signatures of tessera::clahe.
ClaheRange clahe_from_host(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                           int64_t W, const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride);
ClaheRange clahe_from_host(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                           int64_t W, const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride);
ClaheRange clahe_from_host(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                           int64_t W, const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride);
ClaheRange clahe_from_host(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                           int64_t W, const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride);

}  // namespace tessera::cuda
