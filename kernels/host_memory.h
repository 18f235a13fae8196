// Host memory for large arrays: a mapping of their own with transparent huge pages asked for
// (first touches ran at 26 GB/s on 2 MiB pages against 13 on 4 KiB ones on the lent H100 host,
// bench/results/gpu_h100_host_io.md), the heap for small ones.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <new>

#include "kernels/ab_switch.h"

namespace tessera {

namespace host_memory {

constexpr size_t kMappedFrom = size_t{8} << 20;  // bytes from which an array is a mapping of its own

// Untouched memory for `bytes`: a private anonymous mapping with huge pages asked for (ignored
// where the kernel's THP mode is "never"), or the heap for small arrays.
inline void* take(size_t bytes) {
    if (bytes < kMappedFrom) return ::operator new(bytes);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    static const bool huge = !switch_is("TESSERA_HUGE_PAGES", "0");  // 4 KiB pages (A/B studies)
    if (huge) (void)::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: a refusal leaves 4 KiB pages
#endif
    return p;
}

inline void give_back(void* p, size_t bytes) {
    if (!p) return;
    if (bytes < kMappedFrom)
        ::operator delete(p);
    else
        ::munmap(p, bytes);
}

}  // namespace host_memory

}  // namespace tessera
