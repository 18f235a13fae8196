// CLAHE over the ranks, CPU backend (partition/clahe.h).
#include "partition/clahe.h"

#include <stdexcept>
#include <type_traits>
#include <vector>

namespace tessera {

namespace {

template <class T, class O>
ClaheRange collective(const T* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                      const ClaheParams& p, Comm& comm, O* out, int64_t out_stride) {
    const ClaheGrid g = make_clahe_grid(H, W, p);
    if (std::is_same_v<O, uint8_t> && p.out_bits != 8)
        throw std::invalid_argument("clahe: an 8-bit output buffer needs out_bits = 8");
    const ClaheRange range = clahe_global_range(clahe_local_range(img, valid, own, stride), p, comm);
    std::vector<uint32_t> hist(static_cast<size_t>(g.tiles()) * static_cast<size_t>(p.nbins), 0);
    clahe_histograms(img, valid, own, stride, g, p, range, hist.data());
    comm.sum_in_place(hist);  // integer counts: every rank gets the same histograms
    std::vector<uint16_t> lut(hist.size());
    clahe_luts(hist.data(), g, p, lut.data());
    clahe_apply(img, valid, own, stride, g, p, range, lut.data(), out, out_stride);
    return range;
}

}  // namespace

ClaheRange clahe_global_range(const ClaheRange& local, const ClaheParams& p, Comm& comm) {
    ClaheRange range;
    range.lo = -comm.max(-local.lo);  // min and max are exact in any order
    range.hi = comm.max(local.hi);
    range.count = comm.sum(local.count);
    if (range.count == 0) throw std::runtime_error("no valid pixels");
    if (p.fixed_range) {
        range.lo = p.lo;
        range.hi = p.hi;
    }
    return range;
}

ClaheRange clahe(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride) {
    return collective(img, valid, own, stride, H, W, p, comm, out, out_stride);
}
ClaheRange clahe(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                 int64_t W, const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride) {
    return collective(img, valid, own, stride, H, W, p, comm, out, out_stride);
}
ClaheRange clahe(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride) {
    return collective(img, valid, own, stride, H, W, p, comm, out, out_stride);
}
ClaheRange clahe(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                 int64_t W, const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride) {
    return collective(img, valid, own, stride, H, W, p, comm, out, out_stride);
}

}  // namespace tessera
