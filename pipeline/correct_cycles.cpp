#include "pipeline/correct_cycles.h"

#include "kernels/ab_switch.h"

namespace tessera {

bool cycle_correction_on(const UnwrapParams& p) {
    return p.correct_cycles && !switch_is("TESSERA_CYCLE_CORRECTION", "0");
}

int64_t correction_keep(const UnwrapParams& p, int64_t W) {
    return p.reference ? p.reference->first * W + p.reference->second : -1;
}

int64_t correct_own_window(const RegionArrays& a, const RankGrid& grid, Comm& comm, const UnwrapParams& p) {
    if (!cycle_correction_on(p)) return 0;
    const Window own = grid.own(comm.rank());
    // Every rank's ring before any rank corrects (every decision reads u before correction).
    const RingHalo ring = exchange_ring(grid, comm, [&](int64_t r, int64_t c) { return a.phase[a.index(r, c)]; });
    const int64_t n = correct_cycles(a, own, ring.band(own, own, ring.above, ring.below), correction_keep(p, a.W));
    return comm.sum(n);
}

}  // namespace tessera
