// The collective background fit of the CUDA backend and the commands' band on the device
// (kernels/cuda/background.h); host code, g++.
#include <mpi.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/background.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/kernels.h"
#include "partition/comm.h"

namespace tessera::cuda {

SurfaceFit fit_surface(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own, int64_t stride,
                       int64_t H, int64_t W, int degree, Comm& comm, cudaStream_t s) {
    if (degree < 0 || degree > kMaxSurfaceDegree)
        throw std::invalid_argument("surface degree " + std::to_string(degree) + " out of range 0.." +
                                    std::to_string(kMaxSurfaceDegree));
    const double local_max = surface_max_abs(z, valid, mask, own, stride, s);
    const double global_max = comm.max(local_max);  // exact in any order; no MPI call alone (frame lanes)
    SurfaceMoments m = surface_moments(z, valid, mask, own, stride, H, W, degree, surface_zexp(global_max), s);
    if (comm.size() > 1) {
        // Every rank's [count, geo..., zm...], added exactly (so in any order) by every rank.
        std::vector<ExactSum> mine;
        mine.reserve(1 + m.geo.size() + m.zm.size());
        mine.push_back(ExactSum{static_cast<uint64_t>(m.count), 0, 0, 0});
        mine.insert(mine.end(), m.geo.begin(), m.geo.end());
        mine.insert(mine.end(), m.zm.begin(), m.zm.end());
        const std::vector<ExactSum> all = comm.allgatherv(mine);
        SurfaceMoments total = m, part = m;
        total.count = 0;
        std::fill(total.geo.begin(), total.geo.end(), ExactSum{});
        std::fill(total.zm.begin(), total.zm.end(), ExactSum{});
        const size_t k = mine.size();
        for (size_t r = 0; r + k <= all.size(); r += k) {
            part.count = static_cast<int64_t>(all[r][0]);
            std::copy(all.begin() + static_cast<std::ptrdiff_t>(r + 1),
                      all.begin() + static_cast<std::ptrdiff_t>(r + 1 + m.geo.size()), part.geo.begin());
            std::copy(all.begin() + static_cast<std::ptrdiff_t>(r + 1 + m.geo.size()),
                      all.begin() + static_cast<std::ptrdiff_t>(r + k), part.zm.begin());
            add_moments(total, part);
        }
        m = std::move(total);
    }
    return solve_surface(m);
}

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

SurfaceFit SurfaceBand::fit(int degree, Comm& comm) {
    return cuda::fit_surface(z_, valid_, mask_, own_, own_.cols, H_, W_, degree, comm, s_);
}

ResidualSums SurfaceBand::subtract(const SurfaceFit& fit) {
    const ResidualSums rs = cuda::subtract_surface(z_, valid_, mask_, own_, own_.cols, H_, W_, fit, s_);
    copy_window(host_z_, host_stride_, z_, own_.cols, own_.rows, own_.cols, cudaMemcpyDeviceToHost, s_,
                "download z");
    check(cudaStreamSynchronize(s_), "download (sync)");
    return rs;
}

}  // namespace tessera::cuda
