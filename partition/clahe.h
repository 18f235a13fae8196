// CLAHE's cross-rank steps (kernels/clahe.h defines every step): the value range and the
// tile histograms of every rank's window, reduced over the ranks through Comm; the kernels
// compute only a window's local range, histograms, LUTs and interpolation. Every rank then
// builds the same LUTs, so the output is bit-identical for any rank count.
#pragma once
#include <cstdint>

#include "kernels/clahe.h"
#include "kernels/types.h"
#include "partition/comm.h"

namespace tessera {

// The range every rank uses (collective over comm): the ranks' local ranges merged (min and
// max are exact in any order), or p's fixed range; throws std::runtime_error("no valid
// pixels") alike on every rank when no rank saw one. Both backends' clahe() use it.
ClaheRange clahe_global_range(const ClaheRange& local, const ClaheParams& p, Comm& comm);

// Collective over comm (every rank, its own window, possibly empty): range allreduce
// (unless fixed), histograms, one allreduce of the histograms, LUTs, interpolation.
// Throws std::invalid_argument (bad parameters) or std::runtime_error("no valid pixels")
// alike on every rank. Returns the range used.
ClaheRange clahe(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride);
ClaheRange clahe(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                 int64_t W, const ClaheParams& p, Comm& comm, uint16_t* out, int64_t out_stride);
ClaheRange clahe(const float* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H, int64_t W,
                 const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride);
ClaheRange clahe(const uint16_t* img, const uint8_t* valid, const Window& own, int64_t stride, int64_t H,
                 int64_t W, const ClaheParams& p, Comm& comm, uint8_t* out, int64_t out_stride);

}  // namespace tessera
