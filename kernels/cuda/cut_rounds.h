// The rule's rounds (kernels/cut_rounds.h) on the device, for one closed set of residues: the
// flat input goes up, the sorted cut codes come down. C++17 (included by the .cu file).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/cut_rounds.h"

namespace tessera::cuda {

// Host arrays of a RoundInput (kernels/cut_rounds_input.h), with their lengths.
struct RoundArrays {
    int32_t n = 0, L = 0;
    int64_t H = 0, W = 0, radius = 0;
    RankKeys keys;
    const int32_t *rr = nullptr, *rc = nullptr, *sign = nullptr, *lake_node = nullptr;
    const int32_t *adj_start = nullptr, *adj = nullptr;
    int64_t n_adj = 0;
    const uint64_t* bits = nullptr;  // null: built on the device from rr, rc and the box
    const int32_t *word_rank = nullptr, *first = nullptr;
    int64_t n_words = 0, n_first = 0;
    int64_t r0 = 0, c0 = 0, rows = 0, cols = 0;
    RoundTuning tune;
};

// Where the device rule's time goes (TESSERA_TRACE), milliseconds, each phase synchronised.
struct RoundTimes {
    double upload = 0, wide = 0, grid = 0, block = 0, sort = 0, download = 0;
    int32_t rounds = 0, wide_rounds = 0, grid_rounds = 0, block_rounds = 0, block_launches = 0, grid_launches = 0;
    int64_t searched = 0;  // node searches over all rounds
};

// Runs the rounds on stream s; `codes` gets the cut codes sorted, `counts` the last counts.
void run_rounds(const RoundArrays& in, std::vector<uint64_t>& codes, RoundCounts& counts, RoundTimes& times,
                cudaStream_t s);

}  // namespace tessera::cuda
