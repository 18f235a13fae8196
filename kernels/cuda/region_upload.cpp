// A Region's inputs onto the device (region_upload.h): the phase overlapping the reading and
// the page-locking, the flags overlapping the phase.
#include "kernels/cuda/region_upload.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <future>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/ab_switch.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/lap.h"

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

void upload_filled(const RegionFill& fill, const RegionArrays& a, HostStaging& staging,
                   const std::function<float*()>& allocate, cudaStream_t s) {
    const Window& b = a.buf;
    const size_t row_bytes = static_cast<size_t>(b.cols) * sizeof(float);
    const bool trace = trace_on();
    Lap since_fill;
    // TESSERA_ALLOC_BESIDE=0: the device arrays allocated before the fill starts (A/B).
    float* d_phase = switch_is("TESSERA_ALLOC_BESIDE", "0") ? allocate() : nullptr;
    std::vector<uint8_t> sent(static_cast<size_t>(b.rows), 0);
    std::vector<std::pair<int64_t, int64_t>> queued;  // reported, not yet sent
    bool filled = false;
    std::mutex mu;
    std::condition_variable more;
    const RowsReady ready = [&](int64_t r0, int64_t n) {
        if (r0 < 0 || n < 0 || r0 + n > b.rows) throw std::out_of_range("cuda::Region: filled rows outside the buffer");
        if (n == 0) return;
        {
            std::lock_guard<std::mutex> lock(mu);
            queued.emplace_back(r0, n);
        }
        more.notify_one();
    };
    // The sender: the device arrays, the page-locking, then the rows as they are reported; the
    // fill's threads never wait for it.
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    auto sender = std::async(std::launch::async, [&, device] {
        check(cudaSetDevice(device), "cudaSetDevice (upload)");
        if (!d_phase) d_phase = allocate();
        const double allocated = since_fill.next_ms();
        staging.pin_inputs();
        const double pinned = since_fill.next_ms();
        std::unique_lock<std::mutex> lock(mu);
        while (true) {
            more.wait(lock, [&] { return filled || !queued.empty(); });
            if (queued.empty()) break;  // filled
            const auto take = std::exchange(queued, {});
            lock.unlock();
            for (const auto& [r0, n] : take) {
                const size_t off = static_cast<size_t>(r0) * static_cast<size_t>(b.cols);
                check(cudaMemcpyAsync(d_phase + off, a.phase + off, static_cast<size_t>(n) * row_bytes,
                                      cudaMemcpyHostToDevice, s),
                      "upload phase rows");
                std::fill(sent.begin() + r0, sent.begin() + r0 + n, uint8_t{1});  // this thread's alone until joined
            }
            lock.lock();
        }
        if (trace)
            std::fprintf(stderr, "tessera: upload beside the fill: device arrays %.1f ms, page-locked %.1f ms after\n",
                         allocated, pinned);
    });
    auto stop_sender = [&] {
        {
            std::lock_guard<std::mutex> lock(mu);
            filled = true;
        }
        more.notify_one();
    };
    try {
        fill(ready);
    } catch (...) {
        stop_sender();
        sender.wait();  // what it allocated and registered is undone with the Region
        throw;
    }
    stop_sender();
    sender.get();
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
