// The CPU backend's table (backend/backend.h): host arrays, OpenMP, FFTW.
#include <complex>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "kernels/cpu/region.h"
#include "kernels/hologram.h"
#include "partition/clahe.h"
#include "pipeline/chunked_stages.h"
#include "pipeline/frame_lane.h"
#include "pipeline/hologram_backend.h"
#include "pipeline/region_stages.h"

namespace tessera {

namespace {

// FFTW plan, field and reference in host memory: demodulate -> divide_by_reference ->
// wrapped_phase -> field_amplitude.
class CpuHologramEngine final : public HologramEngine {
public:
    CpuHologramEngine(int64_t rows, int64_t cols) : plan_(rows, cols) {}

    CarrierPeak run(const HologramParams& p, const float* intensity, float* phase, float* amplitude) override {
        const int64_t n = plan_.rows() * plan_.cols();
        const CarrierPeak c = demodulate(plan_, p, intensity, plan_.field());
        if (!ref_.empty()) divide_by_reference(plan_.field(), ref_.data(), n);
        wrapped_phase(plan_.field(), phase, n);
        if (amplitude) field_amplitude(plan_.field(), amplitude, n);
        return c;
    }

    CarrierPeak keep_as_reference(const HologramParams& p, const float* intensity) override {
        const CarrierPeak c = demodulate(plan_, p, intensity, plan_.field());
        ref_.assign(plan_.field(), plan_.field() + plan_.rows() * plan_.cols());
        return c;
    }

private:
    HologramPlan plan_;
    std::vector<std::complex<float>> ref_;
};

// The arrays stay where they were read; the subtraction rewrites z in place.
class CpuSurfaceBand final : public SurfaceBand {
public:
    explicit CpuSurfaceBand(const SurfaceWindow& w, float* z) : w_(w), z_(z) {}
    double max_abs() override { return w_.max_abs(); }
    SurfaceMoments moments(int degree, int zexp) override { return w_.moments(degree, zexp); }
    ResidualSums subtract(const SurfaceFit& f) override {
        return subtract_surface(z_, w_.valid, w_.mask, w_.own, w_.stride, w_.H, w_.W, f);
    }

private:
    SurfaceWindow w_;
    float* z_;
};

const BackendOps kCpuOps{
    Backend::kCpu,
    "cpu",
    [] { return true; },
    [](int, int, int, bool) { return -1; },
    &region_stages<cpu::Region>,
    &unwrap_chunked<cpu::Region>,
    [] { return int64_t{-1}; },
    [](int64_t rows, int64_t cols, int) -> std::unique_ptr<HologramEngine> {
        return std::make_unique<CpuHologramEngine>(rows, cols);
    },
    [](int64_t rows, int64_t cols, const FrameOptions& opt, int) { return make_cpu_frame_lane(rows, cols, opt); },
    [](float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride, int64_t H,
       int64_t W) -> std::unique_ptr<SurfaceBand> {
        return std::make_unique<CpuSurfaceBand>(SurfaceWindow{z, valid, mask, own, stride, H, W}, z);
    },
    static_cast<ClaheRange (*)(const float*, const uint8_t*, const Window&, int64_t, int64_t, int64_t,
                               const ClaheParams&, Comm&, uint8_t*, int64_t)>(&clahe),
    static_cast<ClaheRange (*)(const float*, const uint8_t*, const Window&, int64_t, int64_t, int64_t,
                               const ClaheParams&, Comm&, uint16_t*, int64_t)>(&clahe),
    cpu::Region::kHostFreeInStages,
};

}  // namespace

const BackendOps& cpu_backend_ops() { return kCpuOps; }

}  // namespace tessera
