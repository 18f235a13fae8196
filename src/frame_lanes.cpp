// run_frames (src/frame_lanes.h) and the CPU backend's lane; the CUDA lane is in
// src/frame_lane_cuda.cpp.
#include "src/frame_lanes.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cpu/region.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"
#include "src/frame_lane.h"
#include "src/unwrap_stages.h"

namespace tessera {

namespace {

// FFTW demodulation, the CPU unwrapper and background fit; the stages' own OpenMP threads
// do the parallel work, so one CPU lane is the natural count.
class CpuFrameLane final : public FrameLane {
public:
    CpuFrameLane(int64_t rows, int64_t cols, const FrameOptions& opt)
        : opt_(opt), rows_(rows), cols_(cols), plan_(rows, cols), in_(n()), u_(n()), flags_(n()), label_(n()) {}

    void process(int64_t index, const FrameSource& source, const FrameSink& sink) override {
        const float* src = source(index, in_.data());
        FrameView v;
        v.index = index, v.rows = rows_, v.cols = cols_, v.u = u_.data(), v.label = label_.data();
        v.carrier = demodulate(plan_, opt_.hologram, src, plan_.field());
        wrapped_phase(plan_.field(), u_.data(), n());
        std::fill(flags_.begin(), flags_.end(), uint8_t{0});
        RegionArrays a{rows_, cols_, Window{0, 0, rows_, cols_}, u_.data(), flags_.data(), label_.data(), nullptr};
        RankGrid grid;
        grid.tiles = TileGrid(rows_, cols_, opt_.tile_size);
        Comm comm = Comm::alone();
        cpu::Region region(a, grid.own(0), grid.tiles);
        v.stats = run_unwrap_stages(region, grid, comm, opt_.unwrap, nullptr, [](const char*) {});
        region.finish();
        v.fit.degree = -1;
        if (opt_.background_degree >= 0) {
            const Window own{0, 0, rows_, cols_};
            v.fit = fit_surface(u_.data(), nullptr, nullptr, own, cols_, rows_, cols_, opt_.background_degree, comm);
            subtract_surface(u_.data(), nullptr, nullptr, own, cols_, rows_, cols_, v.fit);
        }
        sink(v);
    }

private:
    size_t n() const { return static_cast<size_t>(rows_ * cols_); }
    FrameOptions opt_;
    int64_t rows_, cols_;
    HologramPlan plan_;
    std::vector<float> in_, u_;
    std::vector<uint8_t> flags_;
    std::vector<uint32_t> label_;
};

}  // namespace

std::unique_ptr<FrameLane> make_cpu_frame_lane(int64_t rows, int64_t cols, const FrameOptions& opt) {
    return std::make_unique<CpuFrameLane>(rows, cols, opt);
}

void run_frames(int64_t n, int64_t rows, int64_t cols, const FrameOptions& opt, const FrameSource& source,
                const FrameSink& sink) {
    if (rows < 2 || cols < 2) throw std::invalid_argument("frames must be at least 2 x 2 pixels");
    if (n <= 0) return;
    const int L = static_cast<int>(std::clamp<int64_t>(opt.lanes, 1, n));
    // The backend is chosen here, once (ARCHITECTURE.md section 5); lanes are made on the
    // calling thread, so CUDA lanes belong to its current device.
    std::vector<std::unique_ptr<FrameLane>> lanes;
    for (int l = 0; l < L; ++l)
        lanes.push_back(opt.unwrap.backend == Backend::kCuda ? make_cuda_frame_lane(rows, cols, opt, -1)
                                                             : make_cpu_frame_lane(rows, cols, opt));
    std::mutex mu;
    int64_t failed_at = std::numeric_limits<int64_t>::max();
    std::exception_ptr failure;
    auto work = [&](int l) {
        for (int64_t i = l; i < n; i += L) {
            try {
                lanes[static_cast<size_t>(l)]->process(i, source, sink);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mu);
                if (i < failed_at) failed_at = i, failure = std::current_exception();
                return;
            }
        }
    };
    if (L == 1) {
        work(0);
    } else {
        std::vector<std::thread> threads;
        for (int l = 0; l < L; ++l) threads.emplace_back(work, l);
        for (std::thread& t : threads) t.join();
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace tessera
