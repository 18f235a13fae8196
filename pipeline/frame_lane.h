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

std::unique_ptr<FrameLane> make_cpu_frame_lane(int64_t rows, int64_t cols, const FrameOptions& opt);
// Throws std::runtime_error when built without CUDA. `device`: the CUDA device of the lane.
std::unique_ptr<FrameLane> make_cuda_frame_lane(int64_t rows, int64_t cols, const FrameOptions& opt, int device);

}  // namespace tessera
