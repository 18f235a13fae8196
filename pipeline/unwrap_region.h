// Unwrapping of one rank's region: residues, exact greedy branch cuts across ranks,
// per-tile weighted union-find, offset solve across tiles and ranks, apply
// (ARCHITECTURE.md sections 2-5).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/region.h"
#include "kernels/residue.h"
#include "backend/backend_kind.h"
#include "kernels/types.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"

namespace tessera {

struct UnwrapParams {
    int64_t max_pair_distance = 16;  // the cut radius (section 3)
    int64_t min_component_size = 100;
    std::optional<std::pair<int64_t, int64_t>> reference;
    Backend backend = Backend::kCpu;
    // Labels stored as few bytes wide as hold the largest (RegionStats::label_bytes; kernels/
    // label_width.h) instead of 4: what the scene pipeline's writer and the benchmarks take.
    bool narrow_labels = false;
    // Section 4.1: single pixels' cycles corrected from their neighbours after the offsets
    // (TESSERA_CYCLE_CORRECTION=0 turns it off for A/B studies).
    bool correct_cycles = true;
    // Section 3.6: the far reach after the cut rule (not --no-far-reach).
    bool far_reach = true;
};

struct RegionStats {  // global counts (the same on every rank)
    int64_t tiles = 0, residues = 0, pairs = 0, ground_cuts = 0;
    int64_t lake_joins = 0;  // residues discharged into a lake (no cut)
    int64_t lake_steps = 0;  // one-step cuts to the ground one dual step away (section 3.1)
    int64_t shared = 0;      // residues whose cut cluster was decided on every rank
    int64_t components = 0, labelled = 0, largest = 0;
    int64_t conflicts = 0;    // must be 0 (section 3)
    int64_t corrected = 0;    // pixels whose cycles the correction changed (section 4.1)
    int64_t bytes_sent = 0;   // by this rank, to other ranks
    int label_bytes = 4;      // width of the labels written (UnwrapParams::narrow_labels)
};

// `a` covers grid.buffer(comm.rank()); phase holds the wrapped phase (0 at invalid) and
// flags the kInvalid / kLowCoherence bits. On return phase holds u over the own window
// (NaN at invalid), label the components and cycles (if set) k. `stage(name)` is
// called after each stage. Collective over `comm`.
// `fill`, if given, fills a's phase and flags first (kernels/region.h): the backend's region
// exists by then, so that the CUDA backend uploads rows while the rest is still being read.
RegionStats unwrap_region(const RegionArrays& a, const RankGrid& grid, Comm& comm, const UnwrapParams& p,
                          std::vector<Residue>* residues_out, const std::function<void(const char*)>& stage,
                          const RegionFill& fill = {});

// One process, the whole image in memory: the tests' and library users' entry point.
RegionStats unwrap_image(const RegionArrays& a, int64_t tile_size, const UnwrapParams& p,
                         const std::function<void(const char*)>& stage = [](const char*) {});

}  // namespace tessera
