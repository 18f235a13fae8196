// A zero-filled host array for a region's pixels, first touched on the host's threads: one
// thread faulting in gigabytes of fresh pages was most of a large scene's read stage.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

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
    explicit HostBuffer(size_t n) : p_(new T[n]), n_(n) {  // default-initialised: untouched pages
        constexpr size_t kChunk = size_t{1} << 18;          // elements a task zeroes
        const auto chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < chunks; ++k) {
            const size_t b = static_cast<size_t>(k) * kChunk, e = std::min(n, b + kChunk);
            std::memset(static_cast<void*>(p_.get() + b), 0, (e - b) * sizeof(T));
        }
    }
    // A copy of src[0, n), first touched on the host's threads.
    HostBuffer(size_t n, const T* src) : p_(new T[n]), n_(n) { copy_on_threads(p_.get(), src, n); }
    T* data() { return p_.get(); }
    const T* data() const { return p_.get(); }
    size_t size() const { return n_; }
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

private:
    std::unique_ptr<T[]> p_;
    size_t n_;
};

}  // namespace tessera
