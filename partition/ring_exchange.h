// The one-pixel ring around a rank's own window, as other ranks hold it: what the cycle
// correction (docs/ARCHITECTURE.md section 4.1) reads beyond the own window.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kernels/cycle_correction.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"

namespace tessera {

// A pixel's final u (NaN where not integrated) and label (0: none).
struct RingPixel {
    float u;
    uint32_t label;
};

// u and labels in the ring around `own`: above and below (own.cols + 2: columns own.col0 - 1 ..
// own.col0 + own.cols), left and right (own.rows). NaN and 0 outside the image and where no rank
// sent a value.
struct RingHalo {
    std::vector<float> above, below, left, right;
    std::vector<uint32_t> above_label, below_label, left_label, right_label;
    // The halo of the band `rows` (own rows) with the rows beside it given (band width + 2, from
    // the own window or this ring).
    CorrectionHalo band(const Window& own, const Window& rows, std::span<const float> above_row,
                        std::span<const uint32_t> above_row_label, std::span<const float> below_row,
                        std::span<const uint32_t> below_row_label) const;
};

// Each rank sends its own pixels that lie next to (8-neighbourhood) another rank's own window,
// `at(r, c)` giving each (global pixel), and receives its own ring. Collective over `comm`.
RingHalo exchange_ring(const RankGrid& grid, Comm& comm, const std::function<RingPixel(int64_t, int64_t)>& at);

}  // namespace tessera
