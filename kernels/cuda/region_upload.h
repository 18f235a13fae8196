// A Region's inputs onto the device: the host phase (whole, or by the rows a fill reports
// while it is still reading) and flags (only where any is set, on a copy stream beside the
// phase), or a frame's phase and flags already on the device.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/cuda/host_staging.h"
#include "kernels/cuda/kernels.h"
#include "kernels/region.h"
#include "kernels/types.h"

namespace tessera::cuda {

// Runs `fill` over a's host arrays on this thread while a thread of its own calls `allocate` (the
// Region's device arrays, on s; it returns the device phase), page-locks the inputs (staging.
// pin_inputs) and then queues the phase rows fill reports (from its threads, in any order) onto
// the device phase on s as they come; then the rows it did not report. An exception from fill
// propagates once that thread is done.
void upload_filled(const RegionFill& fill, const RegionArrays& a, HostStaging& staging,
                   const std::function<float*()>& allocate, cudaStream_t s);

// Queues a scene's flags onto d_flags (padded to 4 bytes) on the copy stream cs, behind their
// allocation's place in s's order, and records flags_up on cs after them. Returns whether every
// flag is 0: then none crosses the bus and the device clears them instead.
bool upload_flags(const RegionArrays& a, uint8_t* d_flags, cudaStream_t s, cudaStream_t cs, cudaEvent_t flags_up);

// A frame's phase (unless in_place: d.phase is it) and flags (null: every flag 0) from the
// device in s's order into d, and the flags into a.flags too (the lakes are read from the host's;
// ARCHITECTURE.md section 3.1); synchronises where flags came. Returns whether every flag is 0.
bool copy_device_input(const RegionArrays& a, const DeviceArrays& d, const float* phase, bool in_place,
                       const uint8_t* flags, cudaStream_t s);

}  // namespace tessera::cuda
