// Unwrapping of one region held in memory: residues, exact greedy branch cuts,
// per-tile weighted union-find, cross-tile offset solve, apply (ARCHITECTURE.md 2-4).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/residue.h"
#include "kernels/types.h"

namespace tessera {

enum class Backend { kCpu, kCuda };

// True when tessera was built with CUDA and a GPU is visible (for --backend auto).
bool cuda_backend_available();

struct UnwrapParams {
    int64_t tile_size = 512;
    int64_t max_pair_distance = 64;
    int64_t min_component_size = 100;
    std::optional<std::pair<int64_t, int64_t>> reference;
    Backend backend = Backend::kCpu;
};

struct RegionStats {
    int64_t tiles = 0, residues = 0, rounds = 0, leftovers = 0, pairs = 0, ground_cuts = 0;
    int64_t components = 0, labelled = 0, largest = 0;
    int64_t conflicts = 0;  // must be 0 (section 3)
};

// `a` covers the whole image (buf = image); phase holds the wrapped phase (0 at invalid)
// and flags the kInvalid / kLowCoherence bits. On return phase holds u (NaN at invalid),
// label the components and cycles (if set) k. `stage(name)` is called after each stage.
RegionStats unwrap_region(const RegionArrays& a, const UnwrapParams& p, std::vector<Residue>* residues_out,
                          const std::function<void(const char*)>& stage);

}  // namespace tessera
