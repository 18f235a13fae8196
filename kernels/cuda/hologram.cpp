// cuda::HologramPlan: cuFFT plans, device buffers and the order of the stages on the plan's
// stream (host side, g++); the kernels are in hologram.cu. See kernels/cuda/hologram.h.
#include "kernels/cuda/hologram.h"
#include "kernels/invariant.h"

#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cuda/hologram_kernels.h"
#include "kernels/cuda/hologram_math.h"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

const char* cufft_error_name(cufftResult r) {
    switch (r) {
        case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
        case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
        case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
        case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
        case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
        case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
        case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
        case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
        case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
        case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
        case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
        case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
        case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
        default: return "unknown cuFFT error";
    }
}

void check_fft(cufftResult r, const char* what) {
    if (r != CUFFT_SUCCESS)
        throw std::runtime_error(std::string("cuFFT error in ") + what + ": " + cufft_error_name(r) + " (" +
                                 std::to_string(static_cast<int>(r)) + ")");
}

// Makes `device` current for a scope and restores the caller's device.
class DeviceScope {
public:
    explicit DeviceScope(int device) : want_(device) {
        check(cudaGetDevice(&prev_), "cudaGetDevice");
        if (prev_ != want_) check(cudaSetDevice(want_), "cudaSetDevice");
    }
    ~DeviceScope() {
        if (prev_ != want_) (void)cudaSetDevice(prev_);
    }
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

private:
    int prev_ = 0, want_ = 0;
};

template <class T>
T* device_alloc(size_t count, const char* what) {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)), what);
    return static_cast<T*>(p);
}

}  // namespace

struct HologramPlan::Impl {
    int64_t H = 0, W = 0, n = 0, nh = 0;
    int device = 0;
    cudaStream_t s = nullptr;
    bool own_stream = false;
    cufftHandle fwd = 0, inv = 0;
    bool have_fwd = false, have_inv = false;
    void* work = nullptr;             // one cuFFT work area for both plans (same stream: never concurrent)
    float* in = nullptr;              // n
    float2* half = nullptr;           // H x (W/2+1)
    float2* field = nullptr;          // n: the sideband spectrum, then (inverse in place) the field
    float* phase = nullptr;           // n
    float* amp = nullptr;             // n, allocated by the first enqueue() asking for it
    float2* ref = nullptr;            // n, the reference field
    DeviceCarrier* d_car = nullptr;   // the device's carrier of the last frame
    DeviceCarrier* h_car = nullptr;   // pinned host copy, filled in stream order after each frame
    bool enqueued = false, last_detected = false, last_amp = false;

