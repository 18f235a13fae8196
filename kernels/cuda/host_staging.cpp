// The page-locking of a Region's host arrays (host_staging.h): cudaHostRegister in place, on
// the calling thread or on one of its own, undone when the Region ends.
#include "kernels/cuda/host_staging.h"
#include "kernels/ab_switch.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "kernels/cuda/kernels.h"

namespace tessera::cuda {
namespace {

// Host arrays smaller than this are not worth page-locking.
constexpr size_t kPinMin = size_t{4} << 20;

// Registers [p, p + bytes) when pinning is on, the range is large enough and not page-locked yet;
// true when this call registered it. On any failure (locked-memory limit, ...) it stays pageable.
bool register_range(void* p, size_t bytes) {
    if (!p || bytes < kPinMin || !pinning_enabled()) return false;
    cudaPointerAttributes at{};
    if (cudaPointerGetAttributes(&at, p) == cudaSuccess && at.type == cudaMemoryTypeHost) return false;  // already
    (void)cudaGetLastError();
    if (cudaHostRegister(p, bytes, cudaHostRegisterDefault) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
}

int current_device() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    return device;
}

}  // namespace

bool pinning_enabled() {
    return !switch_is("TESSERA_CUDA_PIN", "0");
}

std::shared_ptr<void> lock_host_range(void* p, size_t bytes) {
    if (!register_range(p, bytes)) return {};
    return std::shared_ptr<void>(p, [](void* q) { (void)cudaHostUnregister(q); });
}

HostStaging::~HostStaging() {
    join();
    for (void* p : pinned_) (void)cudaHostUnregister(p);
}

void HostStaging::pin_inputs() {
    const size_t nb = static_cast<size_t>(a_.buf.size());
    pin(a_.phase, nb * sizeof(float));
    pin(a_.flags, nb);
    pin(a_.cycles, nb * sizeof(int32_t));
}

void HostStaging::pin_labels_async() {
    if (!a_.label || !pinning_enabled()) return;
    const int device = current_device();
    labels_ = std::async(std::launch::async, [this, device] {
        if (cudaSetDevice(device) == cudaSuccess) pin(a_.label, static_cast<size_t>(a_.buf.size()) * sizeof(uint32_t));
    });
}

void HostStaging::pin_labels() {
    if (labels_.valid())
        labels_.get();
    else
        pin(a_.label, static_cast<size_t>(a_.buf.size()) * sizeof(uint32_t));
}

void HostStaging::join() noexcept {
    if (labels_.valid()) labels_.wait();
}

std::shared_ptr<void> HostStaging::hand_over() {
    join();
    std::lock_guard<std::mutex> lock(mu_);
    if (pinned_.empty()) return {};
    auto ranges = std::make_shared<std::vector<void*>>(std::move(pinned_));
    pinned_.clear();
    const int device = current_device();  // the handle may go on a thread with another device current
    return std::shared_ptr<void>(ranges.get(), [ranges, device](void*) {
        if (cudaSetDevice(device) != cudaSuccess) return;
        for (void* p : *ranges) (void)cudaHostUnregister(p);
    });
}

void HostStaging::pin(void* p, size_t bytes) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (std::find(pinned_.begin(), pinned_.end(), p) != pinned_.end()) return;
    }
    if (register_range(p, bytes)) {
        std::lock_guard<std::mutex> lock(mu_);
        pinned_.push_back(p);
    }
}

}  // namespace tessera::cuda
