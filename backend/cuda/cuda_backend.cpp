// The CUDA backend's table (backend/backend.h): device-resident regions, cuFFT, one GPU per rank.
#include <memory>
#include <stdexcept>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/frame_lane_cuda.h"
#include "kernels/cuda/background.h"
#include "kernels/cuda/hologram.h"
#include "kernels/cuda/region.h"
#include "partition/cuda/clahe.h"
#include "pipeline/hologram_backend.h"
#include "pipeline/chunked_stages.h"
#include "pipeline/region_stages.h"

namespace tessera {

namespace {

// cuFFT plan, field and reference on the GPU; only the intensity goes up and the phase (and
// amplitude) come down.
class CudaHologramEngine final : public HologramEngine {
public:
    CudaHologramEngine(int64_t rows, int64_t cols, int device) : plan_(rows, cols, nullptr, device) {}

    CarrierPeak run(const HologramParams& p, const float* intensity, float* phase, float* amplitude) override {
        return cuda::demodulate_phase(plan_, p, intensity, phase, amplitude).carrier;
    }

    CarrierPeak keep_as_reference(const HologramParams& p, const float* intensity) override {
        plan_.upload(intensity);
        plan_.enqueue(p);
        plan_.keep_field_as_reference();
        return plan_.frame_info().carrier;
    }

private:
    cuda::HologramPlan plan_;
};

// The window goes up once; the fit's local results come from the device, the subtraction
// downloads into the host z.
class CudaSurfaceBand final : public SurfaceBand {
public:
    CudaSurfaceBand(float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride, int64_t H,
                    int64_t W)
        : band_(z, valid, mask, own, stride, H, W) {}
    double max_abs() override { return band_.max_abs(); }
    SurfaceMoments moments(int degree, int zexp) override { return band_.moments(degree, zexp); }
    ResidualSums subtract(const SurfaceFit& f) override { return band_.subtract(f); }

private:
    cuda::SurfaceBand band_;
};

int select_device(int local_rank, int local_size, int requested, bool share) {
    const int n = cuda::device_count();
    if (n == 0) throw std::runtime_error("--backend cuda: no CUDA device is visible");
    if (requested >= n)
        throw std::runtime_error("--device " + std::to_string(requested) + ": only " + std::to_string(n) +
                                 " CUDA device(s) visible");
    if (requested < 0 && local_size > n && !share)
        throw std::runtime_error(std::to_string(local_size) + " ranks on this node but " + std::to_string(n) +
                                 " GPU(s): use fewer ranks per node, or --share-gpus");
    return cuda::select_device(requested >= 0 ? requested : local_rank);
}

const BackendOps kCudaOps{
    Backend::kCuda,
    "cuda",
    [] { return cuda::device_count() > 0; },
    &select_device,
    &region_stages<cuda::Region>,
    &unwrap_chunked<cuda::Region>,
    &cuda::device_free_bytes,
    [](int64_t rows, int64_t cols, int device) -> std::unique_ptr<HologramEngine> {
        return std::make_unique<CudaHologramEngine>(rows, cols, device);
    },
    &make_cuda_frame_lane,
    [](float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride, int64_t H,
       int64_t W) -> std::unique_ptr<SurfaceBand> {
        return std::make_unique<CudaSurfaceBand>(z, valid, mask, own, stride, H, W);
    },
    static_cast<ClaheRange (*)(const float*, const uint8_t*, const Window&, int64_t, int64_t, int64_t,
                               const ClaheParams&, Comm&, uint8_t*, int64_t)>(&cuda::clahe_from_host),
    static_cast<ClaheRange (*)(const float*, const uint8_t*, const Window&, int64_t, int64_t, int64_t,
                               const ClaheParams&, Comm&, uint16_t*, int64_t)>(&cuda::clahe_from_host),
    cuda::Region::kHostFreeInStages,
};

}  // namespace

const BackendOps* cuda_backend_ops() { return &kCudaOps; }

}  // namespace tessera
