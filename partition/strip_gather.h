// An image held in windows by the ranks, handed to rank 0 in full-width strips of rows, in
// order (docs/ARCHITECTURE.md section 7: a GeoTIFF is written by one process from the result
// in memory; no rank ever holds more than a strip of the others').
#pragma once
#include <cstdint>
#include <functional>
#include <type_traits>

#include "kernels/types.h"
#include "partition/comm.h"

namespace tessera {

// Collective over comm. Every rank passes its window `own` of an H x W image of T (float,
// uint32_t or uint16_t; row stride
// `stride`; the windows tile the image); rank 0's `sink(r0, nr, rows)` gets rows [r0, r0 + nr)
// as nr * W contiguous values, strips of `strip_rows`, top to bottom. An exception from sink is
// kept and the gathering goes on (no rank waits forever); every rank then throws
// InputError::everywhere with rank 0's message (`what` where rank 0 has none).
template <typename T>
void gather_strips_to_root(Comm& comm, const Window& own, const T* data, int64_t stride, int64_t H, int64_t W,
                           int64_t strip_rows, const std::function<void(int64_t, int64_t, const std::type_identity_t<T>*)>& sink,
                           const std::string& what);

}  // namespace tessera
