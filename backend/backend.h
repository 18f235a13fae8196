// The one backend seam (docs/ARCHITECTURE.md section 5): what the CPU and the CUDA backend do
// differently, for every command, as one function table. A run resolves --backend once
// (resolve_backend) and calls through backend_ops; no other code asks which backend it is.
// The CUDA table is compiled only into the tessera_cuda library (backend/cuda/); a build
// without it links backend/cuda_absent.cpp instead.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_kind.h"
#include "kernels/background.h"
#include "kernels/clahe.h"
#include "kernels/region.h"
#include "kernels/residue.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"
#include "pipeline/chunk_run.h"
#include "pipeline/unwrap_region.h"

namespace tessera {

class HologramEngine;  // pipeline/hologram_backend.h
class FrameLane;       // pipeline/frame_lane.h
struct FrameOptions;   // pipeline/frame_lanes.h

// One rank's window of the background fit (partition/surface_fit.h: fit_surface), on the
// backend's memory: the fit's local results and the subtraction, which rewrites the host z.
class SurfaceBand {
public:
    virtual ~SurfaceBand() = default;
    virtual double max_abs() = 0;
    virtual SurfaceMoments moments(int degree, int zexp) = 0;
    virtual ResidualSums subtract(const SurfaceFit& fit) = 0;
};

struct BackendOps {
    Backend kind;
    const char* name;  // "cpu", "cuda"
    // Usable in this process (CUDA: a GPU is visible).
    bool (*available)();
    // One GPU per rank: makes `requested` (or, when < 0, the node-local rank's) device current
    // and returns it; more ranks on a node than GPUs is an error unless `share`. Throws
    // std::runtime_error with the reason. CPU: nothing to choose, -1.
    int (*select_device)(int local_rank, int local_size, int requested, bool share);
    // pipeline/unwrap_region.h: unwrap_region on this backend's Region; `locks` (may be null)
    // receives what stays page-locked of a's arrays (kernels/region.h HostLocks).
    RegionStats (*unwrap_region)(const RegionArrays& a, const RankGrid& grid, Comm& comm, const UnwrapParams& p,
                                 std::vector<Residue>* residues_out, const std::function<void(const char*)>& stage,
                                 const RegionFill& fill, HostLocks* locks);
    // pipeline/chunked_stages.h: unwrap_chunked on this backend's Region.
    RegionStats (*unwrap_chunked)(const RankGrid& grid, Comm& comm, const UnwrapParams& p, int64_t tile_rows,
                                  bool with_cycles, const ChunkRun& run);
    // Bytes free on the current device (the --gpu-memory-limit default); -1 where the backend
    // keeps nothing on a device.
    int64_t (*device_free_bytes)();
    // pipeline/hologram_backend.h: an engine for rows x cols frames on `device` (-1: current).
    std::unique_ptr<HologramEngine> (*hologram_engine)(int64_t rows, int64_t cols, int device);
    // pipeline/frame_lane.h: one lane's frame chain.
    std::unique_ptr<FrameLane> (*frame_lane)(int64_t rows, int64_t cols, const FrameOptions& opt, int device);
    // The background fit's window over host arrays (z is rewritten by subtract).
    std::unique_ptr<SurfaceBand> (*surface_band)(float* z, const uint8_t* valid, const uint8_t* mask,
                                                 const Window& own, int64_t stride, int64_t H, int64_t W);
    // partition/clahe.h: the collective CLAHE of a float band in host memory, to 8 or 16 bits.
    ClaheRange (*clahe8)(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                         int64_t W, const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride);
    ClaheRange (*clahe16)(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                          int64_t W, const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride);
    // The stages' work is on a device, the host's cores free meanwhile: a streamed run's step 1
    // fills the next chunk beside the work on this one (docs/ARCHITECTURE.md 5.1), a run in one
    // piece makes its output's pages ready (section 7).
    bool host_free_in_stages;
};

// "auto" (CUDA when this tessera has it and a GPU is visible), "cpu" or "cuda"; anything else
// is InputError::everywhere naming --backend.
Backend resolve_backend(const std::string& name);
// The table of `b`. Throws InputError::everywhere (one line) when it cannot run here: CUDA in
// a build without it, or no GPU visible.
const BackendOps& backend_ops(Backend b);
const char* backend_name(Backend b);

// The tables themselves: backend/cpu_backend.cpp, and backend/cuda/cuda_backend.cpp or
// backend/cuda_absent.cpp (null: built without CUDA).
const BackendOps& cpu_backend_ops();
const BackendOps* cuda_backend_ops();

}  // namespace tessera
