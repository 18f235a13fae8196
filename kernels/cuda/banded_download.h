// A Region's results down into the caller's host arrays (finish()): u, labels and cycles by
// apply's row bands, each band as soon as its kernels are done, so that the copies overlap the
// later bands' work; label rows that hold one label cross the bus as one word and are filled here.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cuda/device_buffer.h"
#include "kernels/types.h"

namespace tessera::cuda {

// apply's row bands over the own window (at least 2048 rows each, at most 8), each with the
// event that marks its kernels done on the kernels' stream. The events are kept across plans.
class RowBands {
public:
    void plan(int64_t own_rows);
    size_t size() const { return rows_.empty() ? 0 : rows_.size() - 1; }
    int64_t begin(size_t b) const { return rows_[b]; }  // own-relative rows [begin, end)
    int64_t end(size_t b) const { return rows_[b + 1]; }
    cudaEvent_t done(size_t b) const { return done_[b].get(); }

private:
    std::vector<Event> done_;
    std::vector<int64_t> rows_;  // band b: own rows [rows_[b], rows_[b + 1])
};

// What apply left on the device for the own window: u over buf (a's layout), labels
// (label_bytes wide), cycles (may be null) and uniform_label_rows' words (may be null)
// row-major over own.
struct ApplyResults {
    const float* u = nullptr;
    const void* label = nullptr;
    int label_bytes = 4;
    const int32_t* cycles = nullptr;
    const uint64_t* uniform_rows = nullptr;
};

// Queues u, labels (where a.label is set) and cycles (where a.cycles is set) of the own window
// down into a, band by band on `copies` (which waits for each band's event unless it is s, the
// kernels' stream). Label rows of one label are left out: their words come down on s (synchronised)
// once band 0's u is on its way and are returned (empty where there are none), for
// fill_uniform_label_rows. The copies are still in flight on return.
std::vector<uint64_t> download_bands(const RegionArrays& a, const Window& own, const ApplyResults& r,
                                     const RowBands& bands, cudaStream_t s, cudaStream_t copies);

// The host label rows that hold one label (`uniform`: download_bands' words), written on the host.
void fill_uniform_label_rows(const RegionArrays& a, const Window& own, int label_bytes,
                             const std::vector<uint64_t>& uniform);

// Queues the own window's flags (the cut bits, as cpu::Region leaves them) down into a.flags on st.
void download_own_flags(const RegionArrays& a, const Window& own, const uint8_t* d_flags, cudaStream_t st);

}  // namespace tessera::cuda
