// The ring around a rank's own window, kCorrectionReach pixels deep, as other ranks hold it: what
// the cycle correction (docs/ARCHITECTURE.md section 4.1) reads beyond the own window.
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

// u and labels in the ring around `own`, laid out as CorrectionHalo's (K = kCorrectionReach):
// above and below (K rows of own.cols + 2K: columns own.col0 - K .. own.col0 + own.cols + K - 1;
// above the farther row first, below the nearer), left and right (own.rows x K). NaN and 0
// outside the image and where no rank sent a value.
struct RingHalo {
    std::vector<float> above, below, left, right;
    std::vector<uint32_t> above_label, below_label, left_label, right_label;
    // The halo of the band `rows` (own rows) with the K rows over and under it given (as `above`
    // and `below` are laid out, from the own window or this ring).
    CorrectionHalo band(const Window& own, const Window& rows, std::span<const float> above_rows,
                        std::span<const uint32_t> above_rows_label, std::span<const float> below_rows,
                        std::span<const uint32_t> below_rows_label) const;
};

// Each rank sends its own pixels that lie within kCorrectionReach (Chebyshev) of another rank's
// own window, `at(r, c)` giving each (global pixel), and receives its own ring. Collective over `comm`.
RingHalo exchange_ring(const RankGrid& grid, Comm& comm, const std::function<RingPixel(int64_t, int64_t)>& at);

}  // namespace tessera
