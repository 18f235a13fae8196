#include "pipeline/correct_cycles.h"

#include <algorithm>
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
    // The own window's four border lines, fetched once (a device region downloads each).
    std::vector<PixelState> top, bottom, left, right;
    if (comm.size() > 1) {
        top = strip({own.row0, own.col0, 1, own.cols});
        bottom = strip({own.row0 + own.rows - 1, own.col0, 1, own.cols});
        left = strip({own.row0, own.col0, own.rows, 1});
        right = strip({own.row0, own.col0 + own.cols - 1, own.rows, 1});
    }
    return exchange_ring(grid, comm, [&](int64_t r, int64_t c) {
        const PixelState& s = r == own.row0                 ? top[static_cast<size_t>(c - own.col0)]
                              : r == own.row0 + own.rows - 1 ? bottom[static_cast<size_t>(c - own.col0)]
                              : c == own.col0                 ? left[static_cast<size_t>(r - own.row0)]
                                                              : right[static_cast<size_t>(r - own.row0)];
        return final_pixel(s, sol);
    });
}

}  // namespace tessera
