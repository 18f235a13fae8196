// RAII owners for the host code of the CUDA backend: device allocations (plain and
// stream-ordered), a stream, an event, and window copies between host and device arrays of
// different row strides.
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

// A stream-ordered device array (cudaMallocAsync from the device's pool): no device-wide
// synchronisation; freed on its stream when replaced, reset or at the end of its scope
// (also on an exception) unless released. Empty (null) when default-made.
template <class T>
class StreamBuffer {
public:
    StreamBuffer() = default;
    StreamBuffer(size_t count, cudaStream_t s, const char* what = "cudaMallocAsync") : s_(s) {
        void* p = nullptr;
        check(cudaMallocAsync(&p, std::max<size_t>(count, 1) * sizeof(T), s), what);
        p_ = static_cast<T*>(p);
        n_ = count;
    }
    // Takes over an allocation made on stream s (cudaMallocAsync); null is fine. Its size is unknown (0).
    StreamBuffer(T* adopt, cudaStream_t s) : p_(adopt), s_(s) {}
    ~StreamBuffer() { reset(); }
    StreamBuffer(StreamBuffer&& o) noexcept
        : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), s_(o.s_) {}
    StreamBuffer& operator=(StreamBuffer&& o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
            n_ = std::exchange(o.n_, 0);
            s_ = o.s_;
        }
        return *this;
    }
    StreamBuffer(const StreamBuffer&) = delete;
    StreamBuffer& operator=(const StreamBuffer&) = delete;
    T* get() const { return p_; }
    size_t size() const { return n_; }  // elements allocated (0 when adopted)
    explicit operator bool() const { return p_ != nullptr; }
    T* release() {  // the caller frees it now
        n_ = 0;
        return std::exchange(p_, nullptr);
    }
    void reset() noexcept {  // frees it on its stream now (in the stream's order)
        if (p_) (void)cudaFreeAsync(p_, s_);
        p_ = nullptr;
        n_ = 0;
    }

private:
    T* p_ = nullptr;
    size_t n_ = 0;
    cudaStream_t s_ = nullptr;
};

// kernels.h's TileRoots with their memory owned: union_find_components fills refill(s)'s list
// (also where it throws after allocating it, on s), freed on s at reset() or the end of scope.
class TileRootList {
public:
    TileRootList() = default;
    ~TileRootList() { reset(); }
    TileRootList(const TileRootList&) = delete;
    TileRootList& operator=(const TileRootList&) = delete;
    TileRoots& refill(cudaStream_t s) {  // the previous list is freed first
        reset();
        s_ = s;
        return roots_;
    }
    const TileRoots& get() const { return roots_; }
    void reset() noexcept {
        const StreamBuffer<char> mem(static_cast<char*>(std::exchange(roots_, TileRoots{}).mem), s_);
    }

private:
    TileRoots roots_;
    cudaStream_t s_ = nullptr;
};

// A non-blocking stream, synchronised and destroyed at the end of its scope.
class Stream {
public:
    explicit Stream(const char* what = "cudaStreamCreate") {
        check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), what);
    }
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

// An event for ordering streams (no timing: cudaEventDisableTiming), destroyed at the end of its
// scope; a wait already queued on it holds what it needs.
class Event {
public:
    explicit Event(const char* what = "cudaEventCreate") {
        check(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming), what);
    }
    ~Event() {
        if (e_) (void)cudaEventDestroy(e_);
    }
    Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
    Event& operator=(Event&& o) noexcept {
        if (this != &o) {
            if (e_) (void)cudaEventDestroy(e_);
            e_ = std::exchange(o.e_, nullptr);
        }
        return *this;
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const { return e_; }

private:
    cudaEvent_t e_ = nullptr;
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
