// How large vectors hold memory: arrays their owner writes whole (no zeroing first), and
// freeing one at once.
#pragma once
#include <memory>
#include <type_traits>
#include <vector>

#include "kernels/host_memory.h"

namespace tessera {

// An allocator whose value-initialisation does nothing: a vector's resize leaves trivial
// elements as the memory had them (a large block is a fresh mapping of huge pages: zeros, not
// yet faulted in), so their owner writes them on the threads that use them, with no serial
// zeroing before.
template <class T>
struct ConstructLater : std::allocator<T> {
    static_assert(std::is_trivially_destructible_v<T>);
    template <class U>
    struct rebind {
        using other = ConstructLater<U>;
    };
    template <class U>
    void construct(U*) noexcept {}
    T* allocate(size_t n) { return static_cast<T*>(host_memory::take(n * sizeof(T))); }
    void deallocate(T* p, size_t n) noexcept { host_memory::give_back(p, n * sizeof(T)); }
};
template <class T>
using UntouchedVector = std::vector<T, ConstructLater<T>>;

// Frees a container's memory now: `v = {}` keeps a vector's capacity (it assigns an empty list).
template <class C>
void release(C& c) {
    C().swap(c);
}

}  // namespace tessera
