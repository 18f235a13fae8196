// The CUDA backend's frame lane (pipeline/frame_lane.h): one stream, one cuFFT plan, page-locked
// host buffers; hologram -> phase -> unwrapped -> background-free without leaving the device.
#include "backend/cuda/frame_lane_cuda.h"

#include <cuda_runtime_api.h>

#include <stdexcept>

#include "kernels/cuda/background.h"
#include "kernels/cuda/hologram.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/region.h"
#include "partition/comm.h"
#include "partition/cuda/surface_fit.h"
#include "partition/rank_grid.h"
#include "pipeline/unwrap_stages.h"

namespace tessera {

namespace {

template <class T>
T* pinned(size_t n) {
    void* p = nullptr;
    cuda::check(cudaMallocHost(&p, n * sizeof(T)), "frame lane (cudaMallocHost)");
    return static_cast<T*>(p);
}

class CudaFrameLane final : public FrameLane {
public:
    CudaFrameLane(int64_t rows, int64_t cols, const FrameOptions& opt, int device)
        : opt_(opt), rows_(rows), cols_(cols) {
        if (device < 0) cuda::check(cudaGetDevice(&device), "frame lane (cudaGetDevice)");
        device_ = device;
        cuda::check(cudaSetDevice(device_), "frame lane (cudaSetDevice)");
        try {
            cuda::check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "frame lane (cudaStreamCreate)");
            plan_ = std::make_unique<cuda::HologramPlan>(rows, cols, s_, device_);
            const size_t n = static_cast<size_t>(rows * cols);
            in_ = pinned<float>(n);
            u_ = pinned<float>(n);
            if (opt.demodulate_only && opt.amplitude) amplitude_ = pinned<float>(n);
            if (!opt.demodulate_only) {
                flags_ = pinned<uint8_t>(n);
                label_ = pinned<uint32_t>(n);
            }
        } catch (...) {
            release();
            throw;
        }
    }
    ~CudaFrameLane() override { release(); }
    CudaFrameLane(const CudaFrameLane&) = delete;
    CudaFrameLane& operator=(const CudaFrameLane&) = delete;

    void process(int64_t index, const FrameSource& source, const FrameSink& sink) override {
        cuda::check(cudaSetDevice(device_), "frame lane (cudaSetDevice)");  // per thread
        const float* src = source(index, in_);
        if (!src) return;  // skipped by the source
        plan_->upload(src);
        plan_->enqueue(opt_.hologram, false, amplitude_ != nullptr);
        FrameView v;
        v.index = index, v.rows = rows_, v.cols = cols_, v.u = u_;
        if (opt_.demodulate_only) {
            plan_->download(u_, amplitude_);
            v.carrier = plan_->frame_info().carrier;  // synchronises: u_ and amplitude_ are complete
            v.amplitude = amplitude_;
            v.fit.degree = -1;
            sink(v);
            return;
        }
        v.label = label_;
        RegionArrays a{rows_, cols_, Window{0, 0, rows_, cols_}, u_, flags_, label_, nullptr};
        RankGrid grid;
        grid.tiles = TileGrid(rows_, cols_, opt_.tile_size);
        Comm comm = Comm::alone();
        {
            // The demodulated phase is this frame's scratch: the Region works in it (no copy).
            cuda::Region region(a, grid.own(0), grid.tiles,
                                cuda::Region::DeviceInput{plan_->device_phase(), nullptr, s_, true});
            v.stats = run_unwrap_stages(region, grid, comm, opt_.unwrap, nullptr, [](const char*) {});
            v.fit.degree = -1;
            if (opt_.background_degree >= 0) {
                const cuda::Region::DeviceResult r = region.device_result();
                const Window own{0, 0, rows_, cols_};
                v.fit = cuda::fit_surface(r.u, nullptr, nullptr, own, r.u_stride, rows_, cols_,
                                          opt_.background_degree, comm, s_);
                cuda::subtract_surface(r.u, nullptr, nullptr, own, r.u_stride, rows_, cols_, v.fit, s_);
            }
            region.finish();
        }
        v.carrier = plan_->frame_info().carrier;
        sink(v);
    }

private:
    void release() noexcept {
        if (s_) (void)cudaStreamSynchronize(s_);
        plan_.reset();
        for (void* p : {static_cast<void*>(in_), static_cast<void*>(u_), static_cast<void*>(amplitude_),
                        static_cast<void*>(flags_), static_cast<void*>(label_)})
            if (p) (void)cudaFreeHost(p);
        in_ = u_ = amplitude_ = nullptr;
        flags_ = nullptr;
        label_ = nullptr;
        if (s_) (void)cudaStreamDestroy(s_);
        s_ = nullptr;
    }

    FrameOptions opt_;
    int64_t rows_, cols_;
    int device_ = 0;
    cudaStream_t s_ = nullptr;
    std::unique_ptr<cuda::HologramPlan> plan_;
    float *in_ = nullptr, *u_ = nullptr, *amplitude_ = nullptr;  // amplitude_: demodulate_only with amplitude
    uint8_t* flags_ = nullptr;
    uint32_t* label_ = nullptr;
};

}  // namespace

std::unique_ptr<FrameLane> make_cuda_frame_lane(int64_t rows, int64_t cols, const FrameOptions& opt, int device) {
    return std::make_unique<CudaFrameLane>(rows, cols, opt, device);
}

}  // namespace tessera
