// unwrap_region on one backend's Region type: make the Region (filling it as it listens, for
// a backend that can take rows while they are read), run the stages, download, and hand the
// host arrays' page-locking to the caller where it asks (`locks`, else undone here). Each
// backend's table (backend/) instantiates it once.
#pragma once
#include <type_traits>

#include "pipeline/unwrap_stages.h"

namespace tessera {

template <class Region>
Region make_region(const RegionArrays& a, const Window& own, const TileGrid& tiles, const RegionFill& fill) {
    if constexpr (std::is_constructible_v<Region, const RegionArrays&, const Window&, const TileGrid&, const RegionFill&>) {
        if (fill) return Region(a, own, tiles, fill);
    } else {
        if (fill) fill([](int64_t, int64_t) {});
    }
    return Region(a, own, tiles);
}

template <class Region>
RegionStats region_stages(const RegionArrays& a, const RankGrid& grid, Comm& comm, const UnwrapParams& p,
                          std::vector<Residue>* residues_out, const std::function<void(const char*)>& stage,
                          const RegionFill& fill, HostLocks* locks) {
    Region region = make_region<Region>(a, grid.own(comm.rank()), grid.tiles, fill);
    stage("upload");  // the CUDA backend copies phase and flags to the device here
    const RegionStats st = run_unwrap_stages(region, grid, comm, p, residues_out, stage);
    region.finish();
    if constexpr (requires { region.take_host_locks(); }) {
        if (locks) *locks = region.take_host_locks();
    }
    stage("download");
    return st;
}

}  // namespace tessera
