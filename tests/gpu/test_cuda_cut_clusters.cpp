// Section 3's rule on the device (kernels/cuda/cut_rule.h) against the host rule
// (kernels/cut_clusters.h, checked against the plain oracle in tests/partition/test_matching.cpp):
// the same cuts, bit for bit and in the same order, and the same counts, on random residue
// sets with lakes and on the synthetic scenes' residues.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "app/synth.h"
#include "kernels/cuda/cut_rule.h"
#include "kernels/cut_clusters.h"
#include "support/gpu_skip.h"
#include "support/random_residues.h"
#include "support/scene_clusters.h"

namespace tessera {
namespace {

using testing::random_residues;

void expect_device_equals_host(const std::vector<ClusterResidue>& res, int64_t H, int64_t W, int64_t R,
                               const std::string& what, const RoundTuning& tune = RoundTuning{}) {
    std::vector<Cut> expect;
    ClusterStats hs;
    cut_clusters(res, H, W, R, expect, hs);
    std::vector<Cut> got;
    ClusterStats ds;
    bool ran = false;
    try {
        ran = cuda::cut_clusters_on_device(res, H, W, R, got, ds, nullptr, tune);
    } catch (const std::exception& e) {
        FAIL() << what << " R " << R << ": " << e.what();
    }
    ASSERT_TRUE(ran) << what;
    ASSERT_EQ(got.size(), expect.size()) << what << " R " << R;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expect[i]) << what << " cut " << i << " R " << R;
    EXPECT_EQ(ds.pairs, hs.pairs) << what;
    EXPECT_EQ(ds.ground_cuts, hs.ground_cuts) << what;
    EXPECT_EQ(ds.lake_joins, hs.lake_joins) << what;
}

TEST(CudaCutClusters, RandomSetsWithLakesEqualTheHostRule) {
    SKIP_WITHOUT_GPU();
    std::vector<testing::ResidueCase> cases = testing::kRuleCases;
    cases.push_back({1000, 1200, 200000, 7, true, 10});  // large rounds and the one-block tail
    cases.push_back({2000, 2000, 60000, 8, false, 3});
    for (const testing::ResidueCase& cs : cases) {
        const auto res = testing::residue_case(cs);
        for (int64_t R : {int64_t{1}, int64_t{4}, int64_t{16}, int64_t{40}})
            expect_device_equals_host(res, cs.H, cs.W, R, "random seed " + std::to_string(cs.seed));
    }
    for (uint32_t seed : {11u, 12u, 13u}) {
        const auto res = testing::with_many_lakes(random_residues(400, 500, 40000, seed, true), seed + 7, 15, 300);
        for (int64_t R : {int64_t{2}, int64_t{16}}) expect_device_equals_host(res, 400, 500, R, "many lakes");
    }
}

// Small tunings: clusters of a few members park, hot sets of a few keys, closed roots woken
// by the scan; and a long serial tail (one charge wading through a field of +- pairs; with the
// default tuning its cluster parks after about 8000 rounds).
TEST(CudaCutClusters, ParkedClustersAndLongTailsEqualTheHostRule) {
    SKIP_WITHOUT_GPU();
    const RoundTuning tunings[] = {RoundTuning{}, RoundTuning{8, 4, 16, 2}, RoundTuning{64, 32, 128, 16, 0, 1},
                                   RoundTuning{2, 1, 2, 0}, RoundTuning{16384, 1024, 8192, 4096, 0, 1}};
    for (const RoundTuning& tune : tunings) {
        const std::string t = " big_min " + std::to_string(tune.big_min);
        for (const testing::ResidueCase& cs : testing::kRuleCases) {
            const auto res = testing::residue_case(cs);
            for (int64_t R : {int64_t{4}, int64_t{16}})
                expect_device_equals_host(res, cs.H, cs.W, R, "random seed " + std::to_string(cs.seed) + t, tune);
        }
        for (int lake_pct : {0, 3}) {
            const auto res = testing::pair_field_with_one_charge(400, 440, 4, 21u + static_cast<uint32_t>(lake_pct), lake_pct);
            for (int64_t R : {int64_t{3}, int64_t{16}}) expect_device_equals_host(res, 400, 440, R, "tail" + t, tune);
        }
    }
}

// The tail kernel's variants (kernels/cuda/cut_rounds.cu, chosen by the environment): every
// full search shared with the helper blocks (mode 4, the default, from one node); searches and
// full searches shared, thread walks (mode 3).
TEST(CudaCutClusters, TailKernelVariantsEqualTheHostRule) {
    SKIP_WITHOUT_GPU();
    struct Variant {
        const char *mode, *help_min, *warp_walk, *fuse_one;
    };
    // Helped from one node; mode 3 without warp walks; one open cluster's steps apart
    // (TESSERA_FUSE_ONE=0) with walks of 64 positions; mode 2 (loads through L2) fused, walks of 128.
    for (const Variant& v : {Variant{"4", "1", "1", "1"}, Variant{"3", "1", "0", "1"}, Variant{"4", "256", "2", "0"},
                             Variant{"2", "256", "4", "1"}}) {
        setenv("TESSERA_BLOCK_MODE", v.mode, 1), setenv("TESSERA_HELP_MIN", v.help_min, 1);
        setenv("TESSERA_WARP_WALK", v.warp_walk, 1), setenv("TESSERA_FUSE_ONE", v.fuse_one, 1);
        const std::string t = std::string(" mode ") + v.mode + " fuse " + v.fuse_one;
        for (const RoundTuning& tune : {RoundTuning{}, RoundTuning{8, 4, 16, 2}, RoundTuning{8, 4, 16, 2, 0, 1}}) {
            for (const testing::ResidueCase& cs : testing::kRuleCases)
                expect_device_equals_host(testing::residue_case(cs), cs.H, cs.W, 16, "random seed " + std::to_string(cs.seed) + t,
                                          tune);
            expect_device_equals_host(testing::pair_field_with_one_charge(400, 440, 4, 24u, 3), 400, 440, 16, "tail" + t, tune);
        }
    }
    unsetenv("TESSERA_BLOCK_MODE"), unsetenv("TESSERA_HELP_MIN"), unsetenv("TESSERA_WARP_WALK");
    unsetenv("TESSERA_FUSE_ONE");
}

// The forms above the one-block kernel (kernels/cuda/cut_rounds.cu): rounds on the cooperative
// grid (the default) and one kernel a step, with the one-block kernel's threshold lowered so
// that they run nearly every round, tails of many open clusters too (a mosaic's seams).
TEST(CudaCutClusters, WideRoundFormsEqualTheHostRule) {
    SKIP_WITHOUT_GPU();
    setenv("TESSERA_BLOCK_FROM", "8", 1);
    // Grid rounds with searches walked by warps (the default) and by a thread each; wide kernels.
    for (auto [grid, walk] : {std::pair{"1", "2"}, std::pair{"1", "0"}, std::pair{"0", "2"}}) {
        setenv("TESSERA_GRID_ROUNDS", grid, 1), setenv("TESSERA_WARP_WALK", walk, 1);
        const std::string t = std::string(" grid rounds ") + grid + " warp walk " + walk;
        for (const RoundTuning& tune : {RoundTuning{}, RoundTuning{8, 4, 16, 2}, RoundTuning{8, 4, 16, 2, 0, 1}}) {
            for (const testing::ResidueCase& cs : testing::kRuleCases)
                for (int64_t R : {int64_t{4}, int64_t{16}})
                    expect_device_equals_host(testing::residue_case(cs), cs.H, cs.W, R,
                                              "random seed " + std::to_string(cs.seed) + t, tune);
            expect_device_equals_host(testing::pair_field_with_one_charge(400, 440, 4, 25u, 3), 400, 440, 16, "tail" + t, tune);
        }
        const SynthScene base = make_scene("topo", 256, 256, 5);
        SynthScene m;  // 4 x 4 copies: seams of residues, many clusters open for many rounds
        m.rows = m.cols = 1024;
        m.wrapped.resize(1024 * 1024), m.coherence.resize(1024 * 1024), m.truth.resize(1024 * 1024);
        for (int64_t r = 0; r < 1024; ++r)
            for (int64_t c = 0; c < 1024; ++c) {
                const size_t to = static_cast<size_t>(r * 1024 + c), from = static_cast<size_t>((r % 256) * 256 + c % 256);
                m.wrapped[to] = base.wrapped[from], m.coherence[to] = base.coherence[from], m.truth[to] = base.truth[from];
            }
        const auto res = testing::scene_cluster_residues(m);
        for (const RoundTuning& tune : {RoundTuning{}, RoundTuning{16384, 1024, 8192, 4096, 0, 1}})
            expect_device_equals_host(res, m.rows, m.cols, 16, "topo mosaic" + t, tune);
    }
    unsetenv("TESSERA_BLOCK_FROM"), unsetenv("TESSERA_GRID_ROUNDS"), unsetenv("TESSERA_WARP_WALK");
}

// The cold pool (kernels/cut_rounds.h) on a 2 x 2 mosaic's seams, where most members of the
// many open clusters go cold: margins from none to every member above the minimum, in the
// default drivers and with every round on the grid or as kernels.
TEST(CudaCutClusters, ColdPoolEqualsTheHostRule) {
    SKIP_WITHOUT_GPU();
    const SynthScene base = make_scene("topo", 1024, 1024, 3);
    SynthScene m;
    m.rows = m.cols = 2048;
    m.wrapped.resize(2048 * 2048), m.coherence.resize(2048 * 2048);
    for (int64_t r = 0; r < 2048; ++r)
        for (int64_t c = 0; c < 2048; ++c) {
            const size_t to = static_cast<size_t>(r * 2048 + c), from = static_cast<size_t>((r % 1024) * 1024 + c % 1024);
            m.wrapped[to] = base.wrapped[from], m.coherence[to] = base.coherence[from];
        }
    const auto res = testing::scene_cluster_residues(m);
    struct Unset {  // the settings go with the test, even when it throws
        ~Unset() { unsetenv("TESSERA_BLOCK_FROM"), unsetenv("TESSERA_GRID_ROUNDS"); }
    } unset;
    for (auto [from, grid] : {std::pair{"", "1"}, std::pair{"8", "1"}, std::pair{"8", "0"}}) {
        if (*from) setenv("TESSERA_BLOCK_FROM", from, 1);
        setenv("TESSERA_GRID_ROUNDS", grid, 1);
        for (int margin : {8, 0, 1, 3, -1}) {
            RoundTuning tune;
            tune.cold_margin = margin, tune.cold_from = margin == 8 ? 64 : 1;
            expect_device_equals_host(res, m.rows, m.cols, 16,
                                      std::string("mosaic block from ") + from + " grid " + grid + " margin " + std::to_string(margin), tune);
        }
        unsetenv("TESSERA_BLOCK_FROM"), unsetenv("TESSERA_GRID_ROUNDS");
    }
}

TEST(CudaCutClusters, SceneResiduesEqualTheHostRule) {
    SKIP_WITHOUT_GPU();
    int with_residues = 0;
    for (const std::string& name : synth_case_names()) {
        const SynthScene s = make_scene(name, 1024, 1024, 3);
        const auto res = testing::scene_cluster_residues(s);
        if (res.empty()) continue;  // a smooth scene
        ++with_residues;
        for (int64_t R : {int64_t{4}, int64_t{16}}) expect_device_equals_host(res, s.rows, s.cols, R, name);
    }
    EXPECT_GE(with_residues, 3);
}

}  // namespace
}  // namespace tessera
