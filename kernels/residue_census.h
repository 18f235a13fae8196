// How noisy a phase is, counted before a run (docs/ARCHITECTURE.md section 2.2): the plaquettes
// whose four pixels are all reliable, and how many of them hold a residue. Host only, integers.
#pragma once
#include <cstdint>

#include "kernels/types.h"

namespace tessera {

struct ResidueCensus {
    int64_t plaquettes = 0;  // with all four pixels neither invalid nor below --min-coherence
    int64_t residues = 0;    // of those, the ones with a non-zero charge (a charge of 2 counts once)
    ResidueCensus& operator+=(const ResidueCensus& o) {
        plaquettes += o.plaquettes, residues += o.residues;
        return *this;
    }
};

// The plaquettes whose top-left pixel lies in `at` (inside the image), from a phase and flags
// given over t.buf (at least `at` grown by one row and column where the image goes on).
ResidueCensus count_residue_plaquettes(const RegionArrays& t, const Window& at);

}  // namespace tessera
