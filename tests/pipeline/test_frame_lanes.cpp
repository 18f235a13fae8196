// Frame lanes (pipeline/frame_lanes.h) on the CPU backend: a batch over several lanes gives every
// frame the bits of that frame run alone; the chain hologram -> unwrapped -> background-free
// recovers a phase object that needs unwrapping; the first failing frame's error comes back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/background.h"
#include "partition/comm.h"
#include "partition/surface_fit.h"
#include "pipeline/frame_lanes.h"
#include "support/frame_runs.h"
#include "support/hologram_scene.h"

namespace tessera {
namespace {


std::vector<testing::SynthHologram> frames(int n, int64_t H, int64_t W) {
    std::vector<testing::SynthHologram> out;
    for (int k = 0; k < n; ++k) {
        testing::HologramSpec s;
        s.H = H, s.W = W;
        s.bump = 10.0 + k;  // several cycles: it has to be unwrapped
        s.bump_sigma = static_cast<double>(std::min(H, W)) / 4;  // inside the sideband
        s.seed = 100 + static_cast<uint64_t>(k);
        out.push_back(testing::make_hologram(s));
    }
    return out;
}


TEST(FrameLanes, BatchEqualsOneByOneAndRecoversTheObject) {
    const int64_t H = 96, W = 128;
    const auto fs = frames(5, H, W);
    FrameOptions opt;
    opt.tile_size = 40;
    opt.background_degree = 2;
    opt.lanes = 3;
    const auto batch = testing::run_kept(fs, {0, 1, 2, 3, 4}, opt);
    ASSERT_EQ(batch.size(), 5u);
    opt.lanes = 1;
    for (int64_t k = 0; k < 5; ++k) {
        const auto alone = testing::run_kept(fs, {k}, opt);
        const testing::KeptFrame& a = alone.at(k);
        const testing::KeptFrame& b = batch.at(k);
        testing::expect_same_frame(a, b, k);
        const auto [lo, hi] = std::minmax_element(b.u.begin(), b.u.end());
        EXPECT_GT(*hi - *lo, 2 * testing::kPi) << "frame " << k << " did not need unwrapping";
        EXPECT_EQ(b.view.fit.degree, 2);
        // Against the truth with the same kind of surface removed: only noise remains.
        std::vector<float> truth(fs[static_cast<size_t>(k)].phase.begin(), fs[static_cast<size_t>(k)].phase.end());
        Comm comm = Comm::alone();
        const Window own{0, 0, H, W};
        const SurfaceFit tf = fit_surface(truth.data(), nullptr, nullptr, own, W, H, W, 2, comm);
        subtract_surface(truth.data(), nullptr, nullptr, own, W, H, W, tf);
        double ss = 0;
        int64_t used = 0;
        for (int64_t r = 8; r < H - 8; ++r)
            for (int64_t c = 8; c < W - 8; ++c) {
                const double d = b.u[static_cast<size_t>(r * W + c)] - truth[static_cast<size_t>(r * W + c)];
                ss += d * d, ++used;
            }
        EXPECT_LT(std::sqrt(ss / static_cast<double>(used)), 0.15) << "frame " << k;
    }
}

TEST(FrameLanes, TheLowestFailingFrameIsReported) {
    const auto fs = frames(1, 64, 64);
    FrameOptions opt;
    opt.lanes = 2;
    int64_t seen = 0;
    std::mutex mu;
    try {
        run_frames(
            6, 64, 64, opt,
            [&](int64_t i, float*) -> const float* {
                if (i == 3 || i == 4) throw std::runtime_error("frame " + std::to_string(i) + " is unreadable");
                return fs[0].intensity.data();
            },
            [&](const FrameView&) {
                std::lock_guard<std::mutex> lock(mu);
                ++seen;
            });
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "frame 3 is unreadable");
    }
    EXPECT_EQ(seen, 3);  // 0, 1, 2; lane 1 stopped at 3, lane 0 at 4
    EXPECT_THROW(run_frames(1, 1, 64, opt, nullptr, nullptr), std::invalid_argument);
}

// sink_on_caller: every sink call on the calling thread, one at a time, with the frame's own
// result; a frame the source skips (null) gets no sink call and its lane goes on; a sink error
// comes back from run_frames like a lane's.
TEST(FrameLanes, SinkOnCallerAndSkippedFrames) {
    const auto fs = frames(2, 64, 80);
    FrameOptions opt;
    opt.tile_size = 32;
    opt.lanes = 3;
    opt.sink_on_caller = true;
    opt.background_degree = -1;
    FrameOptions one = opt;
    one.lanes = 1;
    one.sink_on_caller = false;
    const auto alone = testing::run_kept(fs, {0, 1}, one);
    const std::thread::id caller = std::this_thread::get_id();
    std::vector<int64_t> sunk;
    bool elsewhere = false, mismatch = false;
    auto source = [&](int64_t i, float*) -> const float* {
        return i == 2 ? nullptr : fs[static_cast<size_t>(i % 2)].intensity.data();
    };
    auto sink = [&](const FrameView& v) {  // unsynchronised on purpose: it must run on the caller only
        elsewhere |= std::this_thread::get_id() != caller;
        const testing::KeptFrame& a = alone.at(v.index % 2);
        mismatch |= std::memcmp(a.u.data(), v.u, a.u.size() * sizeof(float)) != 0;
        sunk.push_back(v.index);
        if (v.index == 4) throw std::runtime_error("cannot write frame 4");
    };
    try {
        run_frames(8, 64, 80, opt, source, sink);
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "cannot write frame 4");
    }
    EXPECT_FALSE(elsewhere);
    EXPECT_FALSE(mismatch);
    std::sort(sunk.begin(), sunk.end());
    // Lane 0: 0 3 6; lane 1: 1 4 (its sink failed: 7 not processed); lane 2: 2 (skipped) 5.
    EXPECT_EQ(sunk, (std::vector<int64_t>{0, 1, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace tessera
