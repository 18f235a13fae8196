// A Region's host staging policy: the caller's large host arrays are page-locked in place
// (cudaHostRegister) for the Region's lifetime, some on threads of their own, so that the
// upload and finish()'s download run at full DMA speed without a copy into staging buffers.
#pragma once
#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/types.h"

namespace tessera::cuda {

// Whether host arrays are page-locked at all: TESSERA_CUDA_PIN=0 keeps them pageable.
bool pinning_enabled();

// Host memory page-locked beyond one Region's life (a streamed run's kept inputs, docs 5.1):
// registered now, unregistered when the handle's last copy goes, which must be before the memory
// is freed. Null (the range stays pageable, Regions lock it themselves) when pinning is off, the
// range is under 4 MiB or already page-locked, or registering fails.
std::shared_ptr<void> lock_host_range(void* p, size_t bytes);

// The page-locking of one Region's host arrays (a.buf.size() pixels each). Arrays under 4 MiB,
// arrays already page-locked and arrays whose registering fails stay pageable (copies work
// either way, more slowly). The destructor joins the pinning threads and unregisters what it
// registered: its owner has synchronised every copy that used those arrays before.
class HostStaging {
public:
    explicit HostStaging(const RegionArrays& a) : a_(a) {}
    ~HostStaging();
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;

    // The arrays that go up and that finish() writes: phase, flags and cycles; now, on any thread
    // with the Region's device current (region_upload.h: beside a fill).
    void pin_inputs();

    // A scene's labels, on a thread of their own while the phase goes up (registering a
    // gigabyte takes ~50 ms on the lent H100 host); nothing when pinning is off or a.label is null.
    void pin_labels_async();
    // Before the labels come down: waits for pin_labels_async's thread, or pins them now.
    void pin_labels();

    // Joins the pinning threads (their errors are dropped: the arrays stay pageable).
    void join() noexcept;

    // What was registered here, unregistered when the handle's last copy goes instead of by
    // this destructor (no copy may use the arrays any more); null when nothing was.
    std::shared_ptr<void> hand_over();

private:
    void pin(void* p, size_t bytes);  // thread-safe

    RegionArrays a_;
    std::mutex mu_;
    std::vector<void*> pinned_;  // host ranges registered here
    std::future<void> labels_;
};

}  // namespace tessera::cuda
