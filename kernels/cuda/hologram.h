// Off-axis hologram demodulation, CUDA backend (cuFFT): the twin of kernels/hologram.h's
// FFTW plan, with the same method, coordinates, carrier rule, radii and window
// (kernels/hologram.h has the method):
//
//   upload -> forward R2C 2-D FFT -> carrier (detected on the device: the largest |F|^2 =
//   re*re + im*im in float, right half-plane outside the DC radius, ties to the smallest
//   shifted index, as find_carrier; or given) -> sideband disc (circular or Hann, radius
//   tessera::filter_radius's value, computed on the device with the same double operations)
//   times 1/(rows*cols), moved to the zero frequency -> inverse C2C 2-D FFT -> optional
//   division by a reference field kept on the device -> phase (tessera::phase_of, same
//   operations: the same field gives the same phase bits) -> optional amplitude.
//
// Inverse transform: a full 2-D C2C (not the CPU's band trick). The band trick saves about
// one read and write of the complex field, but its column transforms are planned for the
// band's width 2*floor(radius)+1, which depends on the detected carrier: it would need the
// carrier on the host (a stream synchronisation per frame, stalling the host thread that
// feeds other streams) or a plan per width. The full C2C keeps the whole frame on the
// device with no synchronisation and one plan per frame size.
//
// Bits: cuFFT is not FFTW. The spectrum, hence the field and the phase, differ from the CPU
// backend's in the last bits (tests/gpu/test_cuda_hologram.cpp bounds the difference:
// 1e-4 rad RMS, 1e-3 rad max on the test's holograms; the carrier found is the same).
// ARCHITECTURE.md's bit-identity promise is about unwrapping a given wrapped phase; it does
// not extend to a phase demodulated by different FFT libraries. On the GPU itself the
// result is deterministic: cuFFT plans are chosen by heuristics from the sizes (no timing),
// no kernel here uses floating-point atomics, so one plan (or a fresh plan of the same size
// on the same GPU and cuFFT version) gives the same bits for the same frame, run to run and
// frame to frame (asserted by the tests).
//
// Streams: everything a plan does is enqueued on its stream (its own, or one given at
// construction). The device-resident API never synchronises the host; the carrier (which
// the device both finds and uses) comes back to the host only when asked for
// (frame_info(): one 40-byte copy already enqueued with the frame, then a stream
// synchronisation). To run frames concurrently, use one plan per stream (e.g. one per host
// thread, or several driven round-robin from one thread: upload, enqueue, download never
// block on pinned host memory). A plan may be used by one host thread at a time.
//
// Devices: a plan belongs to the device that was current at construction (or the one
// given); every member function makes it current for its duration and restores the
// caller's device, so plans of several GPUs can be driven from one thread.
//
// Compiled by nvcc (C++17) and g++ (C++20): C++17 headers only, no CUDA kernels here.
#pragma once
#include <cuda_runtime_api.h>

#include <complex>
#include <cstdint>
#include <memory>

#include "kernels/hologram.h"

namespace tessera::cuda {

// What the device found for the last frame of a plan (HologramPlan::frame_info).
struct HologramFrameInfo {
    CarrierPeak carrier;       // row, col (FFT-shifted) and |F| there, as tessera::demodulate returns
    double filter_radius = 0;  // the radius used: equals tessera::filter_radius(p, rows, cols, carrier)
};

class HologramPlan {
public:
    // cuFFT plans (R2C forward, C2C inverse, one shared work area) and device buffers for
    // rows x cols frames on `device` (-1: the current device). `stream`: enqueue everything
    // there (not owned; it must belong to that device); null: the plan creates its own
    // non-blocking stream. Throws std::invalid_argument below 2x2 or above 2^31-1 pixels
    // (tessera::HologramPlan's limits), std::runtime_error on a CUDA or cuFFT failure.
    // Device memory: 4 B (intensity) + ~4 B (half spectrum) + 8 B (field) + 4 B (phase) per
    // pixel, + cuFFT's work area; + 4 B amplitude and 8 B reference when used.
    HologramPlan(int64_t rows, int64_t cols, cudaStream_t stream = nullptr, int device = -1);
    ~HologramPlan();  // waits for the plan's stream, then frees everything
    HologramPlan(HologramPlan&&) noexcept;
    HologramPlan& operator=(HologramPlan&&) noexcept;
    HologramPlan(const HologramPlan&) = delete;
    HologramPlan& operator=(const HologramPlan&) = delete;

