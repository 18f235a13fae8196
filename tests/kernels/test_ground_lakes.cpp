// RowRuns (kernels/ground_lakes.h): a window's unreliable runs gathered in parts (a chunked
// run's rows, section 5.1) are the runs of the whole window.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/ground_lakes.h"

namespace tessera {
namespace {

TEST(RowRuns, RowsAppendedInPartsAreTheRunsOfTheWhole) {
    const int64_t rows = 37, cols = 50, stride = 53, col0 = 100;
    std::mt19937 rng(7);
    std::vector<uint8_t> flags(static_cast<size_t>(rows * stride));
    for (auto& f : flags) f = (rng() % 3 == 0) ? kUnreliable : 0;
    for (int64_t c = 0; c < cols; ++c) flags[static_cast<size_t>(5 * stride + c)] = kUnreliable;  // a full row
    for (int64_t c = 0; c < cols; ++c) flags[static_cast<size_t>(6 * stride + c)] = 0;            // an empty one

    RowRuns whole;
    whole.append_rows(flags.data(), stride, rows, col0, cols);
    // Checked against a plain scan: row r's runs are the maximal stretches of unreliable pixels.
    ASSERT_EQ(whole.rows(), rows);
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<int32_t> want;
        for (int64_t c = 0; c < cols;) {
            if (!(flags[static_cast<size_t>(r * stride + c)] & kUnreliable)) {
                ++c;
                continue;
            }
            const int64_t s = c;
            while (c < cols && (flags[static_cast<size_t>(r * stride + c)] & kUnreliable)) ++c;
            want.push_back(static_cast<int32_t>(col0 + s)), want.push_back(static_cast<int32_t>(col0 + c));
        }
        const std::vector<int32_t> got(whole.cols.begin() + 2 * whole.row_start[static_cast<size_t>(r)],
                                       whole.cols.begin() + 2 * whole.row_start[static_cast<size_t>(r + 1)]);
        EXPECT_EQ(got, want) << "row " << r;
    }

    for (const int64_t split : {int64_t{0}, int64_t{6}, int64_t{20}, rows}) {
        RowRuns first, second, parts;
        first.append_rows(flags.data(), stride, split, col0, cols);
        second.append_rows(flags.data() + split * stride, stride, rows - split, col0, cols);
        parts.append(first);
        parts.append(second);
        EXPECT_EQ(parts.row_start, whole.row_start) << "split at " << split;
        EXPECT_EQ(parts.cols, whole.cols) << "split at " << split;
    }
}

}  // namespace
}  // namespace tessera
