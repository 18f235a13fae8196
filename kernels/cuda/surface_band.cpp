// The commands' band on the device (kernels/cuda/background.h); host code, g++. The fit's
// cross-rank steps are partition/surface_fit.h's.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/background.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

SurfaceBand::SurfaceBand(float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride,
                         int64_t H, int64_t W)
    : host_z_(z), own_(own), host_stride_(stride), H_(H), W_(W) {
    const size_t n = static_cast<size_t>(std::max<int64_t>(own.size(), 0));
    try {
        check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate (background)");
        auto alloc = [&](auto*& p, size_t bytes, const char* what) {
            void* q = nullptr;
            check(cudaMalloc(&q, std::max<size_t>(bytes, 1)), what);
            p = static_cast<std::remove_reference_t<decltype(p)>>(q);
        };
        alloc(z_, n * sizeof(float), "cudaMalloc (background z)");
        copy_window(z_, own.cols, z, stride, own.rows, own.cols, cudaMemcpyHostToDevice, s_, "upload z");
        if (valid) {
            alloc(valid_, n, "cudaMalloc (background valid)");
            copy_window(valid_, own.cols, valid, stride, own.rows, own.cols, cudaMemcpyHostToDevice, s_,
                        "upload valid");
        }
        if (mask) {
            alloc(mask_, n, "cudaMalloc (background mask)");
            copy_window(mask_, own.cols, mask, stride, own.rows, own.cols, cudaMemcpyHostToDevice, s_,
                        "upload mask");
        }
        check(cudaStreamSynchronize(s_), "upload (sync)");
    } catch (...) {
        release();
        throw;
    }
}

SurfaceBand::~SurfaceBand() { release(); }

void SurfaceBand::release() noexcept {
    if (s_) (void)cudaStreamSynchronize(s_);
    for (void* p : {static_cast<void*>(z_), static_cast<void*>(valid_), static_cast<void*>(mask_)})
        if (p) (void)cudaFree(p);
    z_ = nullptr;
    valid_ = mask_ = nullptr;
    if (s_) (void)cudaStreamDestroy(s_);
    s_ = nullptr;
}

double SurfaceBand::max_abs() { return DeviceSurfaceWindow{z_, valid_, mask_, own_, own_.cols, H_, W_, s_}.max_abs(); }

SurfaceMoments SurfaceBand::moments(int degree, int zexp) {
    return DeviceSurfaceWindow{z_, valid_, mask_, own_, own_.cols, H_, W_, s_}.moments(degree, zexp);
}

ResidualSums SurfaceBand::subtract(const SurfaceFit& fit) {
    const ResidualSums rs = cuda::subtract_surface(z_, valid_, mask_, own_, own_.cols, H_, W_, fit, s_);
    copy_window(host_z_, host_stride_, z_, own_.cols, own_.rows, own_.cols, cudaMemcpyDeviceToHost, s_,
                "download z");
    check(cudaStreamSynchronize(s_), "download (sync)");
    return rs;
}

}  // namespace tessera::cuda
