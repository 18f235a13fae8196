// Residues binned into square cells so a search touches only cells within its
// radius (ARCHITECTURE.md section 8). Built once per matching phase.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/residue.h"
#include "kernels/types.h"

namespace tessera {

struct ResidueGrid {
    Window area;      // pixels whose plaquettes the grid covers
    int64_t cell = 16;
    int64_t crows = 0, ccols = 0;
    std::vector<int64_t> start;    // CSR: cell -> [start[c], start[c+1]) in items
    std::vector<int32_t> items;    // residue indices, ascending id within a cell

    // `subset` (indices into res) of residues to bin; empty span with all=true bins all.
    void build(std::span<const Residue> res, std::span<const int32_t> subset, const Window& area,
               int64_t cell);
};

// Best candidate edge of residue i: a free (matched[j] == 0) residue of opposite sign or
// the ground, smallest EdgeKey with weight <= limit. partner: index, -1 ground, -2 none.
struct Candidate {
    EdgeKey key;
    int32_t partner = -2;
};
inline constexpr int32_t kPartnerGround = -1;
inline constexpr int32_t kPartnerNone = -2;

Candidate best_candidate(const ResidueGrid& grid, std::span<const Residue> res,
                         const uint8_t* matched, int32_t i, int64_t limit, int64_t H, int64_t W);

}  // namespace tessera
