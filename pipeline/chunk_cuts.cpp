#include "pipeline/chunk_cuts.h"

#include <algorithm>
#include <utility>

namespace tessera {

ChunkCuts::ChunkCuts(std::span<const Cut> cuts, std::span<const Window> chunks, int64_t H, int64_t W)
    : cuts_(cuts), start_(chunks.size() + 1, 0) {
    if (chunks.empty()) return;
    const int64_t top = chunks.front().row0, end = chunks.back().row0 + chunks.back().rows;
    std::vector<int64_t> row0(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) row0[i] = chunks[i].row0;
    auto chunk_of = [&](int64_t r) {  // the chunk holding row r, top <= r < end
        return static_cast<size_t>(std::upper_bound(row0.begin(), row0.end(), r) - row0.begin()) - 1;
    };
    // Cut k's first and last chunk (first > last: none); counted, then placed.
    auto reach = [&](size_t k) -> std::pair<size_t, size_t> {
        const CutBox b = cut_box(cuts[k], H, W);
        if (b.r1 < top || b.r0 >= end) return {1, 0};
        return {chunk_of(std::max(b.r0, top)), chunk_of(std::min(b.r1, end - 1))};
    };
    for (size_t k = 0; k < cuts.size(); ++k)
        for (auto [i, last] = reach(k); i <= last; ++i) ++start_[i + 1];
    for (size_t i = 0; i < chunks.size(); ++i) start_[i + 1] += start_[i];
    index_.resize(static_cast<size_t>(start_.back()));
    std::vector<int64_t> at(start_.begin(), start_.end() - 1);
    for (size_t k = 0; k < cuts.size(); ++k)
        for (auto [i, last] = reach(k); i <= last; ++i) index_[static_cast<size_t>(at[i]++)] = static_cast<int64_t>(k);
}

std::span<const Cut> ChunkCuts::of(size_t i) {
    gathered_.clear();
    gathered_.reserve(static_cast<size_t>(start_[i + 1] - start_[i]));
    for (int64_t j = start_[i]; j < start_[i + 1]; ++j) gathered_.push_back(cuts_[static_cast<size_t>(index_[static_cast<size_t>(j)])]);
    return gathered_;
}

}  // namespace tessera
