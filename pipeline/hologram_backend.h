// The demodulation of one frame size on one backend (CPU: FFTW, CUDA: cuFFT), behind
// HologramDemodulator (app/hologram_command.h). Engines come from the backend's table
// (backend/backend.h: BackendOps::hologram_engine), chosen once.
#pragma once
#include <cstdint>
#include <memory>

#include "kernels/hologram.h"

namespace tessera {

class HologramEngine {
public:
    virtual ~HologramEngine() = default;
    // Demodulates `intensity` (rows*cols) with `p`, divided by the kept reference field when
    // there is one: phase and, when not null, amplitude (rows*cols each, host memory).
    // Returns the carrier used. Throws std::invalid_argument as tessera::demodulate.
    virtual CarrierPeak run(const HologramParams& p, const float* intensity, float* phase, float* amplitude) = 0;
    // Demodulates `intensity` and keeps its field as the reference divided out of every later
    // run(). Returns the carrier used.
    virtual CarrierPeak keep_as_reference(const HologramParams& p, const float* intensity) = 0;
};

}  // namespace tessera
