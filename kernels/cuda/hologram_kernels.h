// Device kernels of the CUDA hologram demodulation (kernels/cuda/hologram.cu), host
// launchers over device memory, everything enqueued on the given stream. The plan that
// strings them together with cuFFT is kernels/cuda/hologram.h. C++17 (nvcc and g++).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tessera::cuda {

// The carrier of one frame, written by the device (carrier_finish) and copied back to a
// pinned host slot after every frame. 8-byte fields first: the same layout on both sides.
struct DeviceCarrier {
    unsigned long long key = 0;  // detection: (bits of |F|^2) << 32 | (2^32-1 - shifted index); 0 = none
    int64_t row = -1, col = -1;  // FFT-shifted bin, -1 when no bin was found
    double radius = 0;           // sideband filter radius (tessera::filter_radius)
    float re = 0, im = 0;        // F at the carrier (unshifted, unscaled)
};

// Largest |F|^2 of the half spectrum `half` (rows x (cols/2+1), unshifted) over the right
// half-plane outside the DC radius (d^2 <= dc2 excluded), as one atomicMax of
// the 64-bit key into *key (which the caller zeroes first). |F|^2 = re*re + im*im in float
// (std::norm); ties: the smallest shifted index; NaN never wins (tessera::find_carrier).
void carrier_search(const float2* half, int64_t rows, int64_t cols, double dc2, unsigned long long* key,
                    cudaStream_t s);

// One thread: the carrier of the frame into *c: decoded from c->key when `detected`, else
// (given_row, given_col); its spectrum value, and the filter radius
// (sideband_radius(given_radius, ...)).
void carrier_finish(const float2* half, int64_t rows, int64_t cols, bool detected, int64_t given_row,
                    int64_t given_col, double given_radius, DeviceCarrier* c, cudaStream_t s);

// The full spectrum (rows x cols, unshifted) of the sideband: the disc of c->radius bins
// around the carrier (flat or Hann), times `scale`, moved to the zero frequency; zero
// elsewhere (every element written). All zero when c->row < 0.
void sideband(const float2* half, const DeviceCarrier* c, int64_t rows, int64_t cols, float scale, bool hann,
              float2* spectrum, cudaStream_t s);

// Per pixel: field /= ref when ref is given (in place, as tessera::divide_by_reference),
// phase = phase_of(im, re), amplitude = |field| when amplitude is given (hypotf: within an
// ulp or two of the CPU's std::abs, not bit-identical).
void finish_field(float2* field, const float2* ref, float* phase, float* amplitude, int64_t n, cudaStream_t s);

}  // namespace tessera::cuda
