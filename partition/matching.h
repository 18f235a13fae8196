// Branch cuts as the exact global greedy matching (ARCHITECTURE.md section 3),
// computed across ranks: phase A (locally-dominant rounds within D, each rank over
// its residues and the halo residues within D of its region, exchanging candidates
// and matched flags every round), then phase B (the leftovers, gathered, unbounded
// greedy with a grid and a priority queue, identical on every rank).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/residue.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"

namespace tessera {

// Phase A's residue cells, in pixels: ~25 residues a cell in pure noise, few rings to D elsewhere.
inline constexpr int64_t kPhaseACell = 8;

struct MatchStats {
    int64_t residues = 0, rounds = 0;
    int64_t phase_a_pairs = 0, phase_a_ground = 0;
    int64_t leftovers = 0, phase_b_pairs = 0, phase_b_ground = 0;
};

class PhaseARounds;  // kernels/phase_a.h

// `owned`: this rank's residues (plaquettes whose top-left pixel it owns), sorted by id.
// Returns every cut that may cross this rank's edges, sorted by (id_a, id_b); stats are global.
// `rounds` does phase A's per-residue work (the backend's: Region::phase_a()); it is bound to
// this call's local residue set. The result does not depend on which one is used.
std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t max_pair_distance,
                                Comm& comm, MatchStats& stats, PhaseARounds& rounds);
// The same with the host's rounds (HostPhaseARounds).
std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t max_pair_distance,
                                Comm& comm, MatchStats& stats);

// Phase B alone: greedy over `which` (indices into res, all free) with unbounded weights.
void greedy_leftovers(std::span<const Residue> res, std::span<const int32_t> which, int64_t H, int64_t W,
                      std::vector<Cut>& out, MatchStats& stats);

Cut make_pair_cut(const Residue& a, const Residue& b);
Cut make_ground_cut(const Residue& a, int64_t H, int64_t W);

}  // namespace tessera
