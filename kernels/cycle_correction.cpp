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

constexpr int64_t K = kCorrectionReach;

// Marks m[j], for j in K .. C - K - 1, where a pixel may take cycles: a nonzero decision needs
// kCorrectionFarFewest counted neighbours 3 or more above it, or below (kernels/cycle_decision.h);
// counted here over every neighbour (NaN compares false; the pixel itself is 0 away). Branch-free,
// so that it vectorizes; the labels and the exact decision only where it holds.
void mark_candidates(const float* const (&rows)[2 * K + 1], int64_t C, uint8_t* __restrict m) {
    const float *__restrict a = rows[0], *__restrict b = rows[1], *__restrict c = rows[2], *__restrict d = rows[3],
                            *__restrict e = rows[4];
    static_assert(K == 2, "five rows");
    const int64_t last = C - K;
    for (int64_t j = K; j < last; ++j) {
        const float u = c[j];
        int up = 0, down = 0;
#pragma GCC unroll 5
        for (int64_t dj = -K; dj <= K; ++dj) {
            const float va = a[j + dj] - u, vb = b[j + dj] - u, vc = c[j + dj] - u, vd = d[j + dj] - u, ve = e[j + dj] - u;
            up += (va >= 3.0f) + (vb >= 3.0f) + (vc >= 3.0f) + (vd >= 3.0f) + (ve >= 3.0f);
            down += (va <= -3.0f) + (vb <= -3.0f) + (vc <= -3.0f) + (vd <= -3.0f) + (ve <= -3.0f);
        }
        m[j] = static_cast<uint8_t>((up >= kCorrectionFarFewest) | (down >= kCorrectionFarFewest));
    }
}

}  // namespace

int64_t correct_cycles(const RegionArrays& a, const Window& band, const CorrectionHalo& halo, int64_t keep,
                       int label_bytes) {
    if (band.rows <= 0 || band.cols <= 0) return 0;
    const int64_t R = band.rows, C = band.cols, wide = C + 2 * K;
    // Row i (-K .. R + K - 1) from its column 0: the halo's rows hold columns -K .. C + K - 1,
    // the band's own rows only 0 .. C - 1 (their ends: `end`).
    auto row = [&](int64_t i) -> const float* {
        if (i < 0) return halo.above.data() + (i + K) * wide + K;
        if (i >= R) return halo.below.data() + (i - R) * wide + K;
        return a.phase + a.index(band.row0 + i, band.col0);
    };
    auto value = [&](int64_t i, int64_t j) -> float {
        if (i < 0 || i >= R || (j >= 0 && j < C)) return row(i)[j];
        return j < 0 ? halo.left[static_cast<size_t>(i * K + j + K)] : halo.right[static_cast<size_t>(i * K + j - C)];
    };
    auto label = [&](int64_t i, int64_t j) -> uint32_t {
        if (i < 0) return halo.above_label[static_cast<size_t>((i + K) * wide + j + K)];
        if (i >= R) return halo.below_label[static_cast<size_t>((i - R) * wide + j + K)];
        if (j < 0) return halo.left_label[static_cast<size_t>(i * K + j + K)];
        if (j >= C) return halo.right_label[static_cast<size_t>(i * K + j - C)];
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
            const float* rows[2 * K + 1];
            for (int64_t r = 0; r < 2 * K + 1; ++r) rows[r] = row(i + r - K);
            const float* cur = rows[K];
            uint8_t* __restrict m = cand.data();
            std::fill(m, m + C, uint8_t{1});  // the ends (their windows leave the band's columns): decided exactly below
            mark_candidates(rows, C, m);
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
                float v[kCorrectionNeighbours];
                int k = 0;
                if (i >= K && i + K < R && j >= K && j + K < C) {  // the window inside the band: rows read directly
                    for (int64_t di = -K; di <= K; ++di) {
                        const int64_t at = a.index(band.row0 + i + di, band.col0 + j);
                        const float* p = rows[di + K] + j;
                        for (int64_t dj = -K; dj <= K; ++dj) {
                            if (di == 0 && dj == 0) continue;
                            v[k++] = label_at(a.label, label_bytes, at + dj) == mine_label ? p[dj] : std::numeric_limits<float>::quiet_NaN();
                        }
                    }
                } else {
                    for (int64_t di = -K; di <= K; ++di)
                        for (int64_t dj = -K; dj <= K; ++dj) {
                            if (di == 0 && dj == 0) continue;
                            v[k++] = label(i + di, j + dj) == mine_label ? value(i + di, j + dj)
                                                                          : std::numeric_limits<float>::quiet_NaN();
                        }
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
