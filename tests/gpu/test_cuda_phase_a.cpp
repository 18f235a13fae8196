// Matching phase A's rounds on the device (cuda::Region::phase_a) against the host's
// (HostPhaseARounds) and best_candidate (kernels/cpu/residue_grid.cpp), state for state: random
// residue fields with multi-charge plaquettes, residues on the border plaquettes, dense fields
// full of equal weights (ties broken by ids), several D (pruning limits), cell sizes, areas
// (a rank's window with residues outside it), owned/halo splits and imported states; then
// match_residues with the device rounds against the host's, cut for cut. Every test skips
// without a GPU.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/region.h"
#include "kernels/phase_a.h"
#include "kernels/residue.h"
#include "kernels/residue_grid.h"
#include "partition/comm.h"
#include "partition/matching.h"
#include "partition/rank_grid.h"
#include "support/gpu_skip.h"
#include "support/random_residues.h"

namespace tessera {
namespace {

using testing::random_residues;

// A residue on every `step`-th plaquette (charge up to 2): equal weights everywhere.
std::vector<Residue> dense_residues(int64_t H, int64_t W, int64_t step, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<Residue> res;
    for (int64_t r = 0; r < H - 1; r += step)
        for (int64_t c = 0; c < W - 1; c += step) {
            const int mag = rng() % 5 == 0 ? 2 : 1;
            const int sign = rng() % 2 ? 1 : -1;
            for (int s = 0; s < mag; ++s)
                res.push_back({residue_id(r, c, W, s), static_cast<int32_t>(r), static_cast<int32_t>(c), sign});
        }
    return res;  // raster order: ids ascend
}

// A cuda::Region to get the device rounds from (its pixels play no part in matching).
struct TinyRegion {
    std::vector<float> phase = std::vector<float>(4, 0.0f);
    std::vector<uint8_t> flags = std::vector<uint8_t>(4, 0);
    std::vector<uint32_t> label = std::vector<uint32_t>(4, 0);
    RegionArrays a{2, 2, Window{0, 0, 2, 2}, phase.data(), flags.data(), label.data(), nullptr};
    cuda::Region region{a, Window{0, 0, 2, 2}, TileGrid(2, 2, 64)};
};

// Binds both implementations over `res` with a random owned/halo split and runs four rounds
// in which a growing share of residues is imported as taken and the rest as unsearched; after
// each search the states must agree with each other and with best_candidate, after each
// decide/commit the mates. Returns how many candidates were compared.
int64_t compare_rounds(PhaseARounds& dev, const std::vector<Residue>& res, const Window& area, int64_t cell,
                       int64_t limit, int64_t H, int64_t W, uint32_t seed, bool all_owned) {
    SCOPED_TRACE("area rows " + std::to_string(area.row0) + "+" + std::to_string(area.rows) + " cols " +
                 std::to_string(area.col0) + "+" + std::to_string(area.cols) + ", cell " + std::to_string(cell) +
                 ", limit " + std::to_string(limit) + (all_owned ? ", all owned" : ", owned/halo split"));
    std::mt19937 rng(seed);
    const size_t n = res.size();
    std::vector<uint8_t> owned(n);
    for (auto& o : owned) o = all_owned || rng() % 10 < 7;
    HostPhaseARounds host;
    host.bind(res, owned, area, cell, limit, H, W);
    dev.bind(res, owned, area, cell, limit, H, W);
    ResidueGrid grid;
    grid.build(res, {}, area, cell);
    std::vector<int32_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = static_cast<int32_t>(i);
    std::vector<uint8_t> taken(n, 0);
    int64_t compared = 0;
    for (int round = 0; round < 4; ++round) {
        if (round > 0) {
            // Import a state: a growing share taken, everything else unsearched.
            for (auto& t : taken) t = t || rng() % 4 == 0;
            std::vector<int32_t> partner(n, kPartnerUnsearched);
            host.import_states(all, partner.data(), taken.data());
            dev.import_states(all, partner.data(), taken.data());
        }
        const int64_t ah = host.search(), ad = dev.search();
        EXPECT_EQ(ad, ah) << "round " << round << ": active counts differ";
        std::vector<int32_t> ph(n), pd(n);
        std::vector<uint8_t> mh(n), md(n);
        host.export_states(all, ph.data(), mh.data());
        dev.export_states(all, pd.data(), md.data());
        for (size_t i = 0; i < n; ++i) {
            if (owned[i] && !mh[i]) {
                const Candidate ref = best_candidate(grid, res, mh.data(), static_cast<int32_t>(i), limit, H, W);
                EXPECT_EQ(ph[i], ref.partner);
            }
            if (pd[i] != ph[i] || md[i] != mh[i]) {
                ADD_FAILURE() << "round " << round << ", residue " << i << " (id " << res[i].id << "): device partner "
                              << pd[i] << " matched " << int(md[i]) << ", host partner " << ph[i] << " matched "
                              << int(mh[i]);
                return compared;
            }
            ++compared;
        }
        for (PhaseARounds* r : {static_cast<PhaseARounds*>(&host), &dev}) {
            r->decide(false);
            r->decide(true);
            r->commit();
        }
        std::vector<int32_t> qh(n), qd(n);
        host.mates(qh.data());
        dev.mates(qd.data());
        if (qd != qh) {
            ADD_FAILURE() << "round " << round << ": mates differ";
            return compared;
        }
    }
    return compared;
}

struct FieldCase {
    int64_t H, W;
    int count;
    uint32_t seed;
    bool clustered;
};

TEST(CudaPhaseA, DeviceRoundsEqualHostOnRandomFields) {
    SKIP_WITHOUT_GPU();
    TinyRegion tr;
    const std::unique_ptr<PhaseARounds> dev = tr.region.phase_a();
    int64_t compared = 0;
    for (const FieldCase fc : {FieldCase{40, 50, 60, 1, false}, FieldCase{64, 64, 300, 2, true},
                               FieldCase{100, 37, 200, 3, true}, FieldCase{128, 128, 500, 4, false},
                               FieldCase{2, 300, 40, 5, false}, FieldCase{300, 2, 40, 6, true},
                               FieldCase{200, 260, 900, 7, true}, FieldCase{517, 301, 4000, 8, false}}) {
        const std::vector<Residue> res = random_residues(fc.H, fc.W, fc.count, fc.seed, fc.clustered);
        ASSERT_FALSE(res.empty());
        SCOPED_TRACE("field " + std::to_string(fc.H) + "x" + std::to_string(fc.W) + " seed " + std::to_string(fc.seed));
        // The whole image, and a rank's area in the middle (residues outside it are not candidates).
        const Window whole{0, 0, fc.H, fc.W};
        const Window part{fc.H / 4, fc.W / 3, std::max<int64_t>(1, fc.H / 2), std::max<int64_t>(1, fc.W / 2)};
        for (const Window& area : {whole, part})
            for (int64_t cell : {int64_t{16}, int64_t{1}, int64_t{5}})
                for (int64_t limit : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{8}, int64_t{16}, int64_t{17},
                                      int64_t{64}, kNoWeight})
                    for (bool all_owned : {true, false}) {
                        compared += compare_rounds(*dev, res, area, cell, limit, fc.H, fc.W, fc.seed * 131 + 7, all_owned);
                        if (HasFailure()) return;
                    }
    }
    EXPECT_GT(compared, 100000);
}

TEST(CudaPhaseA, DeviceRoundsBreakEqualWeightTiesByIds) {
    SKIP_WITHOUT_GPU();
    TinyRegion tr;
    const std::unique_ptr<PhaseARounds> dev = tr.region.phase_a();
    uint32_t seed = 20;
    for (int64_t step : {int64_t{1}, int64_t{2}, int64_t{3}}) {
        const int64_t H = 70, W = 90;
        const std::vector<Residue> res = dense_residues(H, W, step, seed++);
        SCOPED_TRACE("dense, step " + std::to_string(step));
        for (int64_t limit : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{64}})
            for (int64_t cell : {int64_t{16}, int64_t{4}}) {
                compare_rounds(*dev, res, Window{0, 0, H, W}, cell, limit, H, W, seed * 7, true);
                compare_rounds(*dev, res, Window{10, 20, 35, 40}, cell, limit, H, W, seed * 11, false);
                if (HasFailure()) return;
            }
    }
}

