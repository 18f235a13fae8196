#include "pipeline/correct_cycles.h"

#include <algorithm>
#include <array>
#include <limits>

#include "kernels/ab_switch.h"
#include "kernels/invariant.h"

namespace tessera {

bool cycle_correction_on(const UnwrapParams& p) {
    return p.correct_cycles && !switch_is("TESSERA_CYCLE_CORRECTION", "0");
}

int64_t correction_keep(const UnwrapParams& p, int64_t W) {
    return p.reference ? p.reference->first * W + p.reference->second : -1;
}

RingPixel final_pixel(int64_t root, int32_t k, float phase, const Solution& sol) {
    if (root < 0) return {std::numeric_limits<float>::quiet_NaN(), 0};
    const auto& recs = sol.records;
    const auto it = std::lower_bound(recs.begin(), recs.end(), root,
                                     [](const ComponentRecord& x, int64_t v) { return x.root < v; });
    TESSERA_INVARIANT(it != recs.end() && it->root == root, "cycle correction: a kept root without its record");
    const size_t i = static_cast<size_t>(it - recs.begin());
    const int32_t kk = k + sol.offset[i];
    return {phase + kTwoPiF * static_cast<float>(kk), sol.label[i]};  // section 4, as apply computes it
}

RingHalo ring_from_states(const RankGrid& grid, Comm& comm, const std::function<std::vector<PixelState>(const Window&)>& strip,
                          const Solution& sol) {
    const Window own = grid.own(comm.rank());
    // The own window's border strips, kCorrectionReach deep (less where the window is thinner),
    // fetched once (a device region downloads each): what other ranks' rings hold of it.
    const int64_t deep_rows = std::min<int64_t>(kCorrectionReach, own.rows), deep_cols = std::min<int64_t>(kCorrectionReach, own.cols);
    const std::array<Window, 4> sides{Window{own.row0, own.col0, deep_rows, own.cols},
                                      Window{own.row0 + own.rows - deep_rows, own.col0, deep_rows, own.cols},
                                      Window{own.row0, own.col0, own.rows, deep_cols},
                                      Window{own.row0, own.col0 + own.cols - deep_cols, own.rows, deep_cols}};
    std::array<std::vector<PixelState>, 4> kept;
    if (comm.size() > 1)
        for (size_t s = 0; s < sides.size(); ++s) kept[s] = strip(sides[s]);
    return exchange_ring(grid, comm, [&](int64_t r, int64_t c) {
        for (size_t s = 0; s < sides.size(); ++s)
            if (sides[s].contains(r, c))
                return final_pixel(kept[s][static_cast<size_t>((r - sides[s].row0) * sides[s].cols + (c - sides[s].col0))], sol);
        TESSERA_INVARIANT(false, "cycle correction: a ring pixel off the own window's border");
        return RingPixel{};
    });
}

}  // namespace tessera
