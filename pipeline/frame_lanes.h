// Batches of frames on lanes (issue 6 item 4): video-rate microscopy, many 1-4 megapixel
// off-axis holograms, each taken hologram -> wrapped phase -> unwrapped phase -> background-free
// phase in memory. A lane is a host thread with its own plans and buffers, made once and reused
// for every frame it takes; on the CUDA backend it also owns a CUDA stream, its buffers are
// page-locked and the whole chain stays on the device (cuFFT demodulation, the unwrapper's
// stages, the background fit) until the unwrapped phase and labels come back. Several lanes
// keep the GPU busy while each one's host side (matching rounds, offset solve) waits.
// A frame's result depends on the frame and the options only, never on the lanes or the order.
#pragma once
#include <cstdint>
#include <functional>

#include "kernels/background.h"
#include "kernels/hologram.h"
#include "pipeline/unwrap_region.h"

namespace tessera {

struct FrameOptions {
    HologramParams hologram;
    UnwrapParams unwrap;          // unwrap.backend picks the lanes' backend, once
    int64_t tile_size = 512;
    int background_degree = 2;    // < 0: keep the background
    int lanes = 1;                // frames in flight (host threads; CUDA: one stream each)
    // Stop after demodulation (`tessera hologram`): FrameView.u is the wrapped phase in
    // [-pi, pi), label is null, stats and fit are empty.
    bool demodulate_only = false;
    bool amplitude = false;       // with demodulate_only: FrameView.amplitude = |field| too
    // The sink runs on the thread that called run_frames, one frame at a time, while the frame's
    // lane waits: for sinks that make MPI calls or use a library that is not thread-safe (HDF5).
    bool sink_on_caller = false;
};

// One finished frame, valid during the sink call (the arrays are the lane's own buffers).
struct FrameView {
    int64_t index = 0, rows = 0, cols = 0;
    const float* u = nullptr;         // rows*cols unwrapped (background-free) phase, NaN at invalid
    const uint32_t* label = nullptr;  // rows*cols connected components, 0 = none (null: demodulate_only)
    const float* amplitude = nullptr; // rows*cols |field| (demodulate_only with amplitude), else null
    CarrierPeak carrier;
    RegionStats stats;
    SurfaceFit fit;                   // degree -1 coefficients empty when not fitted
};

// Supplies frame `index`: fills `buffer` (rows*cols floats, the lane's, page-locked on CUDA)
// and returns it, or returns a pointer to rows*cols floats of its own that stay valid until
// the frame's sink call, or returns null to skip the frame (no sink call; the source keeps
// the reason, e.g. an unreadable file, and the lane goes on with its next frame).
using FrameSource = std::function<const float*(int64_t index, float* buffer)>;
using FrameSink = std::function<void(const FrameView&)>;

// Frames 0..n-1, all rows x cols, over opt.lanes lanes (frame i on lane i % lanes, in order
// within a lane). The source is called from the lane threads, concurrently for different
// frames; so is the sink, unless opt.sink_on_caller. The first error (lowest frame index,
// source, chain or sink) is rethrown after every lane has stopped; frames after a failed one
// on the same lane are not processed.
void run_frames(int64_t n, int64_t rows, int64_t cols, const FrameOptions& opt, const FrameSource& source,
                const FrameSink& sink);

}  // namespace tessera
