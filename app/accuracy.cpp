#include "app/accuracy.h"

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

RegionAccuracy fraction_correct_per_region(std::span<const float> u, std::span<const float> truth, int64_t H,
                                           int64_t W) {
    RegionAccuracy acc;
    std::vector<int64_t> region(truth.size(), -1), stack;
    for (size_t s = 0; s < truth.size(); ++s) {
        if (region[s] >= 0 || !std::isfinite(truth[s])) continue;
        // One region: flood fill, then the histogram of its offsets (NaN output: never right).
        std::map<int64_t, int64_t> hist;
        int64_t size = 0;
        region[s] = acc.regions;
        stack.push_back(static_cast<int64_t>(s));
        while (!stack.empty()) {
            const int64_t k = stack.back();
            stack.pop_back();
            ++size;
            if (std::isfinite(u[static_cast<size_t>(k)]))
                ++hist[std::llround((static_cast<double>(u[static_cast<size_t>(k)]) - truth[static_cast<size_t>(k)]) /
                                    (2.0 * M_PI))];
            const int64_t r = k / W, c = k % W;
            for (const int64_t n : {c > 0 ? k - 1 : -1, c + 1 < W ? k + 1 : -1, r > 0 ? k - W : -1, r + 1 < H ? k + W : -1})
                if (n >= 0 && region[static_cast<size_t>(n)] < 0 && std::isfinite(truth[static_cast<size_t>(n)])) {
                    region[static_cast<size_t>(n)] = acc.regions;
                    stack.push_back(n);
                }
        }
        int64_t best = 0;
        for (const auto& [off, n] : hist) best = std::max(best, n);
        acc.valid += size;
        acc.correct += best;
        acc.regions_all_right += best == size;
        ++acc.regions;
    }
    return acc;
}

}  // namespace tessera
