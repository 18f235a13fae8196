// HostBuffer (kernels/host_buffer.h): zero-filled arrays on both of its storages (the heap below
// host_memory::kMappedFrom, a mapping of their own from it), copied into by copy_on_threads (as a
// kept chunk input is), every element checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/host_buffer.h"

namespace tessera {
namespace {

template <class T>
void check_sizes(const std::vector<size_t>& sizes) {
    for (size_t n : sizes) {
        HostBuffer<T> z(n);
        ASSERT_EQ(z.size(), n);
        size_t nonzero = 0;
        for (size_t i = 0; i < n; ++i) nonzero += z[i] != T{0};
        EXPECT_EQ(nonzero, 0u) << n << " elements";
        std::vector<T> src(n);
        for (size_t i = 0; i < n; ++i) src[i] = static_cast<T>(i * 2654435761u + 7);
        HostBuffer<T> c(n);
        copy_on_threads(c.data(), src.data(), n);
        size_t differ = 0;
        for (size_t i = 0; i < n; ++i) differ += c[i] != src[i];
        EXPECT_EQ(differ, 0u) << n << " elements";
        HostBuffer<T> moved = std::move(c);  // ownership moves; the mapping is given back once
        EXPECT_EQ(moved.size(), n);
        if (n > 0) {
            EXPECT_EQ(moved[n - 1], src[n - 1]);
        }
    }
}

TEST(HostBuffer, ZeroedAndCopiedOnTheHeapAndInMappings) {
    const size_t per_map = host_memory::kMappedFrom;
    check_sizes<uint8_t>({0, 1, 4097, per_map - 1, per_map, per_map + 12345});
    check_sizes<float>({3, per_map / 4 - 1, per_map / 4, 3 * per_map / 4 + 5});
    check_sizes<uint32_t>({per_map / 2 + 1});
}

}  // namespace
}  // namespace tessera
