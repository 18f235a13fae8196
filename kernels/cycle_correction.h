// Cycle correction of single pixels after the offsets are applied (docs/ARCHITECTURE.md
// section 4.1): a pixel whose u lies more than half a cycle from the median of its integrated
// neighbours within two pixels takes the whole number of cycles that brings it nearest to that
// median (the decision: kernels/cycle_decision.h). Host code.
#pragma once
#include <cstdint>
#include <span>

#include "kernels/cycle_decision.h"
#include "kernels/types.h"

namespace tessera {

// u and labels around a band of own-window rows before any correction, kCorrectionReach (K)
// deep: `above` the K rows over it, the farther first, and `below` the K rows under it, the
// nearer first, each band.cols + 2K values (columns band.col0 - K .. band.col0 + band.cols + K - 1);
// `left` and `right` the K columns beside each band row (band.rows x K, row by row, left to
// right). NaN (label 0) where not integrated or outside.
struct CorrectionHalo {
    std::span<const float> above, below, left, right;
    std::span<const uint32_t> above_label, below_label, left_label, right_label;
};

// Corrects u (a.phase) over `band` (rows of the own window, whole own width), adding d to
// a.cycles where it is kept and setting kCycleCorrected in a.flags; a.label (`label_bytes` wide)
// says which neighbours count (the pixel's own label, not 0); the pixel `keep` (the --reference
// pixel, global index; -1: none) is never corrected. Returns the pixels corrected.
int64_t correct_cycles(const RegionArrays& a, const Window& band, const CorrectionHalo& halo, int64_t keep,
                       int label_bytes);

}  // namespace tessera
