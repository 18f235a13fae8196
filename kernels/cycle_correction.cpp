#include "kernels/cycle_correction.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include <omp.h>

namespace tessera {

namespace {

// Whether a pixel may take cycles: its decision is worked out exactly (cycle_correction) only
// where |mean difference| reaches 3, below the half cycle any nonzero decision needs. Branch-free,
// so that it vectorizes: a NaN neighbour adds 0 to the sum and nothing to the count.
inline bool may_take(float u, float a, float b, float c, float l, float r, float x, float y, float z) {
    float s = 0.0f, n = 0.0f;
    auto add = [&](float v) {  // the difference always taken: a select, not a branch
        const float diff = v - u;
        const bool ok = v == v;
        s = s + (ok ? diff : 0.0f);
        n = n + (ok ? 1.0f : 0.0f);
    };
    add(a), add(b), add(c), add(l), add(r), add(x), add(y), add(z);
    return (u == u) & (n >= 3.0f) & (std::fabs(s) >= 3.0f * n);
}

}  // namespace

int64_t correct_cycles(const RegionArrays& a, const Window& band, const CorrectionHalo& halo, int64_t keep) {
    if (band.rows <= 0 || band.cols <= 0) return 0;
    const int64_t R = band.rows, C = band.cols;
    // Row i's values from column -1 (p[-1]) to C (p[C]): the halo's rows are laid out so; the
    // band's own rows lack their ends, which `end` gives.
    auto row = [&](int64_t i) -> const float* {
        if (i < 0) return halo.above.data() + 1;
        if (i >= R) return halo.below.data() + 1;
        return a.phase + a.index(band.row0 + i, band.col0);
    };
    auto end = [&](int64_t i, int64_t j) -> float {  // j = -1 or C
        if (i < 0 || i >= R) return row(i)[j];
        return (j < 0 ? halo.left : halo.right)[static_cast<size_t>(i)];
    };
    // Every decision reads u before any correction (section 4.1): decided first, applied after.
    std::vector<std::vector<std::pair<int64_t, int32_t>>> found(static_cast<size_t>(omp_get_max_threads()));
#pragma omp parallel
    {
        auto& mine = found[static_cast<size_t>(omp_get_thread_num())];
        std::vector<uint8_t> cand(static_cast<size_t>(C));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < R; ++i) {
            const float *__restrict up = row(i - 1), *__restrict cur = row(i), *__restrict dn = row(i + 1);
            uint8_t* __restrict m = cand.data();
            for (int64_t j = 1; j + 1 < C; ++j)
                m[j] = may_take(cur[j], up[j - 1], up[j], up[j + 1], cur[j - 1], cur[j + 1], dn[j - 1], dn[j], dn[j + 1]);
            auto nb = [&](int64_t j, float (&v)[8]) {
                auto at = [&](int64_t ii, const float* p, int64_t jj) { return jj < 0 || jj >= C ? end(ii, jj) : p[jj]; };
                v[0] = at(i - 1, up, j - 1), v[1] = at(i - 1, up, j), v[2] = at(i - 1, up, j + 1);
                v[3] = at(i, cur, j - 1), v[4] = at(i, cur, j + 1);
                v[5] = at(i + 1, dn, j - 1), v[6] = at(i + 1, dn, j), v[7] = at(i + 1, dn, j + 1);
            };
            m[0] = 1, m[C - 1] = 1;  // the ends: decided exactly below
            for (int64_t j = 0; j < C; ++j) {
                if (j + 8 <= C) {  // candidates are rare: skip eight at a time
                    uint64_t w;
                    std::memcpy(&w, m + j, sizeof w);
                    if (w == 0) {
                        j += 7;
                        continue;
                    }
                }
                if (!m[j] || cur[j] != cur[j]) continue;
                float v[8];
                nb(j, v);
                const int32_t d = cycle_correction(cur[j], v);
                if (d != 0) mine.push_back({i * C + j, d});
            }
        }
    }
    int64_t n = 0;
    for (const auto& list : found)
        for (const auto& [at, d] : list) {
            const int64_t r = band.row0 + at / C, c = band.col0 + at % C;
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
