// deflate_bytes (io/chunk_deflate.h): ISA-L at level 1, zlib at others, in the zlib stream format
// that HDF5's deflate filter inflates: checked here with zlib's own inflate.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <vector>

#include "io/chunk_deflate.h"

namespace tessera {
namespace {

std::vector<unsigned char> inflated(const std::vector<unsigned char>& z, size_t len, size_t n) {
    std::vector<unsigned char> back(n + 1);
    uLongf got = back.size();
    if (uncompress(back.data(), &got, z.data(), static_cast<uLong>(len)) != Z_OK) return {};
    back.resize(got);
    return back;
}

TEST(ChunkDeflate, EveryLevelInflatesBackThroughZlib) {
    const size_t n = size_t{512} * 512 * 4;
    std::vector<unsigned char> runs(n), noise(n);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; ++i) {
        runs[i] = static_cast<unsigned char>((i / 50000) % 3);  // a label chunk's byte planes: long runs
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        noise[i] = static_cast<unsigned char>(x);
    }
    std::vector<unsigned char> z;
    for (int level : {1, 2, 6, 9})
        for (const auto* in : {&runs, &noise}) {
            const size_t len = deflate_bytes(in->data(), in->size(), level, z);
            ASSERT_GT(len, 0u) << level;
            EXPECT_EQ(inflated(z, len, n), *in) << "level " << level;
            if (in == &runs) EXPECT_LT(len, n / 100) << "level " << level;  // runs deflate
        }
    EXPECT_EQ(inflated(z, deflate_bytes(runs.data(), 0, 1, z), 0), std::vector<unsigned char>{});  // nothing in, a valid stream
}

}  // namespace
}  // namespace tessera
