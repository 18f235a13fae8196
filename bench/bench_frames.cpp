// Frames per second of the frame lanes (pipeline/frame_lanes.h): off-axis holograms held in host
// memory (page-locked for the CUDA backend) -> wrapped phase -> unwrapped -> degree-2
// background removed -> unwrapped phase and labels back in host memory, transfers included
// (README "Frame batches"; issue 6 item 6).
//   tessera_bench_frames --size 1024 --backend cuda --frames 2000 --lanes "1 2 4 8"
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bench/device_parts.h"
#include "pipeline/frame_lanes.h"
#include "tests/support/hologram_scene.h"

using namespace tessera;

namespace {

// A frame's intensity in host memory, page-locked when asked (as a camera's ring buffer is).
struct HostFrame {
    float* p = nullptr;
    bool pinned = false;
    HostFrame(const std::vector<float>& v, bool pin) {
        if (pin && (p = static_cast<float*>(bench::pinned_alloc(v.size() * sizeof(float))))) pinned = true;
        if (!pinned) p = new float[v.size()];
        std::memcpy(p, v.data(), v.size() * sizeof(float));
    }
    ~HostFrame() {
        if (pinned) {
            bench::pinned_free(p);
            return;
        }
        delete[] p;
    }
    HostFrame(const HostFrame&) = delete;
    HostFrame& operator=(const HostFrame&) = delete;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int64_t size = 1024, frames = 200;
    int degree = 2, distinct = 8;
    std::string backend = "cpu", lanes_list = "1";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
        if (a == "--size") size = std::stoll(next());
        else if (a == "--frames") frames = std::stoll(next());
        else if (a == "--backend") backend = next();
        else if (a == "--lanes") lanes_list = next();
        else if (a == "--degree") degree = std::stoi(next());
    }
    FrameOptions opt;
    opt.unwrap.backend = backend == "cuda" ? Backend::kCuda : Backend::kCpu;
    opt.background_degree = degree;
    opt.tile_size = 512;
    // Distinct holograms: a phase object of several cycles, noise, a carrier on whole bins.
    std::vector<std::unique_ptr<HostFrame>> src;
    for (int k = 0; k < distinct; ++k) {
        testing::HologramSpec s;
        s.H = s.W = size;
        s.fy = std::round(0.18 * static_cast<double>(size)) / static_cast<double>(size);
        s.fx = std::round(0.22 * static_cast<double>(size)) / static_cast<double>(size);
        s.bump = 10.0 + k;
        s.bump_sigma = static_cast<double>(size) / 4;
        s.seed = 7 + static_cast<uint64_t>(k);
        src.push_back(std::make_unique<HostFrame>(testing::make_hologram(s).intensity, opt.unwrap.backend == Backend::kCuda));
    }
    const FrameSource source = [&](int64_t i, float*) -> const float* { return src[static_cast<size_t>(i % distinct)]->p; };
    std::atomic<int64_t> labelled{0};
    const FrameSink sink = [&](const FrameView& v) { labelled += v.label[v.rows * v.cols / 2] != 0; };

    // Single frames: one lane, one frame at a time (latency), after a warm-up.
    opt.lanes = 1;
    run_frames(2, size, size, opt, source, sink);
    std::vector<double> single;
    for (int r = 0; r < 7; ++r) {
        const auto t = std::chrono::steady_clock::now();
        run_frames(1, size, size, opt, source, sink);
        single.push_back(seconds_since(t));
    }
    std::sort(single.begin(), single.end());
    const double px = static_cast<double>(size) * static_cast<double>(size);
    std::printf("| %lld² | %s | single frame | 1 | %.2f ms | %.0f | %.0f |\n", static_cast<long long>(size),
                backend.c_str(), single[3] * 1e3, 1.0 / single[3], px / single[3] / 1e6);
    std::istringstream ls(lanes_list);
    for (int L; ls >> L;) {
        opt.lanes = L;
        run_frames(L, size, size, opt, source, sink);  // warm-up: every lane's plans and pools
        const auto t = std::chrono::steady_clock::now();
        run_frames(frames, size, size, opt, source, sink);
        const double s = seconds_since(t);
        std::printf("| %lld² | %s | batch of %lld | %d | %.2f ms/frame | %.0f | %.0f |\n", static_cast<long long>(size),
                    backend.c_str(), static_cast<long long>(frames), L, s / static_cast<double>(frames) * 1e3,
                    static_cast<double>(frames) / s, static_cast<double>(frames) * px / s / 1e6);
        std::fflush(stdout);
    }
    std::fprintf(stderr, "centre pixel labelled in %lld frames\n", static_cast<long long>(labelled.load()));
    MPI_Finalize();
    return 0;
}
