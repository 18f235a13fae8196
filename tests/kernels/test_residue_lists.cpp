// joined: a streamed region's residue lists, chunk by chunk, made one list.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/residue_lists.h"

namespace tessera {
namespace {

TEST(ResidueLists, JoinedIsThePartsOneAfterAnotherAndFreesThem) {
    std::mt19937_64 rng(7);
    // Sizes across the copy's block of 2^16 (threads) and an empty part between.
    const std::vector<size_t> sizes{3, 0, 70000, 1, 200000, 65536};
    std::vector<ResidueList> parts;
    std::vector<Residue> whole;
    int64_t id = 0;
    for (size_t n : sizes) {
        ResidueList p(n);
        for (Residue& r : p) {
            id += 1 + static_cast<int64_t>(rng() % 5);
            r = {id, static_cast<int32_t>(rng() % 1000), static_cast<int32_t>(rng() % 1000), rng() % 2 ? 1 : -1};
            whole.push_back(r);
        }
        parts.push_back(std::move(p));
    }
    const ResidueList got = joined(parts);
    ASSERT_EQ(got.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
        ASSERT_EQ(got[i].id, whole[i].id) << i;
        ASSERT_EQ(got[i].r, whole[i].r) << i;
        ASSERT_EQ(got[i].c, whole[i].c) << i;
        ASSERT_EQ(got[i].sign, whole[i].sign) << i;
    }
    EXPECT_TRUE(parts.empty());
    std::vector<ResidueList> none;
    EXPECT_TRUE(joined(none).empty());
}

}  // namespace
}  // namespace tessera
