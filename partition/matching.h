// Branch cuts as the exact global greedy matching (ARCHITECTURE.md section 3):
// phase A (locally-dominant rounds within D, per tile over its halo), then phase B
// (the leftovers, unbounded greedy with a grid and a priority queue).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/residue.h"
#include "partition/tile_grid.h"

namespace tessera {

struct MatchStats {
    int64_t residues = 0, rounds = 0;
    int64_t phase_a_pairs = 0, phase_a_ground = 0;
    int64_t leftovers = 0, phase_b_pairs = 0, phase_b_ground = 0;
};

// `res` sorted by id. Returns the cuts sorted by (id_a, id_b).
std::vector<Cut> match_residues(std::span<const Residue> res, const TileGrid& grid, int64_t max_pair_distance,
                                MatchStats& stats);

// Phase B alone: greedy over `which` (indices into res, all free) with unbounded weights.
void greedy_leftovers(std::span<const Residue> res, std::span<const int32_t> which, int64_t H, int64_t W,
                      std::vector<Cut>& out, MatchStats& stats);

Cut make_pair_cut(const Residue& a, const Residue& b);
Cut make_ground_cut(const Residue& a, int64_t H, int64_t W);

}  // namespace tessera
