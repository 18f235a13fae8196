#include "pipeline/result_attributes.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace tessera {

void add_region_stats(UnwrapReport& rep, const RegionStats& st) {
    rep.tiles = st.tiles;
    rep.residues = st.residues;
    rep.lake_joins = st.lake_joins;
    rep.lake_steps = st.lake_steps;
    rep.shared = st.shared;
    rep.pairs = st.pairs;
    rep.ground_cuts = st.ground_cuts;
    rep.components = st.components;
    rep.labelled = st.labelled;
    rep.largest = st.largest;
    rep.conflicts = st.conflicts;
    rep.corrected = st.corrected;
}

std::vector<Attribute> result_attributes(const UnwrapOptions& opt, const std::string& input, const UnwrapReport& rep,
                                         const RasterInfo& info) {
    return {
        {"software", std::string("tessera ") + TESSERA_VERSION},
        {"algorithm", std::string("residues + charge-balanced cut clusters with lakes as ground + weighted union-find (docs/ARCHITECTURE.md)")},
        {"input", input},
        {"coherence", opt.coherence},
        {"mask", opt.mask},
        {"band", int64_t{opt.band}},
        {"coherence_band", int64_t{opt.coherence.empty() ? 0 : std::max(1, opt.coherence_band)}},  // 0: none
        {"mask_band", int64_t{opt.mask.empty() ? 0 : std::max(1, opt.mask_band)}},
        {"rows", rep.rows},
        {"cols", rep.cols},
        {"tile_size", rep.tile_size > 0 ? rep.tile_size : opt.tile_size},
        {"backend", std::string(opt.backend == Backend::kCuda ? "cuda" : "cpu")},
        {"compress_phase", int64_t{opt.compress_phase}},
        {"cut_radius", opt.max_pair_distance},
        {"cycle_correction", int64_t{opt.correct_cycles}},
        {"far_reach", int64_t{opt.far_reach}},
        {"guide_window", int64_t{rep.guide_window}},  // the guide taken, section 2.1; 0: none
        {"guide_auto", int64_t{opt.guide_window == kGuideAuto}},  // taken by the census (section 2.2)
        {"census_plaquettes", rep.census.plaquettes},
        {"census_residues", rep.census.residues},
        {"min_component_size", opt.min_component_size},
        {"min_coherence", opt.min_coherence},
        {"reference_row", opt.reference ? opt.reference->first : int64_t{-1}},
        {"reference_col", opt.reference ? opt.reference->second : int64_t{-1}},
        {"REF_Y", opt.reference ? opt.reference->first : int64_t{-1}},  // MintPy's names; -1: none
        {"REF_X", opt.reference ? opt.reference->second : int64_t{-1}},
        {"reference_phase", rep.reference_phase},
        {"ranks", rep.ranks},
        {"rank_grid", std::to_string(rep.rank_rows) + "x" + std::to_string(rep.rank_cols)},
        {"threads_per_rank", int64_t{omp_get_max_threads()}},
        {"tiles", rep.tiles},
        {"valid_pixels", rep.valid},
        {"residues", rep.residues},
        {"lake_joins", rep.lake_joins},
        {"lake_steps", rep.lake_steps},
        {"shared_residues", rep.shared},
        {"pair_cuts", rep.pairs},
        {"ground_cuts", rep.ground_cuts},
        {"components", rep.components},
        {"labelled_components", rep.labelled},
        {"largest_component", rep.largest},
        {"conflicts", rep.conflicts},
        {"corrected_pixels", rep.corrected},
        {"bytes_sent_max_rank", rep.bytes_sent_max},
        {"bytes_sent_total", rep.bytes_sent_total},
        {"geotransform", std::vector<double>(info.geotransform.begin(), info.geotransform.end())},
        {"has_geotransform", int64_t{info.has_geotransform}},
        {"projection", info.projection_wkt},
        {"nodata", std::nan("")},
    };
}

}  // namespace tessera
