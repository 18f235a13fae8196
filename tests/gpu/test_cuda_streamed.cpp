// Runs of the CUDA backend through the command line into files: streamed (issue 16,
// docs/ARCHITECTURE.md section 5.1; with a --gpu-memory-limit smaller than the scene's window the
// run goes in chunks) and in one piece, every dataset the CPU backend's in one piece, bit for bit. (2 ranks sharing the GPU in chunks: jobs/gpu/
// device_streamed.sh, under mpirun from the shell; an mpirun started from this MPI process fails.)
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>

#include "support/cli.h"
#include "support/gpu_skip.h"

namespace tessera {
namespace {

using testing::read_dataset;
using testing::run_tessera;

template <class T>
bool same_bits(const std::string& a, const std::string& b, const std::string& name) {
    const auto x = read_dataset<T>(a, name), y = read_dataset<T>(b, name);
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

// The phase, components and cycles of `dir`'s files `outputs` are cpu.h5's, bit for bit.
void expect_cpu_bits(const testing::TempDir& dir, std::initializer_list<const char*> outputs) {
    for (const char* o : outputs) {
        EXPECT_TRUE(same_bits<float>(dir / "cpu.h5", dir / o, "unwrapped_phase")) << o;
        EXPECT_TRUE(same_bits<uint32_t>(dir / "cpu.h5", dir / o, "connected_components")) << o;
        EXPECT_TRUE(same_bits<int32_t>(dir / "cpu.h5", dir / o, "cycles")) << o;
    }
}

TEST(CudaStreamed, GpuMemoryLimitGivesTheCpuBits) {
    SKIP_WITHOUT_GPU();
    testing::TempDir dir("cuda_streamed");
    ASSERT_EQ(run_tessera("synth --case holes --size 2048x1800 --seed 13 " + dir.path().string()).exit_code, 0);
    const std::string c = " --save-cycles --tile-size 128 --coherence " + (dir / "holes_coherence.tif") +
                          " --min-coherence 0.3 " + (dir / "holes_wrapped.tif") + " ";
    ASSERT_EQ(run_tessera("unwrap -q --backend cpu" + c + (dir / "cpu.h5")).exit_code, 0);
    // 2048 x 1800 x 24 B = 88 MB on the device in one piece: 32 MiB takes it in chunks.
    const auto plan = run_tessera("plan --backend cuda --tile-size 128 --gpu-memory-limit 32M " + (dir / "holes_wrapped.tif"));
    EXPECT_NE(plan.out.find("chunks of"), std::string::npos) << plan.out;
    const auto one = run_tessera("unwrap -q --backend cuda --gpu-memory-limit 32M" + c + (dir / "gpu.h5"));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    // Two chunks of 1024 rows (7 MB of phase each, inputs kept: page-locked once for all passes).
    const auto two = run_tessera("unwrap -q --backend cuda --chunk-rows 1024" + c + (dir / "gpu_rows.h5"));
    ASSERT_EQ(two.exit_code, 0) << two.err;
    expect_cpu_bits(dir, {"gpu.h5", "gpu_rows.h5"});
}

// In one piece the CUDA backend's run prepares its phase's dataset while the device works
// (Hdf5Writer::prepare_f32, docs section 7): the file holds the CPU backend's bits all the same,
// and with --compress-phase (nothing prepared) too.
TEST(CudaInOnePiece, PreparedOutputGivesTheCpuBits) {
    SKIP_WITHOUT_GPU();
    testing::TempDir dir("cuda_one_piece");
    ASSERT_EQ(run_tessera("synth --case holes --size 2048x1800 --seed 17 " + dir.path().string()).exit_code, 0);
    const std::string c = " --save-cycles --tile-size 128 --coherence " + (dir / "holes_coherence.tif") +
                          " --min-coherence 0.3 " + (dir / "holes_wrapped.tif") + " ";
    ASSERT_EQ(run_tessera("unwrap -q --backend cpu" + c + (dir / "cpu.h5")).exit_code, 0);
    const auto one = run_tessera("unwrap -q --backend cuda" + c + (dir / "gpu.h5"));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const auto packed = run_tessera("unwrap -q --backend cuda --compress-phase 1" + c + (dir / "gpu_deflated.h5"));
    ASSERT_EQ(packed.exit_code, 0) << packed.err;
    expect_cpu_bits(dir, {"gpu.h5", "gpu_deflated.h5"});
}

// The census (docs section 2.2) counts the phase after rows went up: where it takes the guide the
// region is given up and made again from the guide's source, and the result is the CPU's.
TEST(CudaInOnePiece, AutoGuideTakenAfterTheUploadGivesTheCpuBits) {
    SKIP_WITHOUT_GPU();
    testing::TempDir dir("cuda_auto_guide");
    ASSERT_EQ(run_tessera("synth --case noisy --size 1024x1200 --seed 19 " + dir.path().string()).exit_code, 0);
    const std::string c = " --save-cycles --tile-size 128 " + (dir / "noisy_wrapped.tif") + " ";
    ASSERT_EQ(run_tessera("unwrap -q --backend cpu" + c + (dir / "cpu.h5")).exit_code, 0);
    const auto one = run_tessera("unwrap -q --backend cuda" + c + (dir / "gpu.h5"));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(testing::root_attribute<int64_t>(dir / "gpu.h5", "guide_window", H5T_NATIVE_INT64), 5);
    EXPECT_EQ(testing::root_attribute<int64_t>(dir / "gpu.h5", "guide_auto", H5T_NATIVE_INT64), 1);
    expect_cpu_bits(dir, {"gpu.h5"});
}

// The host arrays of a run in one piece are touched while the device's context is made, before
// the GPU's free memory is known (docs section 5.1): where it then says chunks they go unused. The
// GPU is filled here, bar about 1.5 GB, so that an 8192² scene (1.6 GB in one piece) streams.
TEST(CudaInOnePiece, ArraysTouchedEarlyGoUnusedWhenTheGpuSaysChunks) {
    SKIP_WITHOUT_GPU();
    testing::TempDir dir("cuda_gpu_full");
    ASSERT_EQ(run_tessera("synth --case holes --size 8192x8192 --seed 23 " + dir.path().string()).exit_code, 0);
    const std::string c = " --save-cycles --tile-size 256 --coherence " + (dir / "holes_coherence.tif") +
                          " --min-coherence 0.3 " + (dir / "holes_wrapped.tif") + " ";
    ASSERT_EQ(run_tessera("unwrap -q --backend cpu" + c + (dir / "cpu.h5")).exit_code, 0);
    size_t free = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
    const size_t leave = size_t{3} << 29;
    void* taken = nullptr;
    ASSERT_EQ(cudaMalloc(&taken, free - leave), cudaSuccess);
    const auto run = run_tessera("unwrap --backend cuda" + c + (dir / "gpu.h5"));
    (void)cudaFree(taken);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.err.find("chunk(s) of"), std::string::npos) << run.err;  // the plan, printed at the start
    expect_cpu_bits(dir, {"gpu.h5"});
}

}  // namespace
}  // namespace tessera
