// Section 3's promise checked from a run's input and output alone (docs/ARCHITECTURE.md 3;
// issue 13 item 4), never from the code's own conflict counter: along every edge the cuts left
// open between two integrated pixels, k(b) - k(a) = -n(a->b), with k read back from u; and u
// lies a whole number of 2 pi from the wrapped phase. Edges of a pixel whose cycles the
// correction changed (section 4.1; its flag bit) are left to check_cycle_correction, which
// verifies every pixel's correction against the rule, again from input and output alone.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "kernels/cycle_decision.h"
#include "kernels/types.h"

namespace tessera::testing {

struct OpenEdgeCheck {
    int64_t checked = 0;      // open edges between two integrated pixels
    int64_t disagree = 0;     // of them, where the cycles' step is not minus the wrap count
    int64_t incongruent = 0;  // integrated pixels whose u - phi is not a whole number of 2 pi
};

// phi: the wrapped input; u: the output (NaN where not integrated); flags: the run's edge bits
// (and `corrected`, the bit of a corrected pixel: kCycleCorrected in a region's flags, 4 in /branch_cuts).
inline OpenEdgeCheck check_open_edges(std::span<const float> phi, std::span<const float> u,
                                      std::span<const uint8_t> flags, int64_t H, int64_t W,
                                      uint8_t corrected = kCycleCorrected) {
    constexpr double two_pi = 6.283185307179586;
    OpenEdgeCheck c;
    auto k_of = [&](size_t i) { return std::llround((static_cast<double>(u[i]) - phi[i]) / two_pi); };
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
            const size_t a = static_cast<size_t>(y * W + x);
            if (!std::isfinite(u[a])) continue;
            const double off = static_cast<double>(u[a]) - phi[a] - two_pi * static_cast<double>(k_of(a));
            c.incongruent += std::abs(off) > 1e-5 * std::max(1.0, std::abs(static_cast<double>(u[a])));
            auto edge = [&](size_t b, uint8_t bit) {
                if ((flags[a] & bit) || !std::isfinite(u[b]) || ((flags[a] | flags[b]) & corrected)) return;
                // The wrap count as section 2 defines it, in float.
                const int64_t n = std::lrint((phi[b] - phi[a]) * kInvTwoPiF);
                c.disagree += k_of(b) - k_of(a) != -n;
                ++c.checked;
            };
            if (x + 1 < W) edge(a + 1, kBlockRight);
            if (y + 1 < H) edge(a + static_cast<size_t>(W), kBlockDown);
        }
    return c;
}

struct CorrectionCheck {
    int64_t corrected = 0;     // pixels flagged corrected
    int64_t checked = 0;       // integrated pixels whose decision was recomputed
    int64_t wrong = 0;         // where the output differs from the rule's decision
    int64_t unverifiable = 0;  // corrected pixels no chain of open edges joins to an uncorrected one
};

// Section 4.1 recomputed from input and output: a corrected pixel's u before the correction
// follows from a chain of open edges to an uncorrected pixel (k(b) - k(a) = -n(a->b) held there), every
// other pixel's is its output; then every integrated pixel's decision from its neighbours within
// two pixels (its 5 x 5 window) of its own label (not 0) and their u before correction must be
// what the output shows (d = 0 where not flagged; u + 2 pi d where flagged). `keep`: the
// --reference pixel (never corrected), -1 for none.
inline constexpr int kRuleReach = 2, kRuleFewest = 5;  // the rule's numbers, written here again
static_assert(kRuleReach == kCorrectionReach && kRuleFewest == kCorrectionFewest,
              "section 4.1's rule changed: change its check here too");
