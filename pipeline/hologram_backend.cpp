// Hologram engines of the two backends; see pipeline/hologram_backend.h.
#include "pipeline/hologram_backend.h"

#include <complex>
#include <stdexcept>
#include <vector>

#include "io/input_error.h"
#ifdef TESSERA_HAVE_CUDA
#include "kernels/cuda/hologram.h"
#endif

namespace tessera {

namespace {

// FFTW plan, field and reference in host memory: exactly the steps (and bits) of the CPU
// path, tessera::demodulate -> divide_by_reference -> wrapped_phase -> field_amplitude.
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

#ifdef TESSERA_HAVE_CUDA
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
#endif

}  // namespace

void check_hologram_backend(Backend backend) {
    if (backend != Backend::kCuda) return;
#ifdef TESSERA_HAVE_CUDA
    if (!cuda_backend_available()) throw InputError::everywhere("--backend cuda: no CUDA device is visible");
#else
    throw InputError::everywhere("--backend cuda: this tessera was built without the CUDA backend (TESSERA_CUDA=OFF)");
#endif
}

std::unique_ptr<HologramEngine> make_hologram_engine(Backend backend, int64_t rows, int64_t cols, int device) {
    switch (backend) {
        case Backend::kCpu:
            return std::make_unique<CpuHologramEngine>(rows, cols);
        case Backend::kCuda:
#ifdef TESSERA_HAVE_CUDA
            return std::make_unique<CudaHologramEngine>(rows, cols, device);
#else
            (void)device;
            throw std::runtime_error("this tessera was built without the CUDA backend (TESSERA_CUDA=OFF)");
#endif
    }
    throw std::logic_error("unknown backend");
}

}  // namespace tessera
