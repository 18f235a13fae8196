// Labels cross the bus in the fewest bytes that hold the largest (ARCHITECTURE.md section 8:
// the bus, not the device, bounds a host-to-host unwrap; most scenes label fewer than 256
// components): the device writes them 1 or 2 bytes wide into page-locked staging, and the
// host widens them into the uint32 label array, bit for bit what a 4-byte download gives.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tessera::cuda {

// 1, 2 or 4: the narrowest unsigned width that holds every label up to max_label.
int label_bytes_for(uint32_t max_label);

// Page-locked host memory for narrow labels. Page-locking costs about 40 ms a gigabyte on the
// lent H100 host (bench/results/gpu_h100_transfers.md), so the buffer is kept for the process
// and reused by the next region; a second region finishing at the same time gets its own.
class LabelStaging {
public:
    explicit LabelStaging(size_t bytes);  // throws std::runtime_error if page-locking fails
    ~LabelStaging();
    LabelStaging(const LabelStaging&) = delete;
    LabelStaging& operator=(const LabelStaging&) = delete;
    uint8_t* data() const { return p_; }

private:
    uint8_t* p_ = nullptr;
    bool shared_ = false;  // the process's kept buffer (its lock held until destruction)
};

// Grows the kept buffer to `bytes` ahead of time (a filled Region does it beside the read);
// does nothing while a region holds it.
void reserve_label_staging(size_t bytes);

// dst[y * dst_stride + x] = src[y * cols + x] for y < rows, x < cols, src being label_bytes wide
// (1 or 2); on the host's threads, with streaming stores where the host has them.
void widen_labels(const uint8_t* src, int label_bytes, int64_t rows, int64_t cols, uint32_t* dst,
                  int64_t dst_stride);

}  // namespace tessera::cuda
