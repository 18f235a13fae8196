// One lane of run_frames (pipeline/frame_lanes.h): the backend's frame chain, made once per lane.
#pragma once
#include <memory>

#include "pipeline/frame_lanes.h"

namespace tessera {

class FrameLane {
public:
    virtual ~FrameLane() = default;
    // Processes frame `index` and calls sink with the result.
    virtual void process(int64_t index, const FrameSource& source, const FrameSink& sink) = 0;
};

// The CPU backend's lane (the CUDA one: backend/cuda/frame_lane_cuda.h); both through
// BackendOps::frame_lane.
std::unique_ptr<FrameLane> make_cpu_frame_lane(int64_t rows, int64_t cols, const FrameOptions& opt);

}  // namespace tessera
