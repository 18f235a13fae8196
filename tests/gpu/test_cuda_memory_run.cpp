// The run between arrays in memory (the Python module's: the memory phase source in, the memory
// result sink out, run_unwrap writing no file) on the CUDA backend: the CPU backend's result,
// bit for bit; and `auto` picks CUDA where a GPU is visible. Skips, saying why, without a GPU.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <vector>

#include "app/synth.h"
#include "backend/backend.h"
#include "io/phase_source.h"
#include "io/result_sink.h"
#include "pipeline/unwrap_pipeline.h"
#include "support/gpu_skip.h"

namespace tessera {
namespace {

struct Arrays {
    std::vector<float> u;
    std::vector<uint32_t> label;
};

Arrays run_into_arrays(const MemoryInput& in, Backend b, int64_t tile) {
    UnwrapOptions opt;
    opt.input = "array";
    opt.backend = b;
    opt.tile_size = tile;
    opt.min_coherence = in.min_coherence;
    opt.quiet = true;
    Arrays a{std::vector<float>(static_cast<size_t>(in.H * in.W)), std::vector<uint32_t>(static_cast<size_t>(in.H * in.W))};
    MemoryResult r{in.H, in.W, a.u, a.label, {}, {}};
    const auto source = memory_phase_source(in);
    run_unwrap(opt, *source, r, MPI_COMM_SELF);
    return a;
}

TEST(CudaMemoryRun, ArraysInAndOutAreTheCpuResult) {
    SKIP_WITHOUT_GPU();
    EXPECT_EQ(resolve_backend("auto"), Backend::kCuda);
    for (const char* name : {"holes", "topo"}) {
        const SynthScene s = make_scene(name, 700, 900, 11);
        std::vector<std::complex<double>> ifg(s.wrapped.size());
        for (size_t i = 0; i < ifg.size(); ++i)
            ifg[i] = std::isfinite(s.wrapped[i]) ? std::polar(0.5 + s.coherence[i], static_cast<double>(s.wrapped[i]))
                                                 : std::complex<double>(0, 0);
        for (bool complex : {false, true}) {
            MemoryInput in;
            in.H = s.rows, in.W = s.cols;
            if (complex) in.ifg64 = ifg; else in.phase = s.wrapped;
            in.coherence = s.coherence, in.min_coherence = 0.3f;
            const Arrays cpu = run_into_arrays(in, Backend::kCpu, 512);
            for (int64_t tile : {128, 512}) {
                const Arrays gpu = run_into_arrays(in, Backend::kCuda, tile);
                const std::string what = std::string(name) + (complex ? " complex128" : " float32") + " tile " +
                                         std::to_string(tile);
                EXPECT_EQ(std::memcmp(cpu.u.data(), gpu.u.data(), cpu.u.size() * 4), 0) << what;
                EXPECT_EQ(cpu.label, gpu.label) << what;
            }
            int64_t labelled = 0;
            for (uint32_t l : cpu.label) labelled += l != 0;
            EXPECT_GT(labelled, s.rows * s.cols / 2) << name;  // not an empty comparison
        }
    }
}

}  // namespace
}  // namespace tessera
