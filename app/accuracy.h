// Accuracy against a known truth. fraction_correct: per connected component (each component's
// modal offset is its reference). fraction_correct_per_region: per 4-connected region of valid
// pixels (finite truth) whatever the labels, which is how a user sees a result: every pixel of
// a region must carry the region's modal offset; a split into components does not excuse one.
#pragma once
#include <cstdint>
#include <span>

namespace tessera {

struct Accuracy {
    int64_t valid = 0;  // pixels with a finite truth
    int64_t correct = 0;
    double fraction() const { return valid ? static_cast<double>(correct) / static_cast<double>(valid) : 1.0; }
};

// valid = pixels with finite truth; label 0 or a NaN result counts as wrong.
Accuracy fraction_correct(std::span<const float> unwrapped, std::span<const float> truth,
                          std::span<const uint32_t> labels);

struct RegionAccuracy : Accuracy {
    int64_t regions = 0;
    int64_t regions_all_right = 0;  // regions with every pixel on the modal offset
};
RegionAccuracy fraction_correct_per_region(std::span<const float> unwrapped, std::span<const float> truth, int64_t H,
                                           int64_t W);

}  // namespace tessera