inline CorrectionCheck check_cycle_correction(std::span<const float> phi, std::span<const float> u,
                                              std::span<const uint8_t> flags, std::span<const uint32_t> label,
                                              int64_t H, int64_t W, uint8_t corrected = kCycleCorrected,
                                              int64_t keep = -1) {
    CorrectionCheck c;
    const size_t n = static_cast<size_t>(H * W);
    std::vector<float> pre(u.begin(), u.end());
    std::vector<int64_t> d(n, 0);
    auto k_of = [&](size_t i) { return std::llround((static_cast<double>(u[i]) - phi[i]) / 6.283185307179586); };
    std::vector<char> known(n, 1);
    for (size_t a = 0; a < n; ++a)
        if ((flags[a] & corrected) && std::isfinite(u[a])) ++c.corrected, known[a] = 0;
    // Through open edges from pixels whose u before correction is known (uncorrected ones, then
    // corrected ones found so), until nothing more is found: corrections come in clusters.
    for (bool more = true; more;) {
        more = false;
        for (int64_t y = 0; y < H; ++y)
            for (int64_t x = 0; x < W; ++x) {
                const size_t a = static_cast<size_t>(y * W + x);
                if (known[a]) continue;
                // An open edge (a's own bits right and down; the neighbours' bits left and up).
                auto from = [&](int64_t yy, int64_t xx, bool open) {
                    if (known[a] || yy < 0 || yy >= H || xx < 0 || xx >= W || !open) return;
                    const size_t b = static_cast<size_t>(yy * W + xx);
                    if (!known[b] || !std::isfinite(u[b])) return;
                    const int64_t nab = std::lrint((phi[b] - phi[a]) * kInvTwoPiF);
                    const int64_t k_b = std::llround((static_cast<double>(pre[b]) - phi[b]) / 6.283185307179586);
                    const int64_t k_pre = k_b + nab;  // k(b) - k(a) = -n(a->b)
                    pre[a] = phi[a] + kTwoPiF * static_cast<float>(k_pre);
                    d[a] = k_of(a) - k_pre;
                    known[a] = 1, more = true;
                };
                from(y, x + 1, x + 1 < W && !(flags[a] & kBlockRight));
                from(y + 1, x, y + 1 < H && !(flags[a] & kBlockDown));
                from(y, x - 1, x > 0 && !(flags[a - 1] & kBlockRight));
                from(y - 1, x, y > 0 && !(flags[a - static_cast<size_t>(W)] & kBlockDown));
            }
    }
    for (size_t a = 0; a < n; ++a) c.unverifiable += !known[a];
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
            const size_t a = static_cast<size_t>(y * W + x);
            if (!std::isfinite(u[a]) || !known[a]) continue;
            std::vector<float> got;
            bool all_known = true;
            for (int dy = -kRuleReach; dy <= kRuleReach; ++dy)
                for (int dx = -kRuleReach; dx <= kRuleReach; ++dx) {
                    if (dy == 0 && dx == 0) continue;
                    const int64_t yy = y + dy, xx = x + dx;
                    if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                    const size_t b = static_cast<size_t>(yy * W + xx);
                    all_known = all_known && known[b];
                    if (label[b] == label[a] && std::isfinite(pre[b])) got.push_back(pre[b]);
                }
            if (!all_known) continue;
            ++c.checked;
            // The rule, written here again: median of the counted neighbours, float32.
            std::sort(got.begin(), got.end());
            const size_t cnt = got.size();
            int64_t want = 0;
            if (cnt >= static_cast<size_t>(kRuleFewest) && label[a] != 0 && static_cast<int64_t>(a) != keep) {
                const float med = (cnt & 1) ? got[cnt / 2] : (got[cnt / 2 - 1] + got[cnt / 2]) * 0.5f;
                want = static_cast<int64_t>(std::rint((med - pre[a]) * kInvTwoPiF));
            }
            const bool flagged = (flags[a] & corrected) != 0;
            if (flagged ? (want == 0 || d[a] != want || u[a] != pre[a] + kTwoPiF * static_cast<float>(want))
                        : want != 0)
                ++c.wrong;
        }
    return c;
}

}  // namespace tessera::testing
