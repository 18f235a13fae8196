// Accuracy against a known truth: the fraction of valid pixels whose cycle count is
// right, per connected component (each component's modal offset is its reference).
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

}  // namespace tessera
