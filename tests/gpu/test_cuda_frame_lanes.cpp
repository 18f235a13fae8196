// Frame lanes on the CUDA backend (pipeline/frame_lanes.h): a batch over several lanes (streams)
// gives every frame the bits of that frame run alone on one lane; against the CPU lanes the
// result differs only by the FFT libraries' last bits (cuFFT vs FFTW, kernels/cuda/hologram.h).
// Every test skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "kernels/cuda/region.h"
#include "pipeline/frame_lanes.h"
#include "support/frame_runs.h"
#include "support/hologram_scene.h"
#include "support/gpu_skip.h"

namespace tessera {
namespace {

TEST(CudaFrameLanes, BatchOverStreamsEqualsOneByOneAndTracksTheCpu) {
    SKIP_WITHOUT_GPU();
    const int64_t H = 256, W = 320;
    std::vector<testing::SynthHologram> fs;
    for (int k = 0; k < 6; ++k) {
        testing::HologramSpec s;
        s.H = H, s.W = W;
        s.fy = 46.0 / 256, s.fx = 70.0 / 320;
        s.bump = 10.0 + k;
        s.bump_sigma = 64;
        s.noise = k % 2 ? 0.6 : 0.2;  // the noisier frames have residues
        s.seed = 300 + static_cast<uint64_t>(k);
        fs.push_back(testing::make_hologram(s));
    }
    FrameOptions opt;
    opt.unwrap.backend = Backend::kCuda;
    opt.tile_size = 100;
    opt.background_degree = 3;
    opt.lanes = 4;
    const auto batch = testing::run_kept(fs, {0, 1, 2, 3, 4, 5}, opt);
    ASSERT_EQ(batch.size(), 6u);
    FrameOptions cpu = opt;
    cpu.unwrap.backend = Backend::kCpu;
    cpu.lanes = 1;
    const auto ref = testing::run_kept(fs, {0, 1, 2, 3, 4, 5}, cpu);
    opt.lanes = 1;
    int64_t residues = 0;
    for (int64_t k = 0; k < 6; ++k) {
        const auto alone = testing::run_kept(fs, {k}, opt);
        const testing::KeptFrame& a = alone.at(k);
        const testing::KeptFrame& b = batch.at(k);
        testing::expect_same_frame(a, b, k);
        residues += b.view.stats.residues;
        const testing::KeptFrame& c = ref.at(k);
        EXPECT_EQ(b.view.carrier.row, c.view.carrier.row);
        EXPECT_EQ(b.view.carrier.col, c.view.carrier.col);
        double ss = 0;
        int64_t n = 0, same_label = 0;
        for (size_t i = 0; i < b.u.size(); ++i) {
            same_label += b.label[i] == c.label[i];
            if (std::isfinite(b.u[i]) && std::isfinite(c.u[i])) ss += (b.u[i] - c.u[i]) * double(b.u[i] - c.u[i]), ++n;
        }
        EXPECT_LT(std::sqrt(ss / static_cast<double>(n)), 1e-3) << "frame " << k << ": CUDA and CPU lanes drift apart";
        EXPECT_GT(same_label, static_cast<int64_t>(b.u.size()) * 999 / 1000) << "frame " << k;
    }
    std::printf("[ info     ] %lld residues over the frames\n", static_cast<long long>(residues));
}

}  // namespace
}  // namespace tessera
