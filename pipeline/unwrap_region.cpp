#include "pipeline/unwrap_region.h"

#include "backend/backend.h"

namespace tessera {

RegionStats unwrap_region(const RegionArrays& a, const RankGrid& grid, Comm& comm, const UnwrapParams& p,
                          std::vector<Residue>* residues_out, const std::function<void(const char*)>& stage,
                          const RegionFill& fill) {
    return backend_ops(p.backend).unwrap_region(a, grid, comm, p, residues_out, stage, fill, nullptr);  // section 5
}

RegionStats unwrap_image(const RegionArrays& a, int64_t tile_size, const UnwrapParams& p,
                         const std::function<void(const char*)>& stage) {
    Comm self(MPI_COMM_SELF);
    RankGrid grid;
    grid.tiles = TileGrid(a.H, a.W, tile_size);
    return unwrap_region(a, grid, self, p, nullptr, stage);
}

}  // namespace tessera
