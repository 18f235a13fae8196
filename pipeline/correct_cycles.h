// The cycle correction (docs/ARCHITECTURE.md section 4.1) in the unwrapper's stages: whether a
// run corrects, the pixel it never corrects, and the final u of pixels kept as union-find
// states (the ring other ranks read, the rows beside a chunk), as apply computes it.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cycle_correction.h"
#include "kernels/region.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"
#include "partition/ring_exchange.h"
#include "pipeline/unwrap_region.h"

namespace tessera {

// Whether the run corrects (UnwrapParams::correct_cycles, TESSERA_CYCLE_CORRECTION=0 for A/B).
bool cycle_correction_on(const UnwrapParams& p);

// The pixel never corrected: the --reference pixel's global index, else -1.
int64_t correction_keep(const UnwrapParams& p, int64_t W);

// Section 4's u of a pixel whose union-find state is `s` (root, potential, phase), once the
// offsets of the records (sorted by root) are known; NaN where not integrated.
float final_u(int64_t root, int32_t k, float phase, const std::vector<ComponentRecord>& recs,
              const std::vector<int32_t>& offset);
inline float final_u(const PixelState& s, const std::vector<ComponentRecord>& recs, const std::vector<int32_t>& offset) {
    return final_u((s.flags & kUnreliable) ? int64_t{-1} : s.root, s.k, s.phase, recs, offset);
}

// The ring of final u around the own window from the other ranks, each rank's own border taken
// from its union-find states (`strip`, after union_find, before apply). Collective over `comm`.
RingHalo ring_from_states(const RankGrid& grid, Comm& comm, const std::function<std::vector<PixelState>(const Window&)>& strip,
                          const std::vector<ComponentRecord>& recs, const std::vector<int32_t>& offset);

}  // namespace tessera
