// The collective CLAHE of the CUDA backend, on device arrays and from host arrays
// (partition/cuda/clahe.h); host code, g++. The steps and the reductions are those of
// tessera::clahe (partition/clahe.cpp), so every rank count gives the same picture.
#include "partition/cuda/clahe.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/cuda/clahe.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/kernels.h"
#include "partition/clahe.h"

namespace tessera::cuda {

namespace {

template <class T, class O>
ClaheRange collective(const T* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                      const ClaheParams& p, Comm& comm, O* out, int64_t out_stride, cudaStream_t s) {
    const ClaheGrid g = make_clahe_grid(H, W, p);
    if (std::is_same_v<O, uint8_t> && p.out_bits != 8)
        throw std::invalid_argument("clahe: an 8-bit output buffer needs out_bits = 8");
    const ClaheRange range = tessera::clahe_global_range(clahe_local_range(img, valid, own, stride, s), p, comm);
    const size_t nh = static_cast<size_t>(g.tiles()) * static_cast<size_t>(p.nbins);
    StreamBuffer<uint32_t> hist(nh, s, "cudaMallocAsync (clahe histograms)");
    StreamBuffer<uint16_t> lut(nh, s, "cudaMallocAsync (clahe LUTs)");
    check(cudaMemsetAsync(hist.get(), 0, nh * sizeof(uint32_t), s), "clahe (clear histograms)");
    clahe_histograms(img, valid, own, stride, g, p, range, hist.get(), s);
    if (comm.size() > 1) {
        // Integer counts: one allreduce gives every rank the same histograms.
        std::vector<uint32_t> h(nh);
        check(cudaMemcpyAsync(h.data(), hist.get(), nh * sizeof(uint32_t), cudaMemcpyDeviceToHost, s),
              "clahe (download histograms)");
        check(cudaStreamSynchronize(s), "clahe (histograms)");
        comm.sum_in_place(h);
        check(cudaMemcpyAsync(hist.get(), h.data(), nh * sizeof(uint32_t), cudaMemcpyHostToDevice, s),
              "clahe (upload histograms)");
    }
    clahe_luts(hist.get(), g, p, lut.get(), s);
    clahe_apply(img, valid, own, stride, g, p, range, lut.get(), out, out_stride, s);
    check(cudaStreamSynchronize(s), "clahe (sync)");
    return range;
}

template <class T, class O>
ClaheRange from_host(const T* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                     const ClaheParams& p, Comm& comm, O* out, int64_t out_stride) {
    const Stream s;
    const size_t n = static_cast<size_t>(std::max<int64_t>(own.size(), 0));
    DeviceBuffer<T> d_img(n, "cudaMalloc (clahe image)");
    DeviceBuffer<uint8_t> d_valid(valid ? n : 0, "cudaMalloc (clahe valid)");
    DeviceBuffer<O> d_out(n, "cudaMalloc (clahe output)");
    copy_window(d_img.get(), own.cols, img, stride, own.rows, own.cols, cudaMemcpyHostToDevice, s.get(),
                "clahe (upload image)");
    if (valid)
        copy_window(d_valid.get(), own.cols, valid, stride, own.rows, own.cols, cudaMemcpyHostToDevice, s.get(),
                    "clahe (upload valid)");
    const ClaheRange range = collective(d_img.get(), valid ? d_valid.get() : nullptr, own, own.cols, H, W, p, comm,
                                        d_out.get(), own.cols, s.get());
    copy_window(out, out_stride, d_out.get(), own.cols, own.rows, own.cols, cudaMemcpyDeviceToHost, s.get(),
                "clahe (download output)");
    check(cudaStreamSynchronize(s.get()), "clahe (download)");
    return range;
}

}  // namespace

ClaheRange clahe(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride, cudaStream_t s) {
    return collective(img, valid, own, stride, H, W, p, comm, out, out_stride, s);
}
ClaheRange clahe(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride, cudaStream_t s) {
    return collective(img, valid, own, stride, H, W, p, comm, out, out_stride, s);
}
ClaheRange clahe(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride, cudaStream_t s) {
    return collective(img, valid, own, stride, H, W, p, comm, out, out_stride, s);
}
ClaheRange clahe(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride, cudaStream_t s) {
    return collective(img, valid, own, stride, H, W, p, comm, out, out_stride, s);
}

ClaheRange clahe_from_host(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                           int64_t W, const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride) {
    return from_host(img, valid, own, stride, H, W, p, comm, out, out_stride);
}
ClaheRange clahe_from_host(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                           int64_t W, const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride) {
    return from_host(img, valid, own, stride, H, W, p, comm, out, out_stride);
}
ClaheRange clahe_from_host(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                           int64_t W, const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride) {
    return from_host(img, valid, own, stride, H, W, p, comm, out, out_stride);
}
ClaheRange clahe_from_host(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                           int64_t W, const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride) {
    return from_host(img, valid, own, stride, H, W, p, comm, out, out_stride);
}

}  // namespace tessera::cuda
