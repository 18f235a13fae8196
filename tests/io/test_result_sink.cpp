// Result sinks (io/result_sink.h): the HDF5 file, the GeoTIFF and arrays in memory hold the
// same result from the same window.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "io/raster_reader.h"
#include "io/result_sink.h"
#include "support/cli.h"

namespace tessera {
namespace {

TEST(ResultSinks, FileGeotiffAndMemoryHoldTheSameResult) {
    testing::TempDir dir("result_sink");
    const int64_t H = 37, W = 29, n = H * W;
    std::vector<float> u(static_cast<size_t>(n));
    std::vector<uint16_t> label(static_cast<size_t>(n));  // 2-byte labels, widened by every sink
    std::vector<int32_t> k(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        u[static_cast<size_t>(i)] = i % 13 == 0 ? std::nanf("") : 0.25f * static_cast<float>(i % 101) - 7.0f;
        label[static_cast<size_t>(i)] = static_cast<uint16_t>(i % 13 == 0 ? 0 : 300 + i % 7);
        k[static_cast<size_t>(i)] = static_cast<int32_t>(i % 5) - 2;
    }
    const UnwrapResultWindow win{Window{0, 0, H, W}, W, u.data(), label.data(), 2, k.data(), nullptr, nullptr};
    Comm self(MPI_COMM_SELF);
    {
        Hdf5Writer out(dir / "r.h5", MPI_COMM_SELF, H, W);
        auto h5 = hdf5_result_sink(out, 0);
        auto tif = geotiff_result_sink(dir / "r.tif", H, W, GeoRef{}, self);
        for (ResultSink* s : {h5.get(), tif.get()}) {
            s->write(win);
            s->finish({{"software", std::string("test")}});
        }
    }
    std::vector<float> mu(static_cast<size_t>(n));
    std::vector<uint32_t> ml(static_cast<size_t>(n));
    std::vector<int32_t> mk(static_cast<size_t>(n));
    MemoryResult mem{H, W, mu, ml, mk, {}};
    auto m = memory_result_sink(mem);
    m->write(win);
    m->finish({{"software", std::string("test")}});
    EXPECT_EQ(mem.attributes.size(), 1u);

    using testing::read_dataset;
    const auto fu = read_dataset<float>(dir / "r.h5", "unwrapped_phase");
    EXPECT_EQ(std::memcmp(fu.data(), mu.data(), mu.size() * 4), 0);
    EXPECT_EQ(std::memcmp(fu.data(), u.data(), u.size() * 4), 0);
    EXPECT_EQ(read_dataset<uint32_t>(dir / "r.h5", "connected_components"), ml);
    EXPECT_EQ(read_dataset<int32_t>(dir / "r.h5", "cycles"), mk);
    EXPECT_EQ(ml[1], 301u);
    RasterReader t(dir / "r.tif", 1);
    std::vector<float> tu(static_cast<size_t>(n));
    std::vector<uint8_t> ok(static_cast<size_t>(n));
    t.read_phase(Window{0, 0, H, W}, tu.data(), ok.data(), W);
    for (int64_t i = 0; i < n; ++i) {
        const size_t j = static_cast<size_t>(i);
        if (std::isnan(u[j])) {
            EXPECT_EQ(ok[j], 0) << i;
        } else {
            EXPECT_EQ(tu[j], u[j]) << i;
        }
    }
}

}  // namespace
}  // namespace tessera
