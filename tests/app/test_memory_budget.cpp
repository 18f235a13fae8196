// app/memory_budget.h: what the node offers, read as the kernel states it.
#include "app/memory_budget.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>

namespace tessera {
namespace {

int64_t proc_number(const char* path) {
    std::ifstream f(path);
    int64_t v = -1;
    return (f >> v) ? v : -1;
}

// The background writeback starts at vm.dirty_background_bytes where set, else at that ratio of
// the memory available (here the tests' stand-in for it).
TEST(MemoryBudget, WritebackThresholdAsTheKernelStatesIt) {
    const int64_t bytes = proc_number("/proc/sys/vm/dirty_background_bytes");
    const int64_t ratio = proc_number("/proc/sys/vm/dirty_background_ratio");
    if (bytes < 0 && ratio < 0) GTEST_SKIP() << "no /proc/sys/vm here";
    ASSERT_EQ(setenv("TESSERA_TEST_AVAILABLE_MEMORY", "40000000000", 1), 0);
    const int64_t got = writeback_threshold();
    unsetenv("TESSERA_TEST_AVAILABLE_MEMORY");
    if (bytes > 0)
        EXPECT_EQ(got, bytes);
    else
        EXPECT_EQ(got, int64_t{400000000} * ratio);
    EXPECT_GT(got, 0);
}

}  // namespace
}  // namespace tessera
