// CLAHE on the device: the CUDA twins of kernels/clahe.h, which defines every step. All
// steps are integer or the CPU's per-pixel double expressions, so the outputs are
// bit-identical to the CPU backend's (ARCHITECTURE.md section 1). The range and the
// histograms are reductions, the interpolation a pointwise pass over the LUTs (section 5).
//
// Image, valid (null = every pixel) and out are device memory at the window's first pixel
// with row strides in elements; hist and lut are device arrays of tiles() * nbins, tile-major.
// Work goes on stream s. clahe_local_range returns after the stream has finished;
// clahe_histograms, clahe_luts and clahe_apply are only queued (synchronise s before reading).
// The collective cuda::clahe and cuda::clahe_from_host are partition/cuda/clahe.h's.
//
// Compiled by nvcc (C++17, clahe.cu) and g++ (C++20): only C++17 headers here.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/clahe.h"
#include "kernels/types.h"

namespace tessera::cuda {

// Min, max and count over the window's valid pixels (count 0: lo = +inf, hi = -inf).
ClaheRange clahe_local_range(const float* img, const uint8_t* valid, const Window& own, int64_t stride,
                             cudaStream_t s);
ClaheRange clahe_local_range(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride,
                             cudaStream_t s);

// Adds the window's valid pixels to hist (device, tiles() * nbins uint32). Per block a
// shared-memory histogram of one tile, added to hist once; when nbins does not fit in
// shared memory (65536 bins), atomics into hist directly.
void clahe_histograms(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                      const ClaheParams& p, const ClaheRange& range, uint32_t* hist, cudaStream_t s);
void clahe_histograms(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride,
                      const ClaheGrid& g, const ClaheParams& p, const ClaheRange& range, uint32_t* hist,
                      cudaStream_t s);

// Clip, redistribute and integrate every tile's histogram (device in, device out).
void clahe_luts(const uint32_t* hist, const ClaheGrid& g, const ClaheParams& p, uint16_t* lut, cudaStream_t s);

// Interpolates the LUTs at the window's pixels; invalid pixels get 0. A uint8_t output
// needs out_bits == 8 (std::invalid_argument otherwise).
void clahe_apply(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint16_t* out,
                 int64_t out_stride, cudaStream_t s);
void clahe_apply(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint16_t* out,
                 int64_t out_stride, cudaStream_t s);
void clahe_apply(const float* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint8_t* out,
                 int64_t out_stride, cudaStream_t s);
void clahe_apply(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, const ClaheGrid& g,
                 const ClaheParams& p, const ClaheRange& range, const uint16_t* lut, uint8_t* out,
                 int64_t out_stride, cudaStream_t s);

}  // namespace tessera::cuda
