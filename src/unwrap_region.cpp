#include "src/unwrap_region.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/cpu/region.h"
#include "partition/matching.h"
#include "partition/offset_solve.h"
#include "partition/tile_grid.h"
#ifdef TESSERA_HAVE_CUDA
#include "kernels/cuda/region.h"
#endif

namespace tessera {

namespace {

// The stages in order (ARCHITECTURE.md sections 2-4); Region is the backend.
template <class Region>
RegionStats run_stages(const RegionArrays& a, const UnwrapParams& p, std::vector<Residue>* residues_out,
                       const std::function<void(const char*)>& stage) {
    RegionStats st;
    const TileGrid grid(a.H, a.W, p.tile_size);
    st.tiles = grid.count();
    Region region(a, Window{0, 0, a.H, a.W}, grid);

    std::vector<Residue> res = region.find_residues();
    st.residues = static_cast<int64_t>(res.size());
    stage("residues");

    MatchStats ms;
    const std::vector<Cut> cuts = match_residues(res, grid, p.max_pair_distance, ms);
    st.rounds = ms.rounds;
    st.leftovers = ms.leftovers;
    st.pairs = ms.phase_a_pairs + ms.phase_b_pairs;
    st.ground_cuts = ms.phase_a_ground + ms.phase_b_ground;
    stage("matching");

    region.place_cuts(cuts);
    stage("rasterise");

    RegionComponents comps = region.union_find();
    stage("union_find");

    OffsetSolution sol = solve_offsets(comps.records, comps.constraints, p.min_component_size);
    st.conflicts = comps.conflicts + sol.conflicts;
    st.components = sol.components;
    st.labelled = sol.labelled;
    st.largest = sol.largest;
    if (p.reference) {
        // --reference: shift that pixel's component so k = 0 there (section 4).
        const NodeValue nv = region.node(p.reference->first, p.reference->second);
        const auto& recs = comps.records;
        const size_t ri = static_cast<size_t>(
            std::lower_bound(recs.begin(), recs.end(), nv.root,
                             [](const ComponentRecord& x, int64_t v) { return x.root < v; }) - recs.begin());
        const int64_t groot = sol.global_root[ri];
        const int32_t kref = nv.k + sol.offset[ri];
        for (size_t i = 0; i < recs.size(); ++i)
            if (sol.global_root[i] == groot) sol.offset[i] -= kref;
    }
    stage("offset_solve");

    region.apply(ComponentAssignment{comps.records, sol.offset, sol.label});
    region.finish();
    stage("apply");
    if (residues_out) *residues_out = std::move(res);
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

RegionStats unwrap_region(const RegionArrays& a, const UnwrapParams& p, std::vector<Residue>* residues_out,
                          const std::function<void(const char*)>& stage) {
    // The backend is chosen here, once (ARCHITECTURE.md section 5).
    switch (p.backend) {
        case Backend::kCpu:
            return run_stages<cpu::Region>(a, p, residues_out, stage);
        case Backend::kCuda:
#ifdef TESSERA_HAVE_CUDA
            return run_stages<cuda::Region>(a, p, residues_out, stage);
#else
            throw std::runtime_error("this tessera was built without the CUDA backend (TESSERA_CUDA=OFF)");
#endif
    }
    throw std::logic_error("unknown backend");
}

}  // namespace tessera
