// A Region's inputs onto the device (region_upload.h): the phase overlapping the reading and
// the page-locking, the flags overlapping the phase.
#include "kernels/cuda/region_upload.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/device_buffer.h"

namespace tessera::cuda {
namespace {

// Whether any byte of p[0, n) is non-zero, on the host's threads.
bool any_set(const uint8_t* p, size_t n) {
    const int64_t words = static_cast<int64_t>(n / 8);
    uint64_t acc = 0;
#pragma omp parallel for reduction(| : acc) schedule(static)
    for (int64_t i = 0; i < words; ++i) {
        uint64_t w;
        std::memcpy(&w, p + static_cast<size_t>(i) * 8, 8);
        acc |= w;
    }
    for (size_t i = static_cast<size_t>(words) * 8; i < n; ++i) acc |= p[i];
    return acc != 0;
}

}  // namespace

void upload_filled(const RegionFill& fill, const RegionArrays& a, HostStaging& staging, float* d_phase,
                   cudaStream_t s) {
    const Window& b = a.buf;
    const size_t row_bytes = static_cast<size_t>(b.cols) * sizeof(float);
    staging.pin_inputs_async();
    std::vector<uint8_t> sent(static_cast<size_t>(b.rows), 0);
    std::mutex mu;
    const RowsReady ready = [&](int64_t r0, int64_t n) {
        if (r0 < 0 || n < 0 || r0 + n > b.rows) throw std::out_of_range("cuda::Region: filled rows outside the buffer");
        if (n == 0) return;
        staging.wait_inputs();
        const size_t off = static_cast<size_t>(r0) * static_cast<size_t>(b.cols);
        check(cudaMemcpyAsync(d_phase + off, a.phase + off, static_cast<size_t>(n) * row_bytes, cudaMemcpyHostToDevice, s),
              "upload phase rows");
        std::lock_guard<std::mutex> lock(mu);
        std::fill(sent.begin() + r0, sent.begin() + r0 + n, uint8_t{1});
    };
    try {
        fill(ready);
    } catch (...) {
        staging.wait_inputs();  // what it registered is undone with the staging
        throw;
    }
    staging.join_inputs();
    for (int64_t r = 0; r < b.rows;) {  // rows never reported, in runs
        if (sent[static_cast<size_t>(r)]) {
            ++r;
            continue;
        }
        int64_t e = r;
        while (e < b.rows && !sent[static_cast<size_t>(e)]) ++e;
        const size_t off = static_cast<size_t>(r) * static_cast<size_t>(b.cols);
        check(cudaMemcpyAsync(d_phase + off, a.phase + off, static_cast<size_t>(e - r) * row_bytes, cudaMemcpyHostToDevice, s),
              "upload phase");
        r = e;
    }
}

bool upload_flags(const RegionArrays& a, uint8_t* d_flags, cudaStream_t s, cudaStream_t cs, cudaEvent_t flags_up) {
    const size_t nb = static_cast<size_t>(a.buf.size());
    // The flags exist from their allocation's place in s's order on (stream-ordered pool): the
    // copy stream touches them after it. Behind the phase's upload, which shares the bus with
    // theirs anyway.
    {
        const Event allocated;
        check(cudaEventRecord(allocated.get(), s), "cudaStreamWaitEvent (flags allocated)");
        check(cudaStreamWaitEvent(cs, allocated.get(), 0), "cudaStreamWaitEvent (flags allocated)");
    }  // the wait holds what it needs
    // No flag set (no nodata, mask or coherence threshold: the common case) needs no upload:
    // the host looks while the phase travels, and the device clears instead.
    bool clear = false;
    if (any_set(a.flags, nb)) {
        if (nb % 4) check(cudaMemsetAsync(d_flags + nb, 0, 4 - nb % 4, cs), "cudaMemset flags padding");
        check(cudaMemcpyAsync(d_flags, a.flags, nb, cudaMemcpyHostToDevice, cs), "upload flags");
    } else {
        check(cudaMemsetAsync(d_flags, 0, (nb + 3) / 4 * 4, cs), "cudaMemset flags");
        clear = true;
    }
    check(cudaEventRecord(flags_up, cs), "cudaEventRecord (flags up)");
    return clear;
}

bool copy_device_input(const RegionArrays& a, const DeviceArrays& d, const float* phase, bool in_place,
                       const uint8_t* flags, cudaStream_t s) {
    const size_t nb = static_cast<size_t>(a.buf.size());
    check(cudaMemsetAsync(d.flags, 0, (nb + 3) / 4 * 4, s), "cudaMemset flags");
    if (!in_place)
        check(cudaMemcpyAsync(d.phase, phase, nb * sizeof(float), cudaMemcpyDeviceToDevice, s), "copy device phase");
    if (flags) check(cudaMemcpyAsync(d.flags, flags, nb, cudaMemcpyDeviceToDevice, s), "copy device flags");
    // The host flags must say what the device's do: the lakes are read from them (host_arrays()).
    if (flags) {
        check(cudaMemcpyAsync(a.flags, flags, nb, cudaMemcpyDeviceToHost, s), "download device flags");
        check(cudaStreamSynchronize(s), "download device flags (sync)");
    } else {
        std::memset(a.flags, 0, nb);
    }
    return !flags;
}

}  // namespace tessera::cuda
