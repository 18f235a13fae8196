// --guide-window N (docs/ARCHITECTURE.md section 2.1): a few-look noisy phase unwrapped through
// the argument of its N x N averaged phasors. Checked from the input and the files: every
// result is the input phase plus whole cycles; on `tessera synth --case noisy` the per-region
// score rises (0.976 -> 0.997 at 384 x 448; 0.63 -> 0.992 at 1024²); the bits are the same for any tiles, chunks and
// reference handling; auto (section 2.2) takes the guide on the noisy scene and not on a
// topography scene, by a census written again here; a bad N is one line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "app/accuracy.h"
#include "app/synth.h"
#include "support/cli.h"

namespace tessera {
namespace {

using testing::read_dataset;
using testing::run_tessera;

struct Scene {
    testing::TempDir dir{"guide"};
    SynthScene s = make_scene("noisy", 384, 448, 23);
    std::string in = write_scene(s, dir.path().string());
    std::string coherence = dir / "noisy_coherence.tif";
};

// The score of quality.py: regions of truth with coherence >= 0.3.
double per_region(const std::vector<float>& u, const SynthScene& s) {
    std::vector<float> truth = s.truth;
    for (size_t i = 0; i < truth.size(); ++i)
        if (!(s.coherence[i] >= 0.3f)) truth[i] = NAN;
    return fraction_correct_per_region(u, truth, s.rows, s.cols).fraction();
}

TEST(GuideWindow, UnwrapsFewLookNoiseWithTheInputsOwnPhase) {
    Scene sc;
    const std::string plain = sc.dir / "plain.h5", guided = sc.dir / "guided.h5";
    const auto p = run_tessera("unwrap --tile-size 128 --guide-window 0 " + sc.in + " " + plain);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("warning: " + sc.in + ": residues on"), std::string::npos) << p.err;  // the hint of a noisy phase
    EXPECT_NE(p.err.find("--guide-window 5 may"), std::string::npos) << p.err;
    const auto g = run_tessera("unwrap --tile-size 128 --guide-window 5 " + sc.in + " " + guided);
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_NE(g.out.find("5x5 guide"), std::string::npos) << g.out;
    EXPECT_EQ(g.err.find("warning"), std::string::npos) << g.err;
    const auto u0 = read_dataset<float>(plain, "unwrapped_phase"), u1 = read_dataset<float>(guided, "unwrapped_phase");
    const double s0 = per_region(u0, sc.s), s1 = per_region(u1, sc.s);
    std::printf("[ accuracy ] noisy 384x448: %.5f without a guide, %.5f with --guide-window 5\n", s0, s1);
    EXPECT_LT(s0, 0.985);  // measured 0.9755: fenced pockets of the cuts through the noise
    EXPECT_GE(s1, 0.993);  // measured 0.9965
    // Every result is the input's own phase plus whole cycles (section 4's formula), everywhere valid.
    int64_t finite = 0;
    for (size_t i = 0; i < u1.size(); ++i) {
        if (!std::isfinite(u1[i])) continue;
        ++finite;
        const double cycles = (static_cast<double>(u1[i]) - sc.s.wrapped[i]) / (2 * M_PI);
        ASSERT_NEAR(cycles, std::round(cycles), 1e-4) << i;
    }
    EXPECT_EQ(finite, static_cast<int64_t>(u1.size()));
    EXPECT_EQ(testing::root_attribute<int64_t>(guided, "guide_window", H5T_NATIVE_INT64), 5);
    EXPECT_EQ(testing::root_attribute<int64_t>(plain, "guide_window", H5T_NATIVE_INT64), 0);
}

TEST(GuideWindow, SameBitsForAnyTilesChunksAndReference) {
    Scene sc;
    const std::string opts = "unwrap -q --guide-window 3 --save-cycles --coherence " + sc.coherence + " --min-coherence 0.3 ";
    const std::string one = sc.dir / "one.h5";
    ASSERT_EQ(run_tessera(opts + "--tile-size 512 " + sc.in + " " + one).exit_code, 0);
    const std::string ref_one = sc.dir / "ref_one.h5";
    ASSERT_EQ(run_tessera(opts + "--tile-size 64 --reference 200 300 " + sc.in + " " + ref_one).exit_code, 0);
    for (const std::string& how : {std::string("--tile-size 37"), std::string("--tile-size 64 --chunk-rows 64"),
                                   std::string("--tile-size 32 --chunk-rows 96 --reference 200 300")}) {
        SCOPED_TRACE(how);
        const std::string out = sc.dir / "x.h5";
        std::filesystem::remove(out);
        const auto r = run_tessera(opts + how + " " + sc.in + " " + out);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const std::string want = how.find("--reference") != std::string::npos ? ref_one : one;
        const auto a = read_dataset<float>(out, "unwrapped_phase"), b = read_dataset<float>(want, "unwrapped_phase");
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
        EXPECT_EQ(read_dataset<uint32_t>(out, "connected_components"), read_dataset<uint32_t>(want, "connected_components"));
        EXPECT_EQ(read_dataset<int32_t>(out, "cycles"), read_dataset<int32_t>(want, "cycles"));
    }
    const auto u = read_dataset<float>(ref_one, "unwrapped_phase");
    EXPECT_EQ(u[static_cast<size_t>(200 * sc.s.cols + 300)], 0.0f);  // --reference: u = 0 there, as without a guide
}

// The plaquettes of a wrapped phase with four finite pixels, and those whose wrapped differences
// around them do not sum to 0: section 2.2's census written again in double.
std::pair<int64_t, int64_t> residue_plaquettes(const std::vector<float>& w, int64_t H, int64_t W) {
    auto d = [&](int64_t a, int64_t b) { return std::remainder(static_cast<double>(w[b]) - w[a], 2 * M_PI); };
    int64_t all = 0, n = 0;
    for (int64_t r = 0; r + 1 < H; ++r)
        for (int64_t c = 0; c + 1 < W; ++c) {
            const int64_t a = r * W + c, b = a + 1, e = a + W + 1, f = a + W;
            if (!(std::isfinite(w[a]) && std::isfinite(w[b]) && std::isfinite(w[e]) && std::isfinite(w[f]))) continue;
            ++all;
            n += std::lround((d(a, b) + d(b, e) + d(e, f) + d(f, a)) / (2 * M_PI)) != 0;
        }
    return {all, n};
}

// --guide-window auto, the default (section 2.2): the noisy scene (residues on some 9 % of its
// plaquettes) takes the 5x5 guide, a topography scene (well under 5 %) none: the bits of the
// explicit runs, and the census in the attributes is the one written again here.
TEST(GuideWindow, AutoGuidesANoisyPhaseAndNothingElse) {
    Scene sc;
    testing::TempDir dir{"guide_auto"};
    const SynthScene topo = make_scene("topo", 300, 260, 23);
    const std::string topo_in = write_scene(topo, dir.path().string());
    struct Case {
        std::string in;
        const SynthScene* s;
        int want;
    };
    for (const Case& k : {Case{sc.in, &sc.s, 5}, Case{topo_in, &topo, 0}}) {
        SCOPED_TRACE(k.in);
        const std::string automatic = dir / "auto.h5", given = dir / "given.h5";
        std::filesystem::remove(automatic), std::filesystem::remove(given);
        const auto a = run_tessera("unwrap --tile-size 64 --save-cycles " + k.in + " " + automatic);
        ASSERT_EQ(a.exit_code, 0) << a.err;
        EXPECT_EQ(a.err.find("warning"), std::string::npos) << a.err;
        EXPECT_NE(a.out.find("residue census:"), std::string::npos) << a.out;
        const auto g = run_tessera("unwrap -q --tile-size 64 --save-cycles --guide-window " + std::to_string(k.want) + " " +
                                   k.in + " " + given);
        ASSERT_EQ(g.exit_code, 0) << g.err;
        const auto u = read_dataset<float>(automatic, "unwrapped_phase"), v = read_dataset<float>(given, "unwrapped_phase");
        ASSERT_EQ(u.size(), v.size());
        EXPECT_EQ(std::memcmp(u.data(), v.data(), u.size() * sizeof(float)), 0);
        EXPECT_EQ(read_dataset<int32_t>(automatic, "cycles"), read_dataset<int32_t>(given, "cycles"));
        EXPECT_EQ(testing::root_attribute<int64_t>(automatic, "guide_window", H5T_NATIVE_INT64), k.want);
        EXPECT_EQ(testing::root_attribute<int64_t>(automatic, "guide_auto", H5T_NATIVE_INT64), 1);
        EXPECT_EQ(testing::root_attribute<int64_t>(given, "guide_auto", H5T_NATIVE_INT64), 0);
        const auto [plaquettes, residues] = residue_plaquettes(k.s->wrapped, k.s->rows, k.s->cols);
        EXPECT_EQ(testing::root_attribute<int64_t>(automatic, "census_plaquettes", H5T_NATIVE_INT64), plaquettes);
        EXPECT_EQ(testing::root_attribute<int64_t>(automatic, "census_residues", H5T_NATIVE_INT64), residues);
        EXPECT_EQ(20 * residues > plaquettes, k.want == 5) << residues << " of " << plaquettes;
    }
}

TEST(GuideWindow, AnEvenOrTooLargeWindowIsOneLine) {
    Scene sc;
    for (const std::string& n : {std::string("4"), std::string("101"), std::string("automatic")}) {
        const std::string out = sc.dir / "bad.h5";
        const auto r = run_tessera("unwrap --guide-window " + n + " " + sc.in + " " + out);
        EXPECT_NE(r.exit_code, 0) << n;
        EXPECT_NE(r.err.find("--guide-window"), std::string::npos) << r.err;
        EXPECT_FALSE(std::filesystem::exists(out));
    }
}

}  // namespace
}  // namespace tessera