TEST(CudaPhaseA, EmptySetsAndRebinding) {
    SKIP_WITHOUT_GPU();
    TinyRegion tr;
    const std::unique_ptr<PhaseARounds> dev = tr.region.phase_a();
    dev->bind({}, {}, Window{0, 0, 10, 10}, 16, 64, 10, 10);
    EXPECT_EQ(dev->search(), 0);
    dev->decide(false);
    dev->commit();
    // One residue: its only candidate is the ground (or none under a small limit).
    const std::vector<Residue> one = {{residue_id(4, 5, 10, 0), 4, 5, 1}};
    const std::vector<uint8_t> owned = {1};
    for (int64_t limit : {int64_t{1}, int64_t{4}, int64_t{5}, kNoWeight}) {
        dev->bind(one, owned, Window{0, 0, 10, 10}, 16, limit, 10, 10);
        EXPECT_EQ(dev->search(), limit >= 4 ? 1 : 0);
        dev->decide(false);
        dev->commit();
        int32_t mate = 0;
        dev->mates(&mate);
        // ground weight min(5, 5, 6, 4) = 4 (right)
        EXPECT_EQ(mate, limit >= 4 ? kPartnerGround : kPartnerNone) << "limit " << limit;
    }
}

// match_residues with the device rounds: the same cuts and statistics as with the host's.
TEST(CudaPhaseA, MatchResiduesWithDeviceRoundsEqualsHost) {
    SKIP_WITHOUT_GPU();
    TinyRegion tr;
    Comm self(MPI_COMM_SELF);
    for (const FieldCase fc : {FieldCase{64, 64, 300, 2, true}, FieldCase{128, 128, 500, 4, false},
                               FieldCase{2, 300, 40, 5, false}, FieldCase{200, 260, 900, 7, true},
                               FieldCase{517, 301, 6000, 9, true}}) {
        const std::vector<Residue> res = random_residues(fc.H, fc.W, fc.count, fc.seed, fc.clustered);
        RankGrid grid;
        grid.tiles = TileGrid(fc.H, fc.W, 16);
        for (int64_t D : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{64}, int64_t{100000}}) {
            SCOPED_TRACE("field " + std::to_string(fc.H) + "x" + std::to_string(fc.W) + " seed " +
                         std::to_string(fc.seed) + " D " + std::to_string(D));
            MatchStats sh, sd;
            const std::vector<Cut> host = match_residues(res, grid, D, self, sh);
            const std::unique_ptr<PhaseARounds> dev = tr.region.phase_a();
            const std::vector<Cut> got = match_residues(res, grid, D, self, sd, *dev);
            ASSERT_EQ(got.size(), host.size());
            for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], host[i]) << "cut " << i;
            EXPECT_EQ(sd.residues, sh.residues);
            EXPECT_EQ(sd.rounds, sh.rounds);
            EXPECT_EQ(sd.phase_a_pairs, sh.phase_a_pairs);
            EXPECT_EQ(sd.phase_a_ground, sh.phase_a_ground);
            EXPECT_EQ(sd.leftovers, sh.leftovers);
            EXPECT_EQ(sd.phase_b_pairs, sh.phase_b_pairs);
            EXPECT_EQ(sd.phase_b_ground, sh.phase_b_ground);
        }
    }
}

}  // namespace
}  // namespace tessera
