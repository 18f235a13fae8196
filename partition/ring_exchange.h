// The one-pixel ring around a rank's own window, as other ranks hold it: what the cycle
// correction (docs/ARCHITECTURE.md section 4.1) reads beyond the own window.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cycle_correction.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"

namespace tessera {

// u in the ring around `own`: above and below (own.cols + 2: columns own.col0 - 1 .. own.col0 +
// own.cols), left and right (own.rows). NaN outside the image and where no rank sent a value.
struct RingHalo {
    std::vector<float> above, below, left, right;
    // The halo of the band `rows` (own rows) with the rows beside it given (above/below: band
    // width + 2, from the own window or this ring).
    CorrectionHalo band(const Window& own, const Window& rows, std::span<const float> above_row,
                        std::span<const float> below_row) const;
};

// Each rank sends the u of its own pixels that lie next to (8-neighbourhood) another rank's
// own window, `u_at(r, c)` giving it (global pixel; NaN where not integrated), and receives
// its own ring. Collective over `comm`.
RingHalo exchange_ring(const RankGrid& grid, Comm& comm, const std::function<float(int64_t, int64_t)>& u_at);

}  // namespace tessera
