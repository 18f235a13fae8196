// Matching phase A's rounds with their state in device memory (kernels/phase_a.h): the CUDA
// backend's PhaseARounds, on the Region's stream. Plain C++ (g++).
#pragma once
#include <cuda_runtime_api.h>

#include <memory>

#include "kernels/phase_a.h"

namespace tessera::cuda {

// The residues, their cell grid and every round's state live on the current device from
// bind() until destruction; a round moves the active count (8 bytes) and the border states
// of export/import across the bus, nothing else.
std::unique_ptr<PhaseARounds> make_device_phase_a(cudaStream_t s);

}  // namespace tessera::cuda
