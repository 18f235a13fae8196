// RasterReader over GeoTIFF layouts (tiles and strips with partial edges, a single strip GDAL splits
// into rows, a band of several, band- and pixel-interleaved, big-endian, compressed, 12-bit) reads
// what GDAL's RasterIO reads: its phase, its float values, and those visited on one thread.
#include <gtest/gtest.h>

#include <gdal_priv.h>
#include <cpl_string.h>
#include <omp.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "io/gdal_session.h"
#include "io/raster_reader.h"
#include "support/cli.h"

namespace tessera {
namespace {

struct Layout {
    std::string name;
    int W, H, bands;
    GDALDataType type;
    std::vector<std::string> options;  // creation options
};

// A GTiff of random bytes (finite values for float types: the reads below compare values).
std::string make(const testing::TempDir& dir, const Layout& l, uint32_t seed) {
    register_gdal_once();
    const std::string p = dir / (l.name + ".tif");
    CPLStringList o;
    for (const std::string& kv : l.options) o.AddString(kv.c_str());
    GDALDatasetUniquePtr ds(GetGDALDriverManager()->GetDriverByName("GTiff")->Create(p.c_str(), l.W, l.H, l.bands, l.type, o.List()));
    EXPECT_TRUE(ds != nullptr) << l.name;
    if (!ds) return p;
    const size_t sz = static_cast<size_t>(GDALGetDataTypeSizeBytes(l.type)), n = static_cast<size_t>(l.W) * l.H;
    std::mt19937 rng(seed);
    for (int b = 1; b <= l.bands; ++b) {
        std::vector<double> v(n * (GDALDataTypeIsComplex(l.type) ? 2 : 1));
        std::uniform_real_distribution<double> u(0.0, 250.0);
        for (double& x : v) x = std::floor(u(rng)) + (l.type == GDT_Float32 || l.type == GDT_Float64 || l.type == GDT_CFloat32 ? 0.25 : 0.0);
        std::vector<std::byte> bytes(n * sz);
        GDALCopyWords64(v.data(), GDALDataTypeIsComplex(l.type) ? GDT_CFloat64 : GDT_Float64, GDALDataTypeIsComplex(l.type) ? 16 : 8,
                        bytes.data(), l.type, static_cast<int>(sz), static_cast<GPtrDiff_t>(n));
        EXPECT_EQ(ds->GetRasterBand(b)->RasterIO(GF_Write, 0, 0, l.W, l.H, bytes.data(), l.W, l.H, l.type, 0, 0, nullptr), CE_None);
    }
    return p;
}

std::vector<Layout> layouts() {
    return {
        {"tiles_partial", 300, 200, 1, GDT_Float32, {"TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=32"}},
        {"strips_partial", 130, 200, 1, GDT_Int16, {"BLOCKYSIZE=7"}},
        {"default_strips", 101, 400, 1, GDT_Byte, {}},
        {"split_strip", 3000, 2000, 1, GDT_Float32, {"BLOCKYSIZE=2000"}},
        {"complex_tiles", 100, 90, 1, GDT_CFloat32, {"TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=16"}},
        {"two_bands_by_band", 70, 50, 2, GDT_Float64, {"INTERLEAVE=BAND", "TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"}},
        {"two_bands_by_pixel", 70, 50, 2, GDT_Float32, {"INTERLEAVE=PIXEL"}},
        {"big_endian", 70, 50, 1, GDT_Float32, {"ENDIANNESS=BIG"}},
        {"deflate", 70, 50, 1, GDT_Float32, {"COMPRESS=DEFLATE"}},
        {"twelve_bits", 70, 50, 1, GDT_UInt16, {"NBITS=12"}},
    };
}

// On threads where the window has 4 Mi pixels or more (the split strip).
TEST(RasterLayouts, ReaderReadsWhatRasterIoReads) {
    testing::TempDir dir{"raster_layouts"};
    const int threads = omp_get_max_threads();
    omp_set_num_threads(4);
    uint32_t seed = 11;
    for (const Layout& l : layouts()) {
        SCOPED_TRACE(l.name);
        const std::string p = make(dir, l, seed++);
        const Window w{1, 2, l.H - 2, l.W - 5};
        std::vector<float> want(static_cast<size_t>(w.size()));
        {
            GDALDatasetUniquePtr ds(GDALDataset::Open(p.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
            GDALRasterBand* band = ds->GetRasterBand(l.bands);
            if (GDALDataTypeIsComplex(l.type)) {  // read_float's magnitude
                std::vector<double> c(2 * want.size());
                ASSERT_EQ(band->RasterIO(GF_Read, 2, 1, static_cast<int>(w.cols), static_cast<int>(w.rows), c.data(),
                                         static_cast<int>(w.cols), static_cast<int>(w.rows), GDT_CFloat64, 0, 0, nullptr), CE_None);
                for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(std::hypot(c[2 * i], c[2 * i + 1]));
            } else {
                ASSERT_EQ(band->RasterIO(GF_Read, 2, 1, static_cast<int>(w.cols), static_cast<int>(w.rows), want.data(),
                                         static_cast<int>(w.cols), static_cast<int>(w.rows), GDT_Float32, 0, 0, nullptr), CE_None);
            }
        }
        RasterReader rd(p, l.bands);
        std::vector<float> got(want.size(), -1.0f), here(want.size(), -1.0f);
        rd.read_float(w, got.data(), w.cols);
        rd.visit_float_here(w, 0, [&](int, int64_t r, int64_t c, const float* v, int64_t n) {
            std::memcpy(&here[static_cast<size_t>(r * w.cols + c)], v, static_cast<size_t>(n) * 4);
        });
        EXPECT_EQ(got, want);
        EXPECT_EQ(here, want);
        if (!GDALDataTypeIsComplex(l.type)) {
            std::vector<float> ph(want.size(), -1.0f);
            std::vector<uint8_t> va(want.size(), 9);
            rd.read_phase(w, ph.data(), va.data(), w.cols);
            EXPECT_EQ(ph, want);
            EXPECT_EQ(std::count(va.begin(), va.end(), 1), static_cast<std::ptrdiff_t>(va.size()));
        }
    }
    omp_set_num_threads(threads);
}

}  // namespace
}  // namespace tessera
