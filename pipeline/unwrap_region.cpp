#include "pipeline/unwrap_region.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "kernels/cpu/region.h"
#include "pipeline/unwrap_stages.h"
#ifdef TESSERA_HAVE_CUDA
#include "kernels/cuda/region.h"
#endif

namespace tessera {

namespace {

// The backend's Region over a's arrays, filled by `fill` first: a backend that can take rows
// while they are read (cuda::Region) gets the filler, the other one the finished arrays.
template <class Region>
Region make_region(const RegionArrays& a, const Window& own, const TileGrid& tiles, const RegionFill& fill) {
    if constexpr (std::is_constructible_v<Region, const RegionArrays&, const Window&, const TileGrid&, const RegionFill&>) {
        if (fill) return Region(a, own, tiles, fill);
    } else {
        if (fill) fill([](int64_t, int64_t) {});
    }
    return Region(a, own, tiles);
}

// Makes the backend's Region, runs the stages, downloads.
template <class Region>
RegionStats run_stages(const RegionArrays& a, const RankGrid& grid, Comm& comm, const UnwrapParams& p,
                       std::vector<Residue>* residues_out, const std::function<void(const char*)>& stage,
                       const RegionFill& fill) {
    Region region = make_region<Region>(a, grid.own(comm.rank()), grid.tiles, fill);
    stage("upload");  // the CUDA backend copies phase and flags to the device here
    const RegionStats st = run_unwrap_stages(region, grid, comm, p, residues_out, stage);
    region.finish();
    stage("download");
    return st;
}

}  // namespace

bool cuda_backend_available() {
#ifdef TESSERA_HAVE_CUDA
    return cuda::device_count() > 0;
#else
    return false;
#endif
}

int select_cuda_device(int local_rank, int local_size, int requested, bool share) {
#ifdef TESSERA_HAVE_CUDA
    const int n = cuda::device_count();
    if (n == 0) throw std::runtime_error("--backend cuda: no CUDA device is visible");
    if (requested >= n)
        throw std::runtime_error("--device " + std::to_string(requested) + ": only " + std::to_string(n) +
                                 " CUDA device(s) visible");
    if (requested < 0 && local_size > n && !share)
        throw std::runtime_error(std::to_string(local_size) + " ranks on this node but " + std::to_string(n) +
                                 " GPU(s): use fewer ranks per node, or --share-gpus");
    return cuda::select_device(requested >= 0 ? requested : local_rank);
#else
    (void)local_rank, (void)local_size, (void)requested, (void)share;
    throw std::runtime_error("this tessera was built without the CUDA backend (TESSERA_CUDA=OFF)");
#endif
}

RegionStats unwrap_region(const RegionArrays& a, const RankGrid& grid, Comm& comm, const UnwrapParams& p,
                          std::vector<Residue>* residues_out, const std::function<void(const char*)>& stage,
                          const RegionFill& fill) {
    // The backend is chosen here, once (ARCHITECTURE.md section 5).
    switch (p.backend) {
        case Backend::kCpu:
            return run_stages<cpu::Region>(a, grid, comm, p, residues_out, stage, fill);
        case Backend::kCuda:
#ifdef TESSERA_HAVE_CUDA
            return run_stages<cuda::Region>(a, grid, comm, p, residues_out, stage, fill);
#else
            throw std::runtime_error("this tessera was built without the CUDA backend (TESSERA_CUDA=OFF)");
#endif
    }
    throw std::logic_error("unknown backend");
}

RegionStats unwrap_image(const RegionArrays& a, int64_t tile_size, const UnwrapParams& p,
                         const std::function<void(const char*)>& stage) {
    Comm self(MPI_COMM_SELF);
    RankGrid grid;
    grid.tiles = TileGrid(a.H, a.W, tile_size);
    return unwrap_region(a, grid, self, p, nullptr, stage);
}

}  // namespace tessera
