// The unwrapper's stages on a backend's Region, in order (ARCHITECTURE.md sections 2-5):
// residues, matching, rasterisation, union-find, offset solve, apply. The caller makes the
// Region (its data already uploaded) and calls finish() after any later device stage, so a
// frame pipeline can chain stages on the device (pipeline/frame_lanes.cpp).
#pragma once
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "kernels/ab_switch.h"
#include "kernels/label_width.h"
#include "kernels/lap.h"
#include "kernels/region.h"
#include "partition/comm.h"
#include "partition/global_solve.h"
#include "partition/lake_exchange.h"
#include "partition/matching.h"
#include "partition/mpi_process.h"
#include "partition/rank_grid.h"
#include "pipeline/correct_cycles.h"
#include "pipeline/unwrap_region.h"

namespace tessera {

// Own windows from which the lakes are labelled beside the residues' search (a frame's are not worth a thread).
inline constexpr int64_t kLakesBesideFrom = int64_t{1} << 24;

// Residues, cut clusters and rasterisation (sections 2-3). The lakes come from the host flags,
// which every backend's region was filled from; the cluster rule runs in the backend's form
// (Region::cut_clusters: the same cuts on either).
template <class Region>
MatchStats find_match_and_cut(Region& region, const RankGrid& grid, Comm& comm, int64_t radius, bool far,
                              std::vector<Residue>* residues_out, const std::function<void(const char*)>& stage) {
    // Section 3.1's lakes read only the host flags: where the device finds the residues, they are
    // labelled meanwhile on a thread of the host (0.1-0.2 s at 32768² on the H200's host; MPI
    // from there only where the library allows calls from any thread; TESSERA_LAKES_BESIDE=0: after, A/B).
    std::future<GlobalLakes> labelling;
    if (Region::kHostFreeInStages && grid.own(comm.rank()).size() >= kLakesBesideFrom && !switch_is("TESSERA_LAKES_BESIDE", "0") &&
        (comm.size() == 1 || mpi_calls_from_any_thread()))
        labelling = std::async(std::launch::async, [&a = region.host_arrays(), &grid, &comm] { return GlobalLakes(a, grid, comm); });
    ResidueList res = region.find_residues();
    stage("residues");
    MatchStats ms;
    std::vector<Cut> cuts;
    {
        Lap lap;  // TESSERA_TRACE: the matching's parts around match_residues
        const bool beside = labelling.valid();
        const GlobalLakes lakes = beside ? labelling.get() : GlobalLakes(region.host_arrays(), grid, comm);
        const double labelled = lap.next_ms();
        const LakeView view = lake_view(lakes);
        cuts = match_residues(res, view, grid, radius, comm, ms, &Region::cut_clusters, far);
        if (trace_on())
            std::fprintf(stderr, "tessera: matching: the lakes %s in %.1f ms, match_residues %.1f ms\n",
                         beside ? "waited for" : "labelled", labelled, lap.next_ms());
    }
    stage("matching");
    region.place_cuts(cuts);
    stage("rasterise");
    if (residues_out) residues_out->assign(res.begin(), res.end());
    return ms;
}

// Region: cpu::Region or cuda::Region. `stage(name)` is called after each stage.
template <class Region>
RegionStats run_unwrap_stages(Region& region, const RankGrid& grid, Comm& comm, const UnwrapParams& p,
                              std::vector<Residue>* residues_out, const std::function<void(const char*)>& stage) {
    RegionStats st;
    st.tiles = grid.tiles.count();
    const MatchStats ms = find_match_and_cut(region, grid, comm, p.max_pair_distance, p.far_reach, residues_out, stage);
    st.residues = ms.residues;
    st.pairs = ms.pairs;
    st.ground_cuts = ms.ground_cuts;
    st.lake_joins = ms.lake_joins;
    st.lake_steps = ms.lake_steps;
    st.shared = ms.shared;

    const RegionComponents comps = region.union_find();
    stage("union_find");

    const GlobalSolution g = solve_global(comps, grid, comm, p.min_component_size, p.reference,
                                          [&](const Window& w) { return region.strip(w); });
    st.conflicts = comm.sum(comps.conflicts) + g.conflicts;
    st.components = g.components;
    st.labelled = g.labelled;
    st.largest = g.largest;
    stage("offset_solve");

    st.label_bytes = p.narrow_labels ? label_bytes_for(static_cast<uint64_t>(g.labelled)) : 4;  // alike on every rank
    // Section 4.1: the other ranks' final u around the own window, before any pixel is corrected.
    const bool correcting = cycle_correction_on(p);
    RingHalo ring;
    if (correcting)
        ring = ring_from_states(grid, comm, [&](const Window& w) { return region.strip(w); },
                                Solution{comps.records, g.offset, g.label});
    region.apply(ComponentAssignment{comps.records, g.offset, g.label, st.label_bytes});
    stage("apply");
    if (correcting) {
        const Window own = grid.own(comm.rank());
        st.corrected = comm.sum(region.correct_cycles(
            ring.band(own, own, ring.above, ring.above_label, ring.below, ring.below_label), correction_keep(p, grid.tiles.W)));
        stage("correct");
    }
    st.bytes_sent = comm.bytes_sent();
    return st;
}

}  // namespace tessera