    int64_t rows() const;
    int64_t cols() const;
    int device() const;
    cudaStream_t stream() const;

    // --- device-resident API: enqueued on stream(), no host synchronisation -----------------

    // The next frame's intensity, rows*cols floats (row-major) in device memory: upload()
    // fills it, or a kernel on stream() may write it directly.
    float* device_intensity();
    // Asynchronous copy of a host frame into device_intensity(). With page-locked host memory
    // (cudaMallocHost / cudaHostRegister) the call returns at once and the buffer must stay
    // unchanged until the stream has passed this point; pageable memory works too (the copy
    // is then staged and the call returns once the data is out of the buffer).
    void upload(const float* host_intensity);
    // Demodulates the frame in device_intensity() with `p` (carrier given or detected, radii,
    // window). `divide_by_reference`: the field is divided by the kept reference (see below).
    // `amplitude`: also compute |field| (device_amplitude()). Results, valid in stream order:
    // device_field(), device_phase(), device_amplitude(), frame_info(). Throws (before
    // enqueuing anything) std::invalid_argument, as tessera::demodulate, for a given carrier
    // outside the spectrum or a DC radius that leaves no bin to search; std::logic_error for
    // divide_by_reference without a reference. The first call with `amplitude` allocates.
    void enqueue(const HologramParams& p, bool divide_by_reference = false, bool amplitude = false);
    // rows*cols complex field of the last enqueue() (scaled, divided if asked), row-major.
    // Reused by the next enqueue(): a consumer on another stream must wait for an event
    // recorded on stream() after enqueue() and finish before the next enqueue() runs.
    float2* device_field();
    // rows*cols wrapped phase in [-pi, pi) of the last enqueue() (same reuse rule).
    float* device_phase();
    // rows*cols |field| of the last enqueue() with `amplitude`; null before the first such call.
    float* device_amplitude();
    // Asynchronous copies of the last frame's results into host buffers (each may be null;
    // amplitude only after an enqueue() with `amplitude`). Page-locked memory for a truly
    // asynchronous copy; read the buffers after a synchronisation (frame_info() does one).
    void download(float* phase, float* amplitude = nullptr, std::complex<float>* field = nullptr);

    // The reference field divided out by enqueue(..., true): kept in device memory.
    // keep_field_as_reference(): the field of the last enqueue() (enqueued device copy);
    // set_reference(): a host field of rows*cols (e.g. from the CPU backend or a file), copied
    // before it returns (it synchronises the stream); clear_reference() also synchronises.
    void keep_field_as_reference();
    void set_reference(const std::complex<float>* host_field);
    void clear_reference();
    bool has_reference() const;

    // --- host side ---------------------------------------------------------------------------

    // Synchronises the stream, then the carrier and filter radius of the last enqueue().
    // Throws std::invalid_argument when no carrier was found (every searched |F|^2 NaN: the
    // frame holds infinities or NaN), std::logic_error before any enqueue().
    HologramFrameInfo frame_info();
    // Waits for everything enqueued on the plan's stream.
    void synchronize();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Mirrors tessera::demodulate: one frame from host memory, field rows*cols into host
// `field_out`. Returns the carrier used. Synchronises. Throws as HologramPlan::enqueue.
CarrierPeak demodulate(HologramPlan& plan, const HologramParams& p, const float* intensity,
                       std::complex<float>* field_out);

// One frame host to host as `tessera hologram` needs it: phase (and amplitude when not null)
// into host buffers of rows*cols, divided by the plan's reference when it has one.
// Returns the carrier and radius used. Synchronises.
HologramFrameInfo demodulate_phase(HologramPlan& plan, const HologramParams& p, const float* intensity, float* phase,
                                   float* amplitude = nullptr);

}  // namespace tessera::cuda
