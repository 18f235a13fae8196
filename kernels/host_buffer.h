// A zero-filled host array for a region's pixels, first touched on the host's threads: one
// thread faulting in gigabytes of fresh pages was most of a large scene's read stage. Large
// arrays are mappings of huge pages (kernels/host_memory.h).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "kernels/host_memory.h"

namespace tessera {

// dst[0, n) = src[0, n), in blocks on the host's threads.
template <class T>
void copy_on_threads(T* dst, const T* src, size_t n) {
    constexpr size_t kChunk = size_t{1} << 18;  // elements a task copies
    const auto chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < chunks; ++k) {
        const size_t b = static_cast<size_t>(k) * kChunk, e = std::min(n, b + kChunk);
        std::memcpy(static_cast<void*>(dst + b), static_cast<const void*>(src + b), (e - b) * sizeof(T));
    }
}

template <class T>
class HostBuffer {
    static_assert(std::is_trivial_v<T>, "HostBuffer holds plain pixel values");

public:
    explicit HostBuffer(size_t n) : HostBuffer(n, Untouched{}) {
        const size_t bytes = n * sizeof(T);
        auto* p = reinterpret_cast<unsigned char*>(p_.get());
        if (bytes >= host_memory::kMappedFrom) {
            // A fresh mapping reads as zeros: a store a page faults it in (the kernel zeroes it).
            constexpr size_t kPage = 4096, kSpan = size_t{1} << 21;  // bytes a task touches
            const auto spans = static_cast<int64_t>((bytes + kSpan - 1) / kSpan);
#pragma omp parallel for schedule(static)
            for (int64_t k = 0; k < spans; ++k) {
                const size_t b = static_cast<size_t>(k) * kSpan, e = std::min(bytes, b + kSpan);
                for (size_t i = b; i < e; i += kPage) static_cast<volatile unsigned char*>(p)[i] = 0;
            }
            return;
        }
        std::memset(p, 0, bytes);
    }
    T* data() { return p_.get(); }
    const T* data() const { return p_.get(); }
    size_t size() const { return n_; }
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

private:
    struct Untouched {};
    struct GiveBack {
        size_t bytes;
        void operator()(T* p) const { host_memory::give_back(p, bytes); }
    };
    HostBuffer(size_t n, Untouched)
        : p_(static_cast<T*>(host_memory::take(n * sizeof(T))), GiveBack{n * sizeof(T)}), n_(n) {}

    std::unique_ptr<T[], GiveBack> p_;
    size_t n_;
};

}  // namespace tessera
