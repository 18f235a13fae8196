#include "src/accuracy.h"

#include <cmath>
#include <map>
#include <unordered_map>
#include <vector>

namespace tessera {

Accuracy fraction_correct(std::span<const float> u, std::span<const float> truth, std::span<const uint32_t> labels) {
    // Per label, histogram of integer offsets rint((u - truth) / 2 pi).
    std::unordered_map<uint32_t, std::map<int64_t, int64_t>> hist;
    Accuracy acc;
    for (size_t i = 0; i < u.size(); ++i) {
        if (!std::isfinite(truth[i])) continue;
        ++acc.valid;
        if (labels[i] == 0 || !std::isfinite(u[i])) continue;
        const double d = (static_cast<double>(u[i]) - truth[i]) / (2.0 * M_PI);
        ++hist[labels[i]][std::llround(d)];
    }
    for (const auto& [label, h] : hist) {
        int64_t best = 0;
        for (const auto& [off, n] : h) best = std::max(best, n);
        acc.correct += best;
    }
    return acc;
}

}  // namespace tessera
