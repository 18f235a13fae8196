// RAII owners for the host code of the CUDA backend: device allocations, a stream, and
// window copies between host and device arrays of different row strides.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t count, const char* what = "cudaMalloc") : n_(count) {
        void* p = nullptr;
        check(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)), what);
        p_ = static_cast<T*>(p);
    }
    ~DeviceBuffer() {
        if (p_) (void)cudaFree(p_);
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            if (p_) (void)cudaFree(p_);
            p_ = std::exchange(o.p_, nullptr);
            n_ = std::exchange(o.n_, 0);
        }
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    T* get() const { return p_; }
    size_t size() const { return n_; }

private:
    T* p_ = nullptr;
    size_t n_ = 0;
};

// Stream-ordered scratch (cudaMallocAsync): no device-wide synchronisation, freed on the
// stream at the end of its scope unless released.
template <class T>
class StreamBuffer {
public:
    StreamBuffer(size_t count, cudaStream_t s, const char* what = "cudaMallocAsync") : s_(s) {
        void* p = nullptr;
        check(cudaMallocAsync(&p, std::max<size_t>(count, 1) * sizeof(T), s), what);
        p_ = static_cast<T*>(p);
    }
    // Takes over an allocation made on stream s (cudaMallocAsync); null is fine.
    StreamBuffer(T* adopt, cudaStream_t s) : p_(adopt), s_(s) {}
    ~StreamBuffer() {
        if (p_) (void)cudaFreeAsync(p_, s_);
    }
    StreamBuffer(const StreamBuffer&) = delete;
    StreamBuffer& operator=(const StreamBuffer&) = delete;
    T* get() const { return p_; }
    T* release() { return std::exchange(p_, nullptr); }  // the caller frees it now

private:
    T* p_ = nullptr;
    cudaStream_t s_;
};

// A non-blocking stream, synchronised and destroyed at the end of its scope.
class Stream {
public:
    Stream() { check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate"); }
    ~Stream() {
        (void)cudaStreamSynchronize(s_);
        (void)cudaStreamDestroy(s_);
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const { return s_; }

private:
    cudaStream_t s_ = nullptr;
};

// Copies a rows x cols window of T between arrays with row strides in elements (queued on s).
template <class T>
void copy_window(T* dst, int64_t dst_stride, const T* src, int64_t src_stride, int64_t rows, int64_t cols,
                 cudaMemcpyKind kind, cudaStream_t s, const char* what) {
    if (rows <= 0 || cols <= 0) return;
    check(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_stride) * sizeof(T), src,
                            static_cast<size_t>(src_stride) * sizeof(T), static_cast<size_t>(cols) * sizeof(T),
                            static_cast<size_t>(rows), kind, s),
          what);
}

}  // namespace tessera::cuda
