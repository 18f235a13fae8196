// summarize_result (io/hdf5_writer.h), what `tessera info` reports: counts from the pixels of a
// file written here by hand (NaN phase, labels 0, labels past 2^24, rows not a block multiple),
// checked against the same counts taken from the arrays written.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "io/hdf5_writer.h"
#include "io/input_error.h"
#include "support/cli.h"

namespace tessera {
namespace {

using testing::TempDir;

void write_result(const std::string& path, int64_t rows, int64_t cols, const std::vector<float>& u,
                  const std::vector<uint32_t>& l, bool tessera = true) {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
    hid_t sp = H5Screate_simple(2, dims, nullptr);
    hid_t d = H5Dcreate2(f, "unwrapped_phase", H5T_NATIVE_FLOAT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, u.data());
    H5Dclose(d);
    d = H5Dcreate2(f, "connected_components", H5T_NATIVE_UINT32, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, l.data());
    H5Dclose(d);
    H5Sclose(sp);
    hid_t st = H5Tcopy(H5T_C_S1);
    const std::string sw = tessera ? "tessera test" : "other";
    H5Tset_size(st, sw.size());
    hid_t ss = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "software", st, ss, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, st, sw.data());
    H5Aclose(a);
    H5Sclose(ss);
    H5Tclose(st);
    H5Fclose(f);
}

TEST(ResultSummary, CountsFromThePixels) {
    TempDir dir("result_summary");
    // Wide enough that the summary reads several row blocks (4 Mi pixels each).
    const int64_t rows = 700, cols = 9000, n = rows * cols;
    std::vector<float> u(static_cast<size_t>(n));
    std::vector<uint32_t> l(static_cast<size_t>(n));
    uint64_t s = 7;
    for (int64_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t r = static_cast<uint32_t>(s >> 40);
        u[static_cast<size_t>(i)] = r % 11 == 0 ? std::numeric_limits<float>::quiet_NaN() : 0.001f * static_cast<float>(r % 1000);
        const uint32_t pick = r % 100;  // sizes: label 1 most, then 2, 3, ...; a few huge labels
        l[static_cast<size_t>(i)] = pick < 40 ? 1 : pick < 65 ? 2 : pick < 80 ? 3 : pick < 85 ? 4 + r % 50
                                  : pick < 87 ? (1u << 24) + 5 : pick < 88 ? 0xFFFFFFFFu : 0;
    }
    write_result(dir / "r.h5", rows, cols, u, l);
    int64_t finite = 0, labelled = 0, blocks = 0;
    std::map<uint32_t, int64_t> size;
    for (int64_t i = 0; i < n; ++i)
        if (std::isfinite(u[static_cast<size_t>(i)])) {
            ++finite;
            if (l[static_cast<size_t>(i)] != 0) ++labelled, ++size[l[static_cast<size_t>(i)]];
        }
    const ResultSummary r = summarize_result(dir / "r.h5", 6, 100, [&] { ++blocks; });
    EXPECT_EQ(r.rows, rows);
    EXPECT_EQ(r.cols, cols);
    EXPECT_EQ(r.finite, finite);
    EXPECT_EQ(r.labelled, labelled);
    EXPECT_EQ(r.components, static_cast<int64_t>(size.size()));
    EXPECT_GT(blocks, 1);
    ASSERT_EQ(r.largest.size(), 6u);
    for (size_t k = 0; k < r.largest.size(); ++k) {
        EXPECT_EQ(r.largest[k].second, size[r.largest[k].first]) << k;
        if (k > 0) EXPECT_GE(r.largest[k - 1].second, r.largest[k].second) << k;
    }
    // No label left out is larger than the last one listed.
    for (const auto& [label, pixels] : size) {
        bool listed = false;
        for (const auto& x : r.largest) listed |= x.first == label;
        if (!listed) EXPECT_LE(pixels, r.largest.back().second) << label;
    }
    EXPECT_EQ(r.largest[0].first, 1u);
    ASSERT_EQ(r.attributes.size(), 1u);
    EXPECT_EQ(r.attributes[0].second, "tessera test");
}

TEST(ResultSummary, RefusesForeignAndIncompleteFiles) {
    TempDir dir("result_summary_bad");
    write_result(dir / "other.h5", 2, 2, {0, 0, 0, 0}, {1, 1, 1, 1}, false);
    EXPECT_THROW(summarize_result(dir / "other.h5"), InputError);
    hid_t f = H5Fcreate((dir / "empty.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 7);
    hid_t ss = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "software", st, ss, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, st, "tessera");
    H5Aclose(a), H5Sclose(ss), H5Tclose(st), H5Fclose(f);
    try {
        summarize_result(dir / "empty.h5");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("unwrapped_phase"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tessera
