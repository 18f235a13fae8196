// The CUDA backend's frame lane (backend/cuda/frame_lane_cuda.cpp).
#pragma once
#include <memory>

#include "pipeline/frame_lane.h"

namespace tessera {

// `device`: the lane's CUDA device (-1: the current one).
std::unique_ptr<FrameLane> make_cuda_frame_lane(int64_t rows, int64_t cols, const FrameOptions& opt, int device);

}  // namespace tessera
