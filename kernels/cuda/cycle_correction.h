// Section 4.1's cycle correction of a whole image's u on the device (a frame lane: one rank,
// one piece), the decision of kernels/cycle_correction.h. Host declarations; cycle_correction.cu.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tessera::cuda {

// u: rows x cols at `stride` floats a row (NaN where not integrated); `decided`: rows * cols
// int32 of device scratch; `count`: one device word. The pixel `keep` (row-major index, -1:
// none) is never corrected. Returns the pixels corrected (synchronises the stream).
int64_t correct_cycles(float* u, int64_t stride, int64_t rows, int64_t cols, int32_t* decided,
                       unsigned long long* count, int64_t keep, cudaStream_t s);

}  // namespace tessera::cuda
