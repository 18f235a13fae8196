// run_frames (pipeline/frame_lanes.h) and the CPU backend's lane; the CUDA lane is in
// pipeline/frame_lane_cuda.cpp.
#include "pipeline/frame_lanes.h"

#include "backend/backend.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/cpu/region.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"
#include "partition/surface_fit.h"
#include "pipeline/frame_lane.h"
#include "pipeline/unwrap_stages.h"

namespace tessera {

namespace {

// FFTW demodulation, the CPU unwrapper and background fit; the stages' own OpenMP threads
// do the parallel work, so one CPU lane is the natural count.
class CpuFrameLane final : public FrameLane {
public:
    CpuFrameLane(int64_t rows, int64_t cols, const FrameOptions& opt)
        : opt_(opt), rows_(rows), cols_(cols), plan_(rows, cols), in_(n()), u_(n()),
          amplitude_(opt.demodulate_only && opt.amplitude ? n() : 0), flags_(opt.demodulate_only ? 0 : n()),
          label_(opt.demodulate_only ? 0 : n()) {}

    void process(int64_t index, const FrameSource& source, const FrameSink& sink) override {
        const float* src = source(index, in_.data());
        if (!src) return;  // skipped by the source
        FrameView v;
        v.index = index, v.rows = rows_, v.cols = cols_, v.u = u_.data();
        v.carrier = demodulate(plan_, opt_.hologram, src, plan_.field());
        wrapped_phase(plan_.field(), u_.data(), n());
        if (opt_.demodulate_only) {
            v.fit.degree = -1;
            if (opt_.amplitude) {
                field_amplitude(plan_.field(), amplitude_.data(), n());
                v.amplitude = amplitude_.data();
            }
            sink(v);
            return;
        }
        v.label = label_.data();
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
    std::vector<float> in_, u_, amplitude_;
    std::vector<uint8_t> flags_;
    std::vector<uint32_t> label_;
};

// opt.sink_on_caller: lanes hand each finished frame to the calling thread, which runs the
// sink while the lane waits (its buffers stay valid), then gets the sink's error back.
class CallerSink {
public:
    explicit CallerSink(int lanes) : running_(lanes) {}

    // Lane side: blocks until the caller has run the sink on `v`; rethrows the sink's error.
    void deliver(const FrameView& v) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return slot_ == nullptr; });
        slot_ = &v, served_ = false;
        cv_.notify_all();
        cv_.wait(lock, [&] { return served_; });
        std::exception_ptr e = std::exchange(error_, nullptr);
        slot_ = nullptr, served_ = false;
        cv_.notify_all();
        if (e) std::rethrow_exception(e);
    }
    void lane_done() {
        std::lock_guard<std::mutex> lock(mu_);
        --running_;
        cv_.notify_all();
    }
    // Caller side: runs the sink on every delivered frame until every lane is done.
    void serve(const FrameSink& sink) {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            cv_.wait(lock, [&] { return (slot_ && !served_) || running_ == 0; });
            if (!slot_ || served_) return;  // running_ == 0: no lane can deliver any more
            const FrameView* v = slot_;
            lock.unlock();
            std::exception_ptr e;
            try {
                sink(*v);
            } catch (...) {
                e = std::current_exception();
            }
            lock.lock();
            error_ = e, served_ = true;
            cv_.notify_all();
        }
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    const FrameView* slot_ = nullptr;  // the frame being handed over, one at a time
    bool served_ = false;
    std::exception_ptr error_;
    int running_;
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
    const BackendOps& ops = backend_ops(opt.unwrap.backend);
    std::vector<std::unique_ptr<FrameLane>> lanes;
    for (int l = 0; l < L; ++l)
        lanes.push_back(ops.frame_lane(rows, cols, opt, -1));
    std::mutex mu;
    int64_t failed_at = std::numeric_limits<int64_t>::max();
    std::exception_ptr failure;
    CallerSink handoff(L);
    const FrameSink to_caller = [&](const FrameView& v) { handoff.deliver(v); };
    const FrameSink& lane_sink = opt.sink_on_caller ? to_caller : sink;
    auto work = [&](int l) {
        for (int64_t i = l; i < n; i += L) {
            try {
                lanes[static_cast<size_t>(l)]->process(i, source, lane_sink);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mu);
                if (i < failed_at) failed_at = i, failure = std::current_exception();
                break;
            }
        }
        if (opt.sink_on_caller) handoff.lane_done();
    };
    if (L == 1 && !opt.sink_on_caller) {
        work(0);
    } else {
        std::vector<std::thread> threads;
        for (int l = 0; l < L; ++l) threads.emplace_back(work, l);
        if (opt.sink_on_caller) handoff.serve(sink);
        for (std::thread& t : threads) t.join();
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace tessera
