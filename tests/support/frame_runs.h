// Test support: runs synthetic holograms through run_frames (pipeline/frame_lanes.h) and keeps
// every frame's result, for the CPU and CUDA frame-lane tests.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "pipeline/frame_lanes.h"
#include "support/hologram_scene.h"

namespace tessera::testing {

struct KeptFrame {
    std::vector<float> u;
    std::vector<uint32_t> label;
    FrameView view;
};

// Frame i of the run is fs[which[i]]; results keyed by that index.
inline std::map<int64_t, KeptFrame> run_kept(const std::vector<SynthHologram>& fs, const std::vector<int64_t>& which,
                                             const FrameOptions& opt) {
    std::map<int64_t, KeptFrame> out;
    std::mutex mu;
    const int64_t H = fs[0].H, W = fs[0].W;
    run_frames(
        static_cast<int64_t>(which.size()), H, W, opt,
        [&](int64_t i, float*) { return fs[static_cast<size_t>(which[static_cast<size_t>(i)])].intensity.data(); },
        [&](const FrameView& v) {
            std::lock_guard<std::mutex> lock(mu);
            KeptFrame& k = out[which[static_cast<size_t>(v.index)]];
            k.u.assign(v.u, v.u + H * W);
            k.label.assign(v.label, v.label + H * W);
            k.view = v;
        });
    return out;
}

// Frame k alone (a) and in a batch (b): the same unwrapped bytes and labels, no conflict.
inline void expect_same_frame(const KeptFrame& a, const KeptFrame& b, int64_t k) {
    EXPECT_EQ(std::memcmp(a.u.data(), b.u.data(), a.u.size() * sizeof(float)), 0) << "frame " << k;
    EXPECT_EQ(a.label, b.label) << "frame " << k;
    EXPECT_EQ(b.view.stats.conflicts, 0);
}

}  // namespace tessera::testing