    Impl(int64_t rows, int64_t cols, cudaStream_t stream, int dev) : H(rows), W(cols) {
        check_hologram_size(rows, cols);  // cuFFT's 32-bit sizes, 32-bit shifted indices in the carrier key
        n = H * W;
        nh = H * (W / 2 + 1);
        if (dev < 0) check(cudaGetDevice(&dev), "cudaGetDevice");
        device = dev;
        DeviceScope scope(device);
        try {
            if (stream) {
                s = stream;
            } else {
                check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
                own_stream = true;
            }
            in = device_alloc<float>(static_cast<size_t>(n), "cudaMalloc hologram intensity");
            half = device_alloc<float2>(static_cast<size_t>(nh), "cudaMalloc hologram spectrum");
            field = device_alloc<float2>(static_cast<size_t>(n), "cudaMalloc hologram field");
            phase = device_alloc<float>(static_cast<size_t>(n), "cudaMalloc hologram phase");
            d_car = device_alloc<DeviceCarrier>(1, "cudaMalloc hologram carrier");
            void* h = nullptr;
            check(cudaMallocHost(&h, sizeof(DeviceCarrier)), "cudaMallocHost hologram carrier");
            h_car = static_cast<DeviceCarrier*>(h);
            *h_car = DeviceCarrier{};
            // Defined contents before the first frame: an enqueue() before any upload(), or a
            // download() before any enqueue(), reads zeros, never uninitialised memory.
            check(cudaMemsetAsync(in, 0, static_cast<size_t>(n) * sizeof(float), s), "cudaMemset intensity");
            check(cudaMemsetAsync(field, 0, static_cast<size_t>(n) * sizeof(float2), s), "cudaMemset field");
            check(cudaMemsetAsync(phase, 0, static_cast<size_t>(n) * sizeof(float), s), "cudaMemset phase");
            check(cudaMemsetAsync(d_car, 0, sizeof(DeviceCarrier), s), "cudaMemset carrier");
            // Plans without their own work areas: one area of the larger size serves both.
            const int h32 = static_cast<int>(H), w32 = static_cast<int>(W);
            size_t ws_fwd = 0, ws_inv = 0;
            check_fft(cufftCreate(&fwd), "cufftCreate (forward)");
            have_fwd = true;
            check_fft(cufftSetAutoAllocation(fwd, 0), "cufftSetAutoAllocation (forward)");
            check_fft(cufftMakePlan2d(fwd, h32, w32, CUFFT_R2C, &ws_fwd), "cufftMakePlan2d (R2C)");
            check_fft(cufftCreate(&inv), "cufftCreate (inverse)");
            have_inv = true;
            check_fft(cufftSetAutoAllocation(inv, 0), "cufftSetAutoAllocation (inverse)");
            check_fft(cufftMakePlan2d(inv, h32, w32, CUFFT_C2C, &ws_inv), "cufftMakePlan2d (C2C)");
            const size_t ws = std::max(ws_fwd, ws_inv);
            if (ws > 0) check(cudaMalloc(&work, ws), "cudaMalloc cuFFT work area");
            if (work) {
                check_fft(cufftSetWorkArea(fwd, work), "cufftSetWorkArea (forward)");
                check_fft(cufftSetWorkArea(inv, work), "cufftSetWorkArea (inverse)");
            }
            check_fft(cufftSetStream(fwd, s), "cufftSetStream (forward)");
            check_fft(cufftSetStream(inv, s), "cufftSetStream (inverse)");
            check(cudaStreamSynchronize(s), "hologram plan (sync)");
        } catch (...) {
            release();
            throw;
        }
    }

    ~Impl() {
        // DeviceScope without throwing: frees happen on the plan's device.
        int prev = -1;
        if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
        if (prev != device) (void)cudaSetDevice(device);
        release();
        if (prev >= 0 && prev != device) (void)cudaSetDevice(prev);
        (void)cudaGetLastError();
    }

    void release() noexcept {
        if (s) (void)cudaStreamSynchronize(s);
        if (have_fwd) (void)cufftDestroy(fwd);
        if (have_inv) (void)cufftDestroy(inv);
        have_fwd = have_inv = false;
        for (void* p : {work, static_cast<void*>(in), static_cast<void*>(half), static_cast<void*>(field),
                        static_cast<void*>(phase), static_cast<void*>(amp), static_cast<void*>(ref),
                        static_cast<void*>(d_car)})
            if (p) (void)cudaFree(p);
        work = nullptr;
        in = nullptr;
        half = nullptr;
        field = nullptr;
        phase = nullptr;
        amp = nullptr;
        ref = nullptr;
        d_car = nullptr;
        if (h_car) (void)cudaFreeHost(h_car);
        h_car = nullptr;
        if (own_stream && s) (void)cudaStreamDestroy(s);
        s = nullptr;
    }

