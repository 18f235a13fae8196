// The unwrap driver: read, residues, matching, cuts, union-find, offset solve,
// apply, write (ARCHITECTURE.md sections 2-4 and 7).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "io/raster_reader.h"
#include "io/result_sink.h"
#include "kernels/residue_census.h"
#include "pipeline/chunk_plan.h"
#include "pipeline/unwrap_region.h"

namespace tessera {
class PhaseSource;    // io/phase_source.h
struct MemoryResult;  // io/result_sink.h
}

namespace tessera {

inline constexpr int kMaxGuideWindow = 99;  // --guide-window's largest side
inline constexpr int kGuideAuto = -1;       // --guide-window auto: the census decides (section 2.2)

struct UnwrapOptions {
    std::string input, output;
    std::string coherence, mask, geotiff;  // empty = none
    std::string quicklook;                 // PNG; empty = none
    std::string conncomp_geotiff;          // /connected_components as a GeoTIFF; empty = none
    std::string dolphin;                   // PREFIX of dolphin's PREFIX.unw.tif, PREFIX.unw.conncomp.tif; empty = none
    bool overviews = false;                // internal overviews in every GeoTIFF written
    int band = 1;
    // Bands of the coherence and mask rasters; 0: the raster's only band (several: refused,
    // io/raster_reader.h auxiliary_band).
    int coherence_band = 0, mask_band = 0;
    int64_t tile_size = 512;
    bool tile_size_given = false;  // --tile-size given: else halved to fit the ranks (partition/rank_grid.h)
    int64_t max_pair_distance = 16;  // --cut-radius
    bool correct_cycles = true;      // not --no-cycle-correction (section 4.1)
    bool far_reach = true;           // not --no-far-reach (section 3.6)
    // --guide-window N: unwrap the N x N guide (section 2.1); 0 or 1: none; kGuideAuto: 5 or none,
    // as the residue census says (section 2.2).
    int guide_window = kGuideAuto;
    std::optional<std::pair<int64_t, int64_t>> reference;
    int64_t min_component_size = 100;
    double min_coherence = 0.0;
    int compress_phase = 0;
    std::string rank_grid;  // "PxQ", empty = automatic
    Backend backend = Backend::kCpu;
    int device = -1;          // CUDA device; -1 = the node-local rank's
    bool share_gpus = false;  // allow more ranks than GPUs on a node
    // Bytes a rank may hold on the host and on its GPU (section 5.1); -1: what the node has.
    int64_t memory_limit = -1, gpu_memory_limit = -1;
    int64_t chunk_rows = 0;  // > 0: chunks of this many rows (whole tiles) whatever the limits (--chunk-rows)
    // A directory for a streamed run's scratch (--scratch; section 5.1): the third pass reads what the
    // second wrote there instead of the inputs. Empty: none.
    std::string scratch;
    bool save_cycles = false, save_residues = false, save_cuts = false;
    bool quiet = false;
    bool overwrite = false;  // replace existing regular output files (--overwrite)
};

// What a run of `opt` on `ranks` ranks over an input like `info` asks of its layout
// (pipeline/chunk_plan.h), its limits left unset: what `tessera unwrap` plans and `tessera
// plan` prints.
PlanRequest plan_request(const UnwrapOptions& opt, const RasterInfo& info, int ranks);
// The tile side a run of `ranks` ranks takes: --tile-size when given, else tile_for_ranks.
int64_t run_tile_size(const UnwrapOptions& opt, const RasterInfo& info, int ranks);

struct StageTime {
    std::string stage;
    double seconds;
};

struct UnwrapReport {
    int64_t rows = 0, cols = 0, valid = 0;
    int64_t residues = 0, lake_joins = 0, lake_steps = 0, shared = 0;
    int64_t pairs = 0, ground_cuts = 0;
    int64_t components = 0, labelled = 0, largest = 0;
    int64_t conflicts = 0;  // must be 0 (section 3)
    int64_t corrected = 0;  // pixels whose cycles were corrected (section 4.1)
    int64_t tiles = 0, tile_size = 0;  // tile_size: the side taken (0: opt's)
    int64_t ranks = 1, rank_rows = 1, rank_cols = 1;
    int64_t bytes_sent_max = 0, bytes_sent_total = 0;  // to other ranks
    std::vector<StageTime> times;
    double total_seconds = 0;
    double reference_phase = 0;  // --reference: the u subtracted everywhere so that u = 0 there
    int guide_window = 0;        // the guide the run took (section 2.1), 0: none
    ResidueCensus census;        // the census auto took it from (section 2.2); zeros: none taken
};

// The GeoTIFFs a run writes besides the HDF5 (--geotiff, --conncomp-geotiff, --dolphin), with
// what each holds (io/result_sink.h).
std::vector<std::pair<std::string, GeoTiffBand>> geotiff_outputs(const UnwrapOptions& opt);

// Throws InputError for bad input; leaves no output file behind on failure. Outputs (HDF5,
// GeoTIFF, quicklook) are written to unique temporaries and renamed together only when the
// whole run succeeded (io/output_set.h); an output that is an input, two outputs that are one
// file, an output that is not a regular file, or an existing one without `overwrite` are
// refused before any work.
// Collective over `comm`: every rank reads its window (plus halo), and writes its part.
UnwrapReport run_unwrap(const UnwrapOptions& opt, MPI_Comm comm);
// The same with the phase, coherence and mask from `source` (io/phase_source.h) instead of
// opt.input, opt.coherence and opt.mask (opt.input still names it in the result's attributes).
UnwrapReport run_unwrap(const UnwrapOptions& opt, const PhaseSource* source, MPI_Comm comm);
// The same into `result` (H x W arrays the caller owns) instead of files: opt.output,
// opt.geotiff and opt.quicklook are ignored, nothing is written or checked on disk (the
// library's callers: python/). opt.input names the phase in errors.
UnwrapReport run_unwrap(const UnwrapOptions& opt, const PhaseSource& source, MemoryResult& result, MPI_Comm comm);

}  // namespace tessera
