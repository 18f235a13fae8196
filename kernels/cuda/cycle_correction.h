// Section 4.1's cycle correction of a region's u on the device, between apply and the download
// (cuda::Region::correct_cycles): the decision of kernels/cycle_decision.h. Host declarations;
// cycle_correction.cu.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

// u: d.phase over `own` (NaN where not integrated); label: own-local, `label_bytes` wide; halo,
// halo_label: device floats and labels, CorrectionHalo's above, below, left and right one after
// the other (kernels/cycle_correction.h: kCorrectionReach deep); decided: own.size() int32 of
// scratch; cycles: own-local k or null. The pixel `keep` (global index; -1: none) is never
// corrected. Returns the corrected pixels' own-local indices, in no particular order
// (synchronises the stream).
std::vector<uint32_t> correct_cycles(const DeviceArrays& d, const Window& own, const void* label, int label_bytes,
                                     const float* halo, const uint32_t* halo_label, int32_t* decided, int32_t* cycles,
                                     int64_t keep, cudaStream_t s);

}  // namespace tessera::cuda
