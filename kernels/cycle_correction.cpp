#include "kernels/cycle_correction.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include <omp.h>

#include "kernels/label_width.h"

namespace tessera {

namespace {

// Whether a pixel may take cycles: a nonzero decision needs a counted neighbour at least half a
// cycle away, so at least one neighbour 3 or more away (NaN compares false). Branch-free, so that
// it vectorizes; the labels and the exact decision only where it holds.
inline bool may_take(float u, float a, float b, float c, float l, float r, float x, float y, float z) {
    auto far = [&](float v) { return std::fabs(v - u) >= 3.0f; };
    return far(a) | far(b) | far(c) | far(l) | far(r) | far(x) | far(y) | far(z);
}

}  // namespace

int64_t correct_cycles(const RegionArrays& a, const Window& band, const CorrectionHalo& halo, int64_t keep,
                       int label_bytes) {
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
    auto label = [&](int64_t i, int64_t j) -> uint32_t {  // i in -1..R, j in -1..C
        if (i < 0) return halo.above_label[static_cast<size_t>(j + 1)];
        if (i >= R) return halo.below_label[static_cast<size_t>(j + 1)];
        if (j < 0) return halo.left_label[static_cast<size_t>(i)];
        if (j >= C) return halo.right_label[static_cast<size_t>(i)];
        return label_at(a.label, label_bytes, a.index(band.row0 + i, band.col0 + j));
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
                const uint32_t mine_label = label(i, j);
                if (mine_label == 0) continue;  // no component identity: left as it is
                float v[8];
                int k = 0;
                for (int64_t di = -1; di <= 1; ++di)
                    for (int64_t dj = -1; dj <= 1; ++dj) {
                        if (di == 0 && dj == 0) continue;
                        const int64_t jj = j + dj;
                        const float* p = di < 0 ? up : di > 0 ? dn : cur;
                        const float x = jj < 0 || jj >= C ? end(i + di, jj) : p[jj];
                        v[k++] = label(i + di, jj) == mine_label ? x : std::numeric_limits<float>::quiet_NaN();
                    }
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
