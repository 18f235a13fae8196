// Residues binned into square cells so a search touches only cells within its
// radius (docs/ARCHITECTURE.md section 8). Built once per cluster set.
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

}  // namespace tessera
