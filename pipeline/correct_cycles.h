// The cycle correction (docs/ARCHITECTURE.md section 4.1) on a rank's result: the whole own
// window in one piece, or a chunk's rows with the rows beside it (pipeline/chunked_stages.h).
#pragma once
#include <cstdint>

#include "kernels/cycle_correction.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"
#include "partition/ring_exchange.h"
#include "pipeline/unwrap_region.h"

namespace tessera {

// Whether the run corrects (UnwrapParams::correct_cycles, TESSERA_CYCLE_CORRECTION=0 for A/B).
bool cycle_correction_on(const UnwrapParams& p);

// The pixel never corrected: the --reference pixel's global index, else -1.
int64_t correction_keep(const UnwrapParams& p, int64_t W);

// After apply: u over the own window of `a`; corrects it in place. Returns the pixels corrected
// on all ranks (0 when off). Collective over `comm`.
int64_t correct_own_window(const RegionArrays& a, const RankGrid& grid, Comm& comm, const UnwrapParams& p);

}  // namespace tessera
