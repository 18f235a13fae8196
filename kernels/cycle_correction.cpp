#include "kernels/cycle_correction.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <omp.h>

namespace tessera {

int64_t correct_cycles(const RegionArrays& a, const Window& band, const CorrectionHalo& halo, int64_t keep) {
    if (band.rows <= 0 || band.cols <= 0) return 0;
    const int64_t R = band.rows, C = band.cols;
    // u of band row i (-1 and R: the halo rows), column j (-1 and C: the halo columns).
    auto at = [&](int64_t i, int64_t j) -> float {
        if (i < 0) return halo.above[static_cast<size_t>(j + 1)];
        if (i >= R) return halo.below[static_cast<size_t>(j + 1)];
        if (j < 0) return halo.left[static_cast<size_t>(i)];
        if (j >= C) return halo.right[static_cast<size_t>(i)];
        return a.phase[a.index(band.row0 + i, band.col0 + j)];
    };
    // Every decision reads u before any correction (section 4.1): decided first, applied after.
    std::vector<std::vector<std::pair<int64_t, int32_t>>> found(static_cast<size_t>(omp_get_max_threads()));
#pragma omp parallel
    {
        auto& mine = found[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
        for (int64_t i = 0; i < R; ++i) {
            const float* row = a.phase + a.index(band.row0 + i, band.col0);
            const float* up = i > 0 ? row - a.buf.cols : nullptr;
            const float* dn = i + 1 < R ? row + a.buf.cols : nullptr;
            for (int64_t j = 0; j < C; ++j) {
                const float u = row[j];
                if (u != u) continue;  // not integrated
                float nb[8];
                if (up && j > 0 && j + 1 < C) {
                    nb[0] = up[j - 1], nb[1] = up[j], nb[2] = up[j + 1];
                } else {
                    nb[0] = at(i - 1, j - 1), nb[1] = at(i - 1, j), nb[2] = at(i - 1, j + 1);
                }
                nb[3] = j > 0 ? row[j - 1] : at(i, j - 1);
                nb[4] = j + 1 < C ? row[j + 1] : at(i, j + 1);
                if (dn && j > 0 && j + 1 < C) {
                    nb[5] = dn[j - 1], nb[6] = dn[j], nb[7] = dn[j + 1];
                } else {
                    nb[5] = at(i + 1, j - 1), nb[6] = at(i + 1, j), nb[7] = at(i + 1, j + 1);
                }
                const int32_t d = cycle_correction(u, nb);
                if (d != 0) mine.push_back({i * C + j, d});
            }
        }
    }
    int64_t n = 0;
    for (const auto& list : found)
        for (const auto& [at_, d] : list) {
            const int64_t r = band.row0 + at_ / C, c = band.col0 + at_ % C;
            if (r * a.W + c == keep) continue;
            const int64_t o = a.index(r, c);
            a.phase[o] = corrected_u(a.phase[o], d);
            if (a.cycles) a.cycles[o] += d;
            a.flags[o] = static_cast<uint8_t>(a.flags[o] | kCycleCorrected);
            ++n;
        }
    return n;
}

}  // namespace tessera
