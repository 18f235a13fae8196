// Test and bench support: the residue set that section 3's rule sees for a whole synthetic
// scene on one rank (residues, their corner lakes), as partition/matching.cpp hands it to
// cut_clusters when one rank holds the image.
#pragma once
#include <cstdint>
#include <vector>

#include "app/synth.h"
#include "kernels/cpu/region.h"
#include "kernels/cut_clusters.h"
#include "partition/comm.h"
#include "partition/lake_exchange.h"
#include "partition/matching.h"
#include "partition/rank_grid.h"
#include "tests/support/scene_input.h"

namespace tessera::testing {

// Pixels below `min_coherence` (0: none) are low-coherence, so the lakes hold them too.
inline std::vector<ClusterResidue> scene_cluster_residues(const SynthScene& s, int64_t tile = 512, float min_coherence = 0.0f) {
    SceneInput in = scene_input(s, min_coherence);
    std::vector<uint32_t> label(in.phase.size());
    const Window all{0, 0, in.H, in.W};
    const RegionArrays a{in.H, in.W, all, in.phase.data(), in.flags.data(), label.data(), nullptr};
    const TileGrid tiles(in.H, in.W, tile);
    const RankGrid grid = make_rank_grid(tiles, 1, "", "scene");
    cpu::Region region(a, all, tiles);
    const auto res = region.find_residues();
    Comm comm = Comm::alone();
    const GlobalLakes lakes(region.host_arrays(), grid, comm);
    const LakeView view = lake_view(lakes);
    std::vector<ClusterResidue> out(res.size());
#pragma omp parallel for schedule(static, 4096)
    for (int64_t i = 0; i < static_cast<int64_t>(res.size()); ++i) {
        bool reaches_out = false;
        out[static_cast<size_t>(i)] = with_touching_lakes(res[static_cast<size_t>(i)], view, in.H, in.W, reaches_out);
    }
    return out;
}

}  // namespace tessera::testing
