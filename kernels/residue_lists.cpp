#include "kernels/residue_lists.h"

#include <algorithm>
#include <cstdint>

namespace tessera {

ResidueList joined(std::vector<ResidueList>& parts) {
    std::vector<size_t> start(parts.size() + 1, 0);
    for (size_t i = 0; i < parts.size(); ++i) start[i + 1] = start[i] + parts[i].size();
    ResidueList all(start.back());  // written whole below, its pages first touched by the copying threads
    for (size_t i = 0; i < parts.size(); ++i) {
        const int64_t n = static_cast<int64_t>(parts[i].size());
        const Residue* from = parts[i].data();
        Residue* to = all.data() + start[i];
        constexpr int64_t kBlock = int64_t{1} << 16;
#pragma omp parallel for schedule(static) if (n > kBlock)
        for (int64_t b = 0; b < n; b += kBlock) std::copy(from + b, from + std::min(n, b + kBlock), to + b);
        release(parts[i]);
    }
    release(parts);
    return all;
}

}  // namespace tessera
