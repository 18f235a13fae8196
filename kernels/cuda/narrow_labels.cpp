#include "kernels/cuda/narrow_labels.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#ifdef __SSE2__
#include <immintrin.h>
#endif

namespace tessera::cuda {

int label_bytes_for(uint32_t max_label) {
    if (max_label <= UINT8_MAX) return 1;
    if (max_label <= UINT16_MAX) return 2;
    return 4;
}

namespace {

struct KeptStaging {
    std::mutex in_use;
    uint8_t* p = nullptr;
    size_t bytes = 0;
};

KeptStaging& kept() {
    static KeptStaging k;
    return k;
}

void free_pinned(uint8_t* p) noexcept;

// Registered with atexit at the first allocation, i.e. after the CUDA runtime's own exit
// handler, so it runs first: the buffer is unregistered while the driver still knows it.
void release_kept_staging() {
    KeptStaging& k = kept();
    std::lock_guard<std::mutex> lock(k.in_use);
    free_pinned(k.p);
    k.p = nullptr;
    k.bytes = 0;
}

void grow_kept(KeptStaging& k, size_t bytes);

// Page-locked host memory: first touched on the host's threads, then registered, which costs a
// fraction of cudaMallocHost's time for the same size on the lent host (allocating 256 MiB
// there took about 200 ms, registering touched memory about 40 ms a gigabyte).
uint8_t* allocate_pinned(size_t bytes) {
    const size_t page = 4096, size = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(page, size));
    if (!p) throw std::runtime_error("label staging: out of host memory");
    const int64_t pages = static_cast<int64_t>(size / page);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < pages; ++i) p[static_cast<size_t>(i) * page] = 0;
    const cudaError_t e = cudaHostRegister(p, size, cudaHostRegisterDefault);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        std::free(p);
        throw std::runtime_error(std::string("cudaHostRegister (label staging): ") + cudaGetErrorString(e));
    }
    return p;
}

void free_pinned(uint8_t* p) noexcept {
    if (!p) return;
    (void)cudaHostUnregister(p);
    std::free(p);
}

// With k.in_use held.
void grow_kept(KeptStaging& k, size_t bytes) {
    if (k.bytes >= bytes) return;
    static const bool at_exit = std::atexit(release_kept_staging) == 0;
    (void)at_exit;
    free_pinned(k.p);
    k.p = nullptr;
    k.bytes = 0;
    k.p = allocate_pinned(bytes);
    k.bytes = bytes;
}

template <class N>
void widen_row(const N* s, uint32_t* d, int64_t cols) {
    int64_t x = 0;
#ifdef __SSE2__
    // Streaming stores skip reading the destination's lines first (twice the rate on the lent host).
    while (x < cols && reinterpret_cast<uintptr_t>(d + x) % 16 != 0) d[x] = s[x], ++x;
    const __m128i z = _mm_setzero_si128();
    if constexpr (sizeof(N) == 1) {
        for (; x + 16 <= cols; x += 16) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + x));
            const __m128i lo = _mm_unpacklo_epi8(v, z), hi = _mm_unpackhi_epi8(v, z);
            __m128i* o = reinterpret_cast<__m128i*>(d + x);
            _mm_stream_si128(o + 0, _mm_unpacklo_epi16(lo, z));
            _mm_stream_si128(o + 1, _mm_unpackhi_epi16(lo, z));
            _mm_stream_si128(o + 2, _mm_unpacklo_epi16(hi, z));
            _mm_stream_si128(o + 3, _mm_unpackhi_epi16(hi, z));
        }
    } else {
        for (; x + 8 <= cols; x += 8) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + x));
            __m128i* o = reinterpret_cast<__m128i*>(d + x);
            _mm_stream_si128(o + 0, _mm_unpacklo_epi16(v, z));
            _mm_stream_si128(o + 1, _mm_unpackhi_epi16(v, z));
        }
    }
#endif
    for (; x < cols; ++x) d[x] = s[x];
}

template <class N>
void widen(const N* src, int64_t rows, int64_t cols, uint32_t* dst, int64_t dst_stride) {
#pragma omp parallel
    {
        // Dynamic: a thread the host deschedules for a while (seen on the lent VM) must not
        // hold up the band, whose widening the next band's download waits for.
#pragma omp for schedule(dynamic, 8)
        for (int64_t y = 0; y < rows; ++y) widen_row(src + y * cols, dst + y * dst_stride, cols);
#ifdef __SSE2__
        _mm_sfence();  // this thread's streaming stores are visible before the region ends
#endif
    }
}

}  // namespace

void reserve_label_staging(size_t bytes) {
    KeptStaging& k = kept();
    if (!k.in_use.try_lock()) return;
    std::lock_guard<std::mutex> held(k.in_use, std::adopt_lock);
    grow_kept(k, bytes);
}

LabelStaging::LabelStaging(size_t bytes) {
    KeptStaging& k = kept();
    if (k.in_use.try_lock()) {
        shared_ = true;
        try {
            grow_kept(k, bytes);
        } catch (...) {
            k.in_use.unlock();
            throw;
        }
        p_ = k.p;
    } else {
        p_ = allocate_pinned(bytes);
    }
}

LabelStaging::~LabelStaging() {
    if (shared_)
        kept().in_use.unlock();
    else
        free_pinned(p_);
}

void widen_labels(const uint8_t* src, int label_bytes, int64_t rows, int64_t cols, uint32_t* dst,
                  int64_t dst_stride) {
    if (label_bytes == 1)
        widen(src, rows, cols, dst, dst_stride);
    else if (label_bytes == 2)
        widen(reinterpret_cast<const uint16_t*>(src), rows, cols, dst, dst_stride);
    else
        throw std::invalid_argument("widen_labels: labels of 1 or 2 bytes");
}

}  // namespace tessera::cuda