    void enqueue(const HologramParams& p, bool divide, bool want_amp) {
        // Every check before anything is enqueued: a throw leaves the stream as it was.
        const bool detect = !p.carrier;
        int64_t crow = -1, ccol = -1;
        double dc2 = 0;
        if (!detect) {
            crow = p.carrier->first;
            ccol = p.carrier->second;
            if (crow < 0 || crow >= H || ccol < 0 || ccol >= W)
                throw std::invalid_argument("carrier (" + std::to_string(crow) + ", " + std::to_string(ccol) +
                                            ") is outside the " + std::to_string(H) + "x" + std::to_string(W) +
                                            " (rows x cols) spectrum");
        } else {
            const double dc = dc_exclusion_radius(p, H, W);
            if (carrier_search_is_empty(H, W, dc))
                throw std::invalid_argument("DC exclusion radius " + std::to_string(dc) +
                                            " leaves no frequency to search for the carrier");
            dc2 = dc * dc;
        }
        TESSERA_INVARIANT(!divide || ref, "cuda::HologramPlan: division without a reference field");
        DeviceScope scope(device);
        if (want_amp && !amp) amp = device_alloc<float>(static_cast<size_t>(n), "cudaMalloc hologram amplitude");
        const float scale = 1.0f / static_cast<float>(H * W);  // as the CPU: cuFFT is unnormalised too
        check_fft(cufftExecR2C(fwd, in, reinterpret_cast<cufftComplex*>(half)), "cufftExecR2C");
        if (detect) {
            check(cudaMemsetAsync(&d_car->key, 0, sizeof(d_car->key), s), "cudaMemset carrier key");
            carrier_search(half, H, W, dc2, &d_car->key, s);
        }
        carrier_finish(half, H, W, detect, crow, ccol, p.filter_radius, d_car, s);
        sideband(half, d_car, H, W, scale, p.window == SidebandWindow::kHann, field, s);
        check_fft(cufftExecC2C(inv, reinterpret_cast<cufftComplex*>(field), reinterpret_cast<cufftComplex*>(field),
                               CUFFT_INVERSE),
                  "cufftExecC2C (inverse)");
        finish_field(field, divide ? ref : nullptr, phase, want_amp ? amp : nullptr, n, s);
        check(cudaMemcpyAsync(h_car, d_car, sizeof(DeviceCarrier), cudaMemcpyDeviceToHost, s), "download carrier");
        enqueued = true;
        last_detected = detect;
        last_amp = want_amp;
    }

    HologramFrameInfo info() {
        TESSERA_INVARIANT(enqueued, "cuda::HologramPlan: frame_info() before any frame");
        DeviceScope scope(device);
        check(cudaStreamSynchronize(s), "hologram (sync)");
        const DeviceCarrier c = *h_car;
        if (c.row < 0)
            throw std::invalid_argument("no carrier found: every spectral magnitude outside the DC exclusion radius is "
                                        "NaN (does the hologram hold infinite values?)");
        HologramFrameInfo f;
        f.carrier.row = c.row;
        f.carrier.col = c.col;
        if (last_detected) {
            // tessera::find_carrier: sqrt of the float |F|^2 that won.
            float m = 0;
            const auto bits = static_cast<uint32_t>(c.key >> 32);
            static_assert(sizeof(m) == sizeof(bits));
            std::memcpy(&m, &bits, sizeof(m));
            f.carrier.magnitude = std::sqrt(static_cast<double>(m));
        } else {
            f.carrier.magnitude = std::abs(std::complex<float>(c.re, c.im));  // as tessera::demodulate
        }
        f.filter_radius = c.radius;
        return f;
    }
};

HologramPlan::HologramPlan(int64_t rows, int64_t cols, cudaStream_t stream, int device)
    : impl_(std::make_unique<Impl>(rows, cols, stream, device)) {}
HologramPlan::~HologramPlan() = default;
HologramPlan::HologramPlan(HologramPlan&&) noexcept = default;
HologramPlan& HologramPlan::operator=(HologramPlan&&) noexcept = default;

int64_t HologramPlan::rows() const { return impl_->H; }
int64_t HologramPlan::cols() const { return impl_->W; }
int HologramPlan::device() const { return impl_->device; }
cudaStream_t HologramPlan::stream() const { return impl_->s; }
float* HologramPlan::device_intensity() { return impl_->in; }
float2* HologramPlan::device_field() { return impl_->field; }
float* HologramPlan::device_phase() { return impl_->phase; }
float* HologramPlan::device_amplitude() { return impl_->amp; }
bool HologramPlan::has_reference() const { return impl_->ref != nullptr; }

