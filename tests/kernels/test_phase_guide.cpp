// The guide of docs/ARCHITECTURE.md section 2.1 (kernels/phase_guide.h): against the average of
// the phasors written again per pixel, and the same bits for any window the image is cut into.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/phase_guide.h"

namespace tessera {
namespace {

struct Image {
    int64_t H, W;
    std::vector<float> phase;
    std::vector<uint8_t> flags;
};

Image random_image(int64_t H, int64_t W, unsigned seed) {
    Image im{H, W, std::vector<float>(static_cast<size_t>(H * W)), std::vector<uint8_t>(static_cast<size_t>(H * W))};
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> ph(-3.14159f, 3.14159f);
    std::uniform_int_distribution<int> f(0, 9);
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const size_t i = static_cast<size_t>(r * W + c);
            // A ramp under noise, some invalid (phase 0, section 2) and some low-coherence pixels.
            const int pick = f(rng);
            im.flags[i] = pick == 0 ? kInvalid : pick == 1 ? kLowCoherence : 0;
            im.phase[i] = pick == 0 ? 0.0f : std::remainder(0.3f * r - 0.2f * c + 0.8f * ph(rng), 6.2831855f);
        }
    return im;
}

// The guide over `out`, from the image's pixels in `out` grown by `half` and clipped (as a run reads them).
std::vector<float> guide_of(const Image& im, const Window& out, int half) {
    const int64_t r0 = std::max<int64_t>(0, out.row0 - half), c0 = std::max<int64_t>(0, out.col0 - half);
    const Window in{r0, c0, std::min(im.H, out.row0 + out.rows + half) - r0, std::min(im.W, out.col0 + out.cols + half) - c0};
    std::vector<float> p(static_cast<size_t>(in.size()));
    std::vector<uint8_t> f(static_cast<size_t>(in.size()));
    for (int64_t r = 0; r < in.rows; ++r)
        for (int64_t c = 0; c < in.cols; ++c) {
            p[static_cast<size_t>(r * in.cols + c)] = im.phase[static_cast<size_t>((in.row0 + r) * im.W + in.col0 + c)];
            f[static_cast<size_t>(r * in.cols + c)] = im.flags[static_cast<size_t>((in.row0 + r) * im.W + in.col0 + c)];
        }
    std::vector<float> g(static_cast<size_t>(out.size()));
    guide_phase(p.data(), f.data(), in, out, half, g.data());
    return g;
}

TEST(PhaseGuide, IsTheArgumentOfTheWindowsReliablePhasors) {
    const Image im = random_image(47, 61, 3);
    for (int half : {1, 2, 3}) {
        const std::vector<float> g = guide_of(im, Window{0, 0, im.H, im.W}, half);
        for (int64_t r = 0; r < im.H; ++r)
            for (int64_t c = 0; c < im.W; ++c) {
                const size_t i = static_cast<size_t>(r * im.W + c);
                double x = 0, y = 0;
                int n = 0;
                for (int64_t rr = r - half; rr <= r + half; ++rr)
                    for (int64_t cc = c - half; cc <= c + half; ++cc) {
                        if (rr < 0 || cc < 0 || rr >= im.H || cc >= im.W) continue;
                        const size_t j = static_cast<size_t>(rr * im.W + cc);
                        if (im.flags[j] & kUnreliable) continue;
                        x += std::cos(im.phase[j]), y += std::sin(im.phase[j]), ++n;
                    }
                if (im.flags[i] & kInvalid) {
                    ASSERT_EQ(g[i], 0.0f) << r << "," << c;
                } else if (n == 0) {
                    ASSERT_EQ(g[i], im.phase[i]) << r << "," << c;  // nothing to average: its own phase
                } else if (std::hypot(x, y) > 1e-3) {
                    ASSERT_NEAR(std::remainder(g[i] - std::atan2(y, x), 2 * M_PI), 0.0, 1e-5) << r << "," << c << " half " << half;
                }
            }
    }
}

TEST(PhaseGuide, IsTheSameBitsForAnyWindowsOfTheImage) {
    const Image im = random_image(83, 97, 5);
    const int half = 2;
    const std::vector<float> whole = guide_of(im, Window{0, 0, im.H, im.W}, half);
    std::mt19937 rng(9);
    for (int t = 0; t < 40; ++t) {
        std::uniform_int_distribution<int64_t> rr(0, im.H - 1), cc(0, im.W - 1);
        const int64_t r0 = rr(rng), c0 = cc(rng);
        const Window w{r0, c0, std::uniform_int_distribution<int64_t>(1, im.H - r0)(rng),
                       std::uniform_int_distribution<int64_t>(1, im.W - c0)(rng)};
        const std::vector<float> part = guide_of(im, w, half);
        for (int64_t r = 0; r < w.rows; ++r)
            ASSERT_EQ(std::memcmp(part.data() + r * w.cols, whole.data() + (w.row0 + r) * im.W + w.col0, static_cast<size_t>(w.cols) * 4), 0)
                << "window " << w.row0 << "," << w.col0 << " " << w.rows << "x" << w.cols << " row " << r;
    }
}

TEST(PhaseGuide, CyclesBringThePhaseNearestTheGuide) {
    for (float phi : {-3.1f, -1.0f, 0.0f, 2.5f})
        for (float u : {-40.0f, -3.0f, 0.1f, 3.1f, 17.3f, 1000.2f}) {
            const int32_t k = guide_cycles(phi, u);
            const float v = phi + kTwoPiF * static_cast<float>(k);
            EXPECT_LE(std::fabs(static_cast<double>(v) - u), M_PI + 1e-3) << phi << " " << u;
        }
}

}  // namespace
}  // namespace tessera
