// The demodulation of one frame size on one backend (CPU: FFTW, CUDA: cuFFT), behind
// HologramDemodulator (app/hologram_command.h). The backend is chosen once, when the engine
// is made (ARCHITECTURE.md section 5: the driver never branches on the backend).
#pragma once
#include <cstdint>
#include <memory>

#include "kernels/hologram.h"
#include "pipeline/unwrap_region.h"

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

// Throws InputError::everywhere (one line) when `backend` cannot run in this process: CUDA
// asked for in a build without it, or no GPU visible.
void check_hologram_backend(Backend backend);

// An engine for rows x cols frames. kCuda: on CUDA device `device` (-1: the current one).
// Throws std::invalid_argument for a frame below 2x2, std::runtime_error on a CUDA failure.
std::unique_ptr<HologramEngine> make_hologram_engine(Backend backend, int64_t rows, int64_t cols, int device);

}  // namespace tessera