void HologramPlan::upload(const float* host_intensity) {
    Impl& m = *impl_;
    DeviceScope scope(m.device);
    check(cudaMemcpyAsync(m.in, host_intensity, static_cast<size_t>(m.n) * sizeof(float), cudaMemcpyHostToDevice,
                          m.s),
          "upload hologram");
}

void HologramPlan::enqueue(const HologramParams& p, bool divide_by_reference, bool amplitude) {
    impl_->enqueue(p, divide_by_reference, amplitude);
}

void HologramPlan::download(float* phase, float* amplitude, std::complex<float>* field) {
    Impl& m = *impl_;
    TESSERA_INVARIANT(!amplitude || m.last_amp, "cuda::HologramPlan: download of an amplitude the last frame did not compute");
    DeviceScope scope(m.device);
    const auto n = static_cast<size_t>(m.n);
    if (phase)
        check(cudaMemcpyAsync(phase, m.phase, n * sizeof(float), cudaMemcpyDeviceToHost, m.s), "download phase");
    if (amplitude)
        check(cudaMemcpyAsync(amplitude, m.amp, n * sizeof(float), cudaMemcpyDeviceToHost, m.s), "download amplitude");
    if (field)
        check(cudaMemcpyAsync(static_cast<void*>(field), m.field, n * sizeof(float2), cudaMemcpyDeviceToHost, m.s),
              "download field");
}

void HologramPlan::keep_field_as_reference() {
    Impl& m = *impl_;
    TESSERA_INVARIANT(m.enqueued, "cuda::HologramPlan: keep_field_as_reference() before any frame");
    DeviceScope scope(m.device);
    if (!m.ref) m.ref = device_alloc<float2>(static_cast<size_t>(m.n), "cudaMalloc hologram reference");
    check(cudaMemcpyAsync(m.ref, m.field, static_cast<size_t>(m.n) * sizeof(float2), cudaMemcpyDeviceToDevice, m.s),
          "keep reference field");
}

void HologramPlan::set_reference(const std::complex<float>* host_field) {
    Impl& m = *impl_;
    DeviceScope scope(m.device);
    if (!m.ref) m.ref = device_alloc<float2>(static_cast<size_t>(m.n), "cudaMalloc hologram reference");
    check(cudaMemcpyAsync(m.ref, static_cast<const void*>(host_field), static_cast<size_t>(m.n) * sizeof(float2),
                          cudaMemcpyHostToDevice, m.s),
          "upload reference field");
    // The host buffer may be pageable and short-lived: the copy is complete on return.
    check(cudaStreamSynchronize(m.s), "upload reference field (sync)");
}

void HologramPlan::clear_reference() {
    Impl& m = *impl_;
    if (!m.ref) return;
    DeviceScope scope(m.device);
    check(cudaStreamSynchronize(m.s), "clear reference (sync)");  // no frame still reads it
    check(cudaFree(m.ref), "cudaFree reference");
    m.ref = nullptr;
}

HologramFrameInfo HologramPlan::frame_info() { return impl_->info(); }

void HologramPlan::synchronize() {
    DeviceScope scope(impl_->device);
    check(cudaStreamSynchronize(impl_->s), "hologram (sync)");
}

CarrierPeak demodulate(HologramPlan& plan, const HologramParams& p, const float* intensity,
                       std::complex<float>* field_out) {
    plan.upload(intensity);
    plan.enqueue(p, false, false);
    plan.download(nullptr, nullptr, field_out);
    return plan.frame_info().carrier;
}

HologramFrameInfo demodulate_phase(HologramPlan& plan, const HologramParams& p, const float* intensity, float* phase,
                                   float* amplitude) {
    plan.upload(intensity);
    plan.enqueue(p, plan.has_reference(), amplitude != nullptr);
    plan.download(phase, amplitude, nullptr);
    return plan.frame_info();
}

}  // namespace tessera::cuda
