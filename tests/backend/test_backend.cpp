// The backend seam (backend/backend.h): --backend resolved in one place, each table usable or
// one line saying why not, and the CPU table's stages the unwrapper's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "app/synth.h"
#include "backend/backend.h"
#include "io/input_error.h"

namespace tessera {
namespace {

TEST(Backend, ResolvedInOnePlace) {
    EXPECT_EQ(resolve_backend("cpu"), Backend::kCpu);
    EXPECT_EQ(resolve_backend("cuda"), Backend::kCuda);
    const BackendOps* cuda = cuda_backend_ops();
    const bool gpu = cuda != nullptr && cuda->available();
    EXPECT_EQ(resolve_backend("auto"), gpu ? Backend::kCuda : Backend::kCpu);
    try {
        resolve_backend("gpu");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_TRUE(e.is_everywhere());
        EXPECT_EQ(std::string(e.what()), "--backend gpu: expected auto, cpu or cuda");
    }
    EXPECT_STREQ(backend_ops(Backend::kCpu).name, "cpu");
    EXPECT_STREQ(backend_name(Backend::kCuda), "cuda");
}

TEST(Backend, CudaWhereItCannotRunIsOneLine) {
    const BackendOps* cuda = cuda_backend_ops();
    if (cuda && cuda->available()) GTEST_SKIP() << "a GPU is visible: the CUDA table runs here";
    try {
        backend_ops(Backend::kCuda);
        FAIL() << "no error";
    } catch (const InputError& e) {
        const std::string m = e.what();
        EXPECT_TRUE(e.is_everywhere());
        EXPECT_EQ(m.rfind("--backend cuda: ", 0), 0u) << m;
        EXPECT_NE(m.find(cuda ? "no CUDA device is visible" : "built without the CUDA backend"), std::string::npos) << m;
    }
}

// The CPU table's region stages on a scene: the same bits as the driver's entry point.
TEST(Backend, CpuTableRunsTheUnwrapper) {
    const SynthScene s = make_scene("holes", 120, 130, 2);
    const size_t n = s.wrapped.size();
    auto run = [&](bool through_table) {
        std::vector<float> u(n);
        std::vector<uint8_t> flags(n);
        std::vector<uint32_t> label(n);
        for (size_t i = 0; i < n; ++i) {
            const bool ok = std::isfinite(s.wrapped[i]);
            u[i] = ok ? s.wrapped[i] : 0.0f;
            flags[i] = ok ? 0 : kInvalid;
        }
        RegionArrays a{s.rows, s.cols, Window{0, 0, s.rows, s.cols}, u.data(), flags.data(), label.data(), nullptr};
        UnwrapParams p;
        if (through_table) {
            Comm self(MPI_COMM_SELF);
            RankGrid grid;
            grid.tiles = TileGrid(s.rows, s.cols, 32);
            backend_ops(Backend::kCpu).unwrap_region(a, grid, self, p, nullptr, [](const char*) {}, {}, nullptr);
        } else {
            unwrap_image(a, 32, p);
        }
        return std::make_pair(u, label);
    };
    const auto [u1, l1] = run(true);
    const auto [u2, l2] = run(false);
    EXPECT_EQ(std::memcmp(u1.data(), u2.data(), n * sizeof(float)), 0);
    EXPECT_EQ(l1, l2);
    size_t labelled = 0;
    for (uint32_t l : l1) labelled += l != 0;
    EXPECT_GT(labelled, n / 2);  // it unwrapped something
}

}  // namespace
}  // namespace tessera
