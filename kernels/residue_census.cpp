#include "kernels/residue_census.h"

#include <algorithm>

namespace tessera {

ResidueCensus count_residue_plaquettes(const RegionArrays& t, const Window& at) {
    const int64_t rend = std::min(at.row0 + at.rows, t.H - 1), cend = std::min(at.col0 + at.cols, t.W - 1);
    int64_t all_plaquettes = 0, all_residues = 0;  // integers: the sum is the same in any order
#pragma omp parallel for schedule(static) reduction(+ : all_plaquettes, all_residues)
    for (int64_t r = at.row0; r < rend; ++r) {
        const float* p0 = t.phase + t.index(r, at.col0);
        const float* p1 = t.phase + t.index(r + 1, at.col0);
        const uint8_t* f0 = t.flags + t.index(r, at.col0);
        const uint8_t* f1 = t.flags + t.index(r + 1, at.col0);
        int64_t plaquettes = 0, residues = 0;
#pragma omp simd reduction(+ : plaquettes, residues)
        for (int64_t c = 0; c < cend - at.col0; ++c) {
            const bool reliable = ((f0[c] | f0[c + 1] | f1[c] | f1[c + 1]) & kUnreliable) == 0;
            // q = nv(r,c) + nh(r+1,c) - nh(r,c) - nv(r,c+1), section 2.
            const int32_t q = wrap_count(p0[c], p1[c]) + wrap_count(p1[c], p1[c + 1]) - wrap_count(p0[c], p0[c + 1]) -
                              wrap_count(p0[c + 1], p1[c + 1]);
            plaquettes += reliable ? 1 : 0;
            residues += (reliable && q != 0) ? 1 : 0;
        }
        all_plaquettes += plaquettes, all_residues += residues;
    }
    return {all_plaquettes, all_residues};
}

}  // namespace tessera
