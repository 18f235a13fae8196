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

// The solution a pixel's final u and label follow from: the records (sorted by root), their
// offsets and labels (partition/global_solve.h).
struct Solution {
    const std::vector<ComponentRecord>& records;
    const std::vector<int32_t>& offset;
    const std::vector<uint32_t>& label;
};

// Section 4's u and the label of a pixel whose union-find state is (root, potential, phase)
// (root -1: not integrated: NaN, 0), as apply computes them.
RingPixel final_pixel(int64_t root, int32_t k, float phase, const Solution& sol);
inline RingPixel final_pixel(const PixelState& s, const Solution& sol) {
    return final_pixel((s.flags & kUnreliable) ? int64_t{-1} : s.root, s.k, s.phase, sol);
}

// The ring of final u and labels around the own window from the other ranks, each rank's own
// border taken from its union-find states (`strip`, after union_find, before apply). Collective.
RingHalo ring_from_states(const RankGrid& grid, Comm& comm, const std::function<std::vector<PixelState>(const Window&)>& strip,
                          const Solution& sol);

}  // namespace tessera
