// The rank's cuts sorted out by chunk (docs/ARCHITECTURE.md section 5.1): each chunk's Region
// rasterises only the cuts whose blocked edges' rows meet its own rows, not every cut of the rank
// in passes 2 and 3 of every chunk.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/residue.h"
#include "kernels/types.h"

namespace tessera {

class ChunkCuts {
public:
    // `chunks`: row bands of one own window, top to bottom (chunk_windows); `cuts` outlives this.
    ChunkCuts(std::span<const Cut> cuts, std::span<const Window> chunks, int64_t H, int64_t W);

    // Chunk i's cuts in the rank's order; valid until the next call.
    std::span<const Cut> of(size_t i);

    size_t entries() const { return index_.size(); }  // cuts counted once per chunk they reach

private:
    std::span<const Cut> cuts_;
    std::vector<int64_t> start_, index_;  // chunk i's cuts: index_[start_[i] .. start_[i + 1])
    std::vector<Cut> gathered_;
};

}  // namespace tessera
