// kernels/cut_rounds_check.h on a hand-made state between rounds: whole, it names no fault; each
// kind of break it is meant to catch is named.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cut_rounds_check.h"

namespace tessera {
namespace {

// Residues 0..5, no lakes, the ground 6, before round 3: cluster 0 (members 0, 1, 2; 2 cold)
// open, cluster 3 (members 3, 4) parked, 5 closed alone.
struct HandState {
    static constexpr int32_t N = 7;
    std::vector<int32_t> label{0, 0, 0, 3, 3, 5, 6}, charge{1, 0, 0, -1, 0, 0, 0}, stamp{3, 0, 0, 3, 0, 0, 0};
    std::vector<int32_t> size{3, 1, 1, 2, 1, 1, 1}, link{0, 1, 2, 3, 4, 5, 6};
    std::vector<int32_t> active{0, 1}, open{0, 3}, pool{2}, bmem{3, 4};
    std::vector<uint64_t> key{10, 20, 50, 5, 6, RankKeys::kNone, RankKeys::kNone};
    std::vector<uint64_t> ctheta{40, RankKeys::kNone, RankKeys::kNone, RankKeys::kNone, RankKeys::kNone,
                                 RankKeys::kNone, RankKeys::kNone};
    RoundCounts c;

    std::string fault() {
        c.round = 3, c.open = static_cast<int32_t>(open.size()), c.active = static_cast<int32_t>(active.size());
        c.ccount = static_cast<int32_t>(pool.size()), c.csel = 0, c.big = 3, c.bcount = static_cast<int32_t>(bmem.size());
        RoundState s;
        s.n = 6, s.L = 0, s.G = 6;
        s.label = label.data(), s.charge = charge.data(), s.stamp = stamp.data(), s.size = size.data(), s.link = link.data();
        s.active[1] = active.data(), s.open[1] = open.data(), s.cpool[0] = pool.data(), s.bmem = bmem.data();
        s.key = key.data(), s.ctheta = ctheta.data(), s.counts = &c;
        return round_state_fault(s);
    }
};

TEST(CutRoundsCheck, AWholeStateHasNoFault) {
    HandState h;
    EXPECT_EQ(h.fault(), "");
}

TEST(CutRoundsCheck, NamesEachKindOfBreak) {
    struct Break {
        const char* named;
        std::function<void(HandState&)> make;
    };
    const std::vector<Break> breaks{
        {"node 1 twice (active)", [](HandState& h) { h.active = {0, 1, 1}; }},
        {"open cluster 0 stamped 4", [](HandState& h) { h.stamp[0] = 4; }},
        {"member 1 of open cluster 0 neither listed nor cold", [](HandState& h) { h.active = {0}; }},
        {"open cluster 0 not on the open list", [](HandState& h) { h.open = {3}; }},
        {"cold member 2 of cluster 0: its key below the cluster's ctheta", [](HandState& h) { h.ctheta[0] = 60; }},
        {"member 4 of the parked cluster 3 not parked", [](HandState& h) { h.bmem = {3}; }},
        {"node 5 of closed cluster 5 still listed", [](HandState& h) { h.active = {0, 1, 5}; }}};
    for (const Break& b : breaks) {
        HandState h;
        b.make(h);
        const std::string f = h.fault();
        EXPECT_NE(f.find(b.named), std::string::npos) << b.named << "; got: " << f;
    }
}

}  // namespace
}  // namespace tessera
