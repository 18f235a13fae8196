// The residue census of docs/ARCHITECTURE.md section 2.2 (pipeline/noise_census.h): against
// charges written again from the wrapped differences around each plaquette, over every row of a
// small image and the sampled rows of a tall one, and the same counts for any windows the image
// is cut into (the ranks' own windows).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "io/phase_source.h"
#include "pipeline/noise_census.h"

namespace tessera {
namespace {

struct Image {
    int64_t H, W;
    std::vector<float> phase, coherence;
};

// A ramp under noise whose strength changes by rows, some NaN pixels and some of low coherence.
Image noisy_image(int64_t H, int64_t W, unsigned seed) {
    Image im{H, W, std::vector<float>(static_cast<size_t>(H * W)), std::vector<float>(static_cast<size_t>(H * W))};
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::uniform_int_distribution<int> pick(0, 19);
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const size_t i = static_cast<size_t>(r * W + c);
            const float noise = (r / 50) % 3 == 0 ? 2.8f : 0.4f;
            const int p = pick(rng);
            im.phase[i] = p == 0 ? NAN : std::remainder(0.2f * r + 0.1f * c + noise * u(rng), 6.2831855f);
            im.coherence[i] = p == 1 ? 0.1f : 0.8f;
        }
    return im;
}

// The census written again: a plaquette counts when its four pixels are finite with coherence of
// at least `thr`; its charge is the sum of the wrapped differences around it over 2 pi (double).
ResidueCensus oracle(const Image& im, float thr, bool (*row_counts)(int64_t)) {
    auto ok = [&](int64_t r, int64_t c) {
        const size_t i = static_cast<size_t>(r * im.W + c);
        return std::isfinite(im.phase[i]) && im.coherence[i] >= thr;
    };
    auto at = [&](int64_t r, int64_t c) { return static_cast<double>(im.phase[static_cast<size_t>(r * im.W + c)]); };
    auto wrapped = [](double d) { return std::remainder(d, 2 * M_PI); };
    ResidueCensus n;
    for (int64_t r = 0; r + 1 < im.H; ++r) {
        if (!row_counts(r)) continue;
        for (int64_t c = 0; c + 1 < im.W; ++c) {
            if (!(ok(r, c) && ok(r, c + 1) && ok(r + 1, c) && ok(r + 1, c + 1))) continue;
            const double loop = wrapped(at(r, c + 1) - at(r, c)) + wrapped(at(r + 1, c + 1) - at(r, c + 1)) +
                                wrapped(at(r + 1, c) - at(r + 1, c + 1)) + wrapped(at(r, c) - at(r + 1, c));
            ++n.plaquettes;
            n.residues += std::lround(loop / (2 * M_PI)) != 0;
        }
    }
    return n;
}

std::unique_ptr<PhaseSource> source_of(const Image& im, float thr) {
    MemoryInput in;
    in.H = im.H, in.W = im.W;
    in.phase = im.phase;
    in.coherence = im.coherence;
    in.min_coherence = thr;
    return memory_phase_source(in);
}

ResidueCensus over_windows(const PhaseSource& src, const std::vector<int64_t>& row_cuts, const std::vector<int64_t>& col_cuts) {
    ResidueCensus n;
    for (size_t i = 0; i + 1 < row_cuts.size(); ++i)
        for (size_t j = 0; j + 1 < col_cuts.size(); ++j)
            n += residue_census(src, Window{row_cuts[i], col_cuts[j], row_cuts[i + 1] - row_cuts[i], col_cuts[j + 1] - col_cuts[j]});
    return n;
}

TEST(NoiseCensus, EveryRowOfASmallImageAsWrittenAgain) {
    const Image im = noisy_image(300, 170, 7);
    for (const float thr : {0.0f, 0.5f}) {
        SCOPED_TRACE(thr);
        const ResidueCensus want = oracle(im, thr, [](int64_t) { return true; });
        ASSERT_GT(want.residues, 1000);
        ASSERT_LT(want.plaquettes, 299 * 169);  // the NaN pixels (and the low coherence) leave some out
        const auto src = source_of(im, thr);
        const ResidueCensus whole = residue_census(*src, Window{0, 0, 300, 170});
        EXPECT_EQ(whole.plaquettes, want.plaquettes);
        EXPECT_EQ(whole.residues, want.residues);
        // Cut into own windows as ranks are: the same counts.
        const ResidueCensus cut = over_windows(*src, {0, 1, 97, 299, 300}, {0, 64, 65, 170});
        EXPECT_EQ(cut.plaquettes, want.plaquettes);
        EXPECT_EQ(cut.residues, want.residues);
    }
}

TEST(NoiseCensus, RowsZeroTo511OfEvery8192OfATallImage) {
    const Image im = noisy_image(8900, 23, 11);
    const ResidueCensus want = oracle(im, 0.5f, [](int64_t r) { return r % 8192 < 512; });
    const auto src = source_of(im, 0.5f);
    const ResidueCensus whole = residue_census(*src, Window{0, 0, 8900, 23});
    EXPECT_EQ(whole.plaquettes, want.plaquettes);
    EXPECT_EQ(whole.residues, want.residues);
    EXPECT_LT(whole.plaquettes, 2 * 512 * 22);  // a sample, not every row
    const ResidueCensus cut = over_windows(*src, {0, 200, 1030, 4100, 8300, 8899, 8900}, {0, 11, 23});
    EXPECT_EQ(cut.plaquettes, want.plaquettes);
    EXPECT_EQ(cut.residues, want.residues);
}

TEST(NoiseCensus, AutoTakesTheGuideAboveFivePercent) {
    EXPECT_EQ(auto_guide_window({1000, 50}), 0);  // 5 % exactly: none
    EXPECT_EQ(auto_guide_window({1000, 51}), kAutoGuideWindow);
    EXPECT_EQ(auto_guide_window({0, 0}), 0);  // nothing valid
    EXPECT_EQ(kAutoGuideWindow, 5);
}

}  // namespace
}  // namespace tessera
