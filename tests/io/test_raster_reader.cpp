// RasterReader and the GeoTIFF writer: round trips, windows with a stride, complex input,
// invalid pixels, and one clear InputError per bad input.
#include <gtest/gtest.h>

#include <gdal_priv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <ogr_spatialref.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "support/cli.h"
#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "io/raster_reader.h"

namespace fs = std::filesystem;
using tessera::GeoRef;
using tessera::InputError;
using tessera::RasterReader;
using tessera::Window;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class RasterIoTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/tessera_rr_XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        std::error_code ec;
        fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(dir_, ec);
    }
    std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

    // Writes a one-band GTiff of any type through GDAL directly (complex, integer types).
    template <typename T>
    std::string write_raw(const std::string& name, int rows, int cols, GDALDataType type,
                          const std::vector<T>& data, std::optional<double> nodata = std::nullopt,
                          int bands = 1) {
        GDALAllRegister();
        const std::string p = path(name);
        GDALDriver* drv = GetGDALDriverManager()->GetDriverByName("GTiff");
        GDALDatasetUniquePtr ds(drv->Create(p.c_str(), cols, rows, bands, type, nullptr));
        EXPECT_TRUE(ds != nullptr);
        for (int b = 1; b <= bands; ++b) {
            GDALRasterBand* band = ds->GetRasterBand(b);
            if (nodata) band->SetNoDataValue(*nodata);
            EXPECT_EQ(band->RasterIO(GF_Write, 0, 0, cols, rows, const_cast<T*>(data.data()), cols,
                                     rows, type, 0, 0, nullptr),
                      CE_None);
        }
        return p;
    }

    std::string dir_;
};

// Expect an InputError whose message names the file and contains `problem`.
template <typename F>
void expect_input_error(F&& f, const std::string& file, const std::string& problem) {
    try {
        f();
        ADD_FAILURE() << "no InputError for " << file << " (expected '" << problem << "')";
    } catch (const InputError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(file), std::string::npos) << what;
        EXPECT_NE(what.find(problem), std::string::npos) << what;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type: " << e.what();
    }
}

GeoRef utm_geo() {
    GeoRef g;
    g.has_geotransform = true;
    g.geotransform = {350000.0, 30.0, 0.0, 3900000.0, 0.0, -30.0};
    OGRSpatialReference srs;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    if (srs.importFromEPSG(32611) == OGRERR_NONE) {
        char* wkt = nullptr;
        srs.exportToWkt(&wkt);
        if (wkt) g.projection_wkt = wkt;
        CPLFree(wkt);
    }
    CPLPopErrorHandler();
    return g;
}

}  // namespace

TEST_F(RasterIoTest, Float32RoundTripWindowWithStride) {
    const int rows = 600, cols = 700;  // several 256x256 tiles
    std::vector<float> img(static_cast<size_t>(rows) * cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) img[static_cast<size_t>(r) * cols + c] = std::sin(0.01f * r) + 0.001f * c;
    img[5 * cols + 260] = kNaN;
    img[300 * cols + 400] = -9999.0f;  // nodata
    img[301 * cols + 401] = std::numeric_limits<float>::infinity();
    const std::string p = path("phase.tif");
    const GeoRef geo = utm_geo();
    tessera::write_geotiff_f32(p, rows, cols, img.data(), geo, -9999.0);
    EXPECT_TRUE(tessera::testing::temporaries_of(p).empty());

    RasterReader rd(p, 1);
    const auto& info = rd.info();
    EXPECT_EQ(info.rows, rows);
    EXPECT_EQ(info.cols, cols);
    EXPECT_EQ(info.band_count, 1);
    EXPECT_FALSE(info.is_complex);
    EXPECT_EQ(info.data_type, "Float32");
    ASSERT_TRUE(info.nodata.has_value());
    EXPECT_EQ(*info.nodata, -9999.0);
    EXPECT_TRUE(info.has_geotransform);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(info.geotransform[i], geo.geotransform[i]);
    if (!geo.projection_wkt.empty()) {
        EXPECT_NE(info.projection_wkt.find("32611"), std::string::npos) << info.projection_wkt;
    }

    // A window straddling tile borders, into a buffer wider than the window.
    const Window w{3, 250, 400, 300};
    const int64_t stride = w.cols + 13;
    std::vector<float> ph(static_cast<size_t>(w.rows * stride), 42.0f);
    std::vector<uint8_t> va(static_cast<size_t>(w.rows * stride), 7);
    rd.read_phase(w, ph.data(), va.data(), stride);
    int64_t invalid = 0;
    for (int64_t r = 0; r < w.rows; ++r) {
        for (int64_t c = 0; c < stride; ++c) {
            const size_t i = static_cast<size_t>(r * stride + c);
            if (c >= w.cols) {  // padding untouched
                ASSERT_EQ(ph[i], 42.0f);
                ASSERT_EQ(va[i], 7);
                continue;
            }
            const float src = img[static_cast<size_t>(w.row0 + r) * cols + (w.col0 + c)];
            if (!std::isfinite(src) || src == -9999.0f) {
                EXPECT_EQ(va[i], 0);
                EXPECT_EQ(ph[i], 0.0f);
                ++invalid;
            } else {
                ASSERT_EQ(va[i], 1);
                ASSERT_EQ(ph[i], src);
            }
        }
    }
    EXPECT_EQ(invalid, 3);

    // read_float: NaN / nodata / Inf -> 0.
    std::vector<float> f(static_cast<size_t>(w.rows * stride), 42.0f);
    rd.read_float(w, f.data(), stride);
    EXPECT_EQ(f[static_cast<size_t>((5 - w.row0) * stride + (260 - w.col0))], 0.0f);
    EXPECT_EQ(f[static_cast<size_t>((300 - w.row0) * stride + (400 - w.col0))], 0.0f);
    EXPECT_EQ(f[static_cast<size_t>((301 - w.row0) * stride + (401 - w.col0))], 0.0f);
    EXPECT_EQ(f[0], img[static_cast<size_t>(w.row0) * cols + w.col0]);
    EXPECT_EQ(f[static_cast<size_t>(w.cols)], 42.0f);

    // Out-of-range windows and too-small strides are programming errors, not input errors.
    EXPECT_THROW(rd.read_phase(Window{0, 0, rows + 1, 1}, ph.data(), va.data(), 1), std::out_of_range);
    EXPECT_THROW(rd.read_phase(Window{0, 0, 2, 10}, ph.data(), va.data(), 5), std::invalid_argument);
}

// read_phase's RowsDone (the CUDA backend uploads rows as they come): every row of the
// window is reported exactly once, and its phase and validity are final when it is.
TEST_F(RasterIoTest, ReadPhaseReportsEachRowOnceWhenFinal) {
    const int rows = 1100, cols = 4096;  // strips of 1024 rows: two of them
    std::vector<float> img(static_cast<size_t>(rows) * cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) img[static_cast<size_t>(r) * cols + c] = std::cos(0.003f * r * c) * 3.0f;
    img[1050 * cols + 7] = kNaN;
    const std::string p = path("rows.tif");
    tessera::write_geotiff_f32(p, rows, cols, img.data(), GeoRef{}, std::nullopt);
    RasterReader rd(p, 1);
    const Window w{2, 5, rows - 2, cols - 9};
    const int64_t stride = cols;
    std::vector<float> ph(static_cast<size_t>(w.rows * stride), 42.0f), seen = ph;
    std::vector<uint8_t> va(static_cast<size_t>(w.rows * stride), 7), seen_va = va;
    std::vector<int> reported(static_cast<size_t>(w.rows), 0);
    std::mutex mu;
    int calls = 0;
    rd.read_phase(w, ph.data(), va.data(), stride, [&](int64_t r0, int64_t n) {
        std::lock_guard<std::mutex> lock(mu);
        ++calls;
        ASSERT_GE(r0, 0);
        ASSERT_LE(r0 + n, w.rows);
        for (int64_t r = r0; r < r0 + n; ++r) {
            ++reported[static_cast<size_t>(r)];
            const size_t o = static_cast<size_t>(r * stride);
            std::copy(ph.begin() + static_cast<std::ptrdiff_t>(o), ph.begin() + static_cast<std::ptrdiff_t>(o + stride), seen.begin() + static_cast<std::ptrdiff_t>(o));
            std::copy(va.begin() + static_cast<std::ptrdiff_t>(o), va.begin() + static_cast<std::ptrdiff_t>(o + stride), seen_va.begin() + static_cast<std::ptrdiff_t>(o));
        }
    });
    EXPECT_GE(calls, 2) << "one report for the whole window: the rows did not come as they were read";
    EXPECT_TRUE(std::all_of(reported.begin(), reported.end(), [](int k) { return k == 1; }));
    EXPECT_TRUE(std::memcmp(seen.data(), ph.data(), ph.size() * sizeof(float)) == 0) << "a row changed after it was reported";
    EXPECT_EQ(seen_va, va);
    EXPECT_EQ(va[static_cast<size_t>((1050 - w.row0) * stride + (7 - w.col0))], 0);
    EXPECT_EQ(ph[static_cast<size_t>((600 - w.row0) * stride + (100 - w.col0))], img[600 * cols + 100]);
}

// visit_float / visit_mask and read_phase's `each`: every pixel of a window given once, on a thread
// numbered below omp_get_max_threads(), with the values the plain reads give (checked against the
// image written), the phase and validity already in place when its piece is reported. Windows of
// 4 Mi pixels or more are read on threads; a tiled float32 and a byte GeoTIFF come straight from
// their blocks, an Int16 stripped one and a CFloat32 one through a buffer.
TEST_F(RasterIoTest, VisitsGiveEachPixelOnceAsTheReadsDo) {
    const int rows = 2100, cols = 2110;
    const size_t n = static_cast<size_t>(rows) * cols;
    std::vector<float> img(n);
    std::vector<uint8_t> m(n);
    std::vector<int16_t> i16(n);
    std::vector<std::complex<float>> cf(n);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const size_t i = static_cast<size_t>(r) * cols + c;
            img[i] = std::sin(0.01f * r) * std::cos(0.013f * c) + 0.0001f * static_cast<float>(i % 97);
            m[i] = static_cast<uint8_t>((r * 7 + c * 3) % 5);  // 0 masked; 4 is the nodata below
            i16[i] = static_cast<int16_t>((r * 31 + c * 17) % 2000 - 1000);
            cf[i] = {static_cast<float>(r % 13) - 6.0f, static_cast<float>(c % 11) - 5.0f};
        }
    for (size_t i = 0; i < n; i += 1009) img[i] = kNaN;
    for (size_t i = 5; i < n; i += 2003) img[i] = -9999.0f;
    const std::string fp = path("f.tif"), mp = path("m.tif");
    tessera::write_geotiff_f32(fp, rows, cols, img.data(), GeoRef{}, -9999.0);
    {
        GDALAllRegister();
        CPLStringList opts;
        opts.SetNameValue("TILED", "YES");
        GDALDatasetUniquePtr ds(GetGDALDriverManager()->GetDriverByName("GTiff")->Create(
            mp.c_str(), cols, rows, 1, GDT_Byte, opts.List()));
        ASSERT_TRUE(ds != nullptr);
        ds->GetRasterBand(1)->SetNoDataValue(4.0);
        ASSERT_EQ(ds->GetRasterBand(1)->RasterIO(GF_Write, 0, 0, cols, rows, m.data(), cols, rows, GDT_Byte, 0, 0, nullptr), CE_None);
    }
    const std::string ip = write_raw("i16.tif", rows, cols, GDT_Int16, i16, -1000.0);
    const std::string cp = write_raw("c.tif", rows, cols, GDT_CFloat32, cf);

    const Window w{3, 5, rows - 4, cols - 7};  // 4.4 Mi pixels: on threads
    ASSERT_GE(w.rows * w.cols, int64_t{1} << 22);
    const int T = omp_get_max_threads();
    auto at = [&](int64_t r, int64_t c) { return static_cast<size_t>((w.row0 + r) * cols + w.col0 + c); };
    auto check_float = [&](const std::string& file, auto expected) {
        SCOPED_TRACE(file);
        std::vector<float> got(static_cast<size_t>(w.size()), 42.0f), plain(got.size());
        std::vector<uint8_t> seen(got.size(), 0);
        std::atomic<bool> bad_thread{false};
        RasterReader rd(file, 1);
        rd.visit_float(w, [&](int t, int64_t r, int64_t c, const float* v, int64_t k) {
            if (t < 0 || t >= T) bad_thread = true;
            for (int64_t j = 0; j < k; ++j) {
                const size_t i = static_cast<size_t>(r * w.cols + c + j);
                got[i] = v[j], ++seen[i];
            }
        });
        EXPECT_FALSE(bad_thread);
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(seen.size()));
        rd.read_float(w, plain.data(), w.cols);
        int64_t wrong = 0;
        for (int64_t r = 0; r < w.rows; ++r)
            for (int64_t c = 0; c < w.cols; ++c) {
                const size_t i = static_cast<size_t>(r * w.cols + c);
                const float want = expected(at(r, c));
                wrong += got[i] != want || plain[i] != want;
            }
        EXPECT_EQ(wrong, 0);
    };
    check_float(fp, [&](size_t i) { return std::isfinite(img[i]) && img[i] != -9999.0f ? img[i] : 0.0f; });
    check_float(ip, [&](size_t i) { return i16[i] == -1000 ? 0.0f : static_cast<float>(i16[i]); });
    check_float(cp, [&](size_t i) { return static_cast<float>(std::hypot(double{cf[i].real()}, double{cf[i].imag()})); });

    {  // the byte mask: 1 where nonzero and not the nodata 4
        std::vector<uint8_t> got(static_cast<size_t>(w.size()), 9), seen(got.size(), 0), plain(got.size());
        RasterReader rm(mp, 1);
        rm.visit_mask(w, [&](int, int64_t r, int64_t c, const uint8_t* v, int64_t k) {
            for (int64_t j = 0; j < k; ++j) {
                const size_t i = static_cast<size_t>(r * w.cols + c + j);
                got[i] = v[j], ++seen[i];
            }
        });
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(seen.size()));
        rm.read_mask(w, plain.data(), w.cols);
        int64_t wrong = 0;
        for (int64_t r = 0; r < w.rows; ++r)
            for (int64_t c = 0; c < w.cols; ++c) {
                const uint8_t want = m[at(r, c)] != 0 && m[at(r, c)] != 4;
                wrong += got[static_cast<size_t>(r * w.cols + c)] != want || plain[static_cast<size_t>(r * w.cols + c)] != want;
            }
        EXPECT_EQ(wrong, 0);
    }

    for (const std::string& file : {fp, ip}) {  // read_phase's pieces, each once and already in place
        SCOPED_TRACE(file);
        RasterReader rd(file, 1);
        const int64_t stride = w.cols + 3;
        std::vector<float> ph(static_cast<size_t>(w.rows * stride), kNaN);  // a read never gives NaN
        std::vector<uint8_t> va(ph.size(), 7), seen(ph.size(), 0);
        std::atomic<int64_t> early{0};
        rd.read_phase(w, ph.data(), va.data(), stride, {}, [&](int, int64_t r, int64_t c, int64_t k) {
            for (int64_t j = 0; j < k; ++j) {
                const size_t i = static_cast<size_t>(r * stride + c + j);
                ++seen[i];
                if (va[i] > 1 || std::isnan(ph[i])) ++early;
            }
        });
        EXPECT_EQ(early.load(), 0) << "a piece reported before its values were in place";
        int64_t once = 0;
        for (int64_t r = 0; r < w.rows; ++r)
            for (int64_t c = 0; c < w.cols; ++c) once += seen[static_cast<size_t>(r * stride + c)] == 1;
        EXPECT_EQ(once, w.size());
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 0), static_cast<std::ptrdiff_t>(ph.size() - static_cast<size_t>(w.size())));
    }
}

TEST_F(RasterIoTest, NaNNodataAndNoNodata) {
    std::vector<float> img = {0.5f, kNaN, -1.0f, 2.0f, -std::numeric_limits<float>::infinity(), 3.0f};
    const std::string p = path("nan_nodata.tif");
    tessera::write_geotiff_f32(p, 2, 3, img.data(), GeoRef{}, std::numeric_limits<double>::quiet_NaN());
    RasterReader rd(p, 1);
    ASSERT_TRUE(rd.info().nodata.has_value());
    EXPECT_TRUE(std::isnan(*rd.info().nodata));
    EXPECT_FALSE(rd.info().has_geotransform);
    std::vector<float> ph(6);
    std::vector<uint8_t> va(6);
    rd.read_phase(Window{0, 0, 2, 3}, ph.data(), va.data(), 3);
    EXPECT_EQ(va, (std::vector<uint8_t>{1, 0, 1, 1, 0, 1}));
    EXPECT_EQ(ph, (std::vector<float>{0.5f, 0.0f, -1.0f, 2.0f, 0.0f, 3.0f}));

    // No nodata at all: only NaN/Inf are invalid.
    const std::string q = path("no_nodata.tif");
    tessera::write_geotiff_f32(q, 2, 3, img.data(), GeoRef{}, std::nullopt);
    RasterReader rq(q, 1);
    EXPECT_FALSE(rq.info().nodata.has_value());
    rq.read_phase(Window{0, 0, 2, 3}, ph.data(), va.data(), 3);
    EXPECT_EQ(va, (std::vector<uint8_t>{1, 0, 1, 1, 0, 1}));
}

TEST_F(RasterIoTest, ComplexPhaseIsArg) {
    const int rows = 4, cols = 5;
    std::vector<std::complex<float>> img(rows * cols);
    for (int i = 0; i < rows * cols; ++i) img[i] = std::polar(1.0f + 0.1f * i, -3.0f + 0.3f * i);
    img[3] = {0.0f, 0.0f};          // invalid: exactly 0+0i
    img[7] = {kNaN, 1.0f};          // invalid: NaN
    img[9] = {-2.0f, 0.0f};         // arg = pi
    img[11] = {0.0f, -0.5f};        // arg = -pi/2
    const std::string p = write_raw("ifg.tif", rows, cols, GDT_CFloat32, img);
    RasterReader rd(p, 1);
    EXPECT_TRUE(rd.info().is_complex);
    EXPECT_EQ(rd.info().data_type, "CFloat32");

    const Window w{1, 1, 3, 4};
    const int64_t stride = 6;
    std::vector<float> ph(w.rows * stride, 9.0f);
    std::vector<uint8_t> va(w.rows * stride, 9);
    rd.read_phase(w, ph.data(), va.data(), stride);
    for (int64_t r = 0; r < w.rows; ++r) {
        for (int64_t c = 0; c < w.cols; ++c) {
            const int src = static_cast<int>((w.row0 + r) * cols + w.col0 + c);
            const size_t i = static_cast<size_t>(r * stride + c);
            if (src == 7) {
                EXPECT_EQ(va[i], 0);
                EXPECT_EQ(ph[i], 0.0f);
            } else {
                EXPECT_EQ(va[i], 1);
                EXPECT_EQ(ph[i], std::atan2(img[src].imag(), img[src].real())) << src;
            }
        }
        EXPECT_EQ(ph[static_cast<size_t>(r * stride + w.cols)], 9.0f);
    }
    std::vector<float> all(rows * cols);
    std::vector<uint8_t> vall(rows * cols);
    rd.read_phase(Window{0, 0, rows, cols}, all.data(), vall.data(), cols);
    EXPECT_EQ(vall[3], 0);
    EXPECT_EQ(all[3], 0.0f);
    EXPECT_FLOAT_EQ(all[9], static_cast<float>(M_PI));
    EXPECT_FLOAT_EQ(all[11], static_cast<float>(-M_PI / 2));

    // Complex read as a real quantity: the magnitude.
    std::vector<float> mag(rows * cols);
    rd.read_float(Window{0, 0, rows, cols}, mag.data(), cols);
    EXPECT_NEAR(mag[0], 1.0f, 1e-6f);
    EXPECT_EQ(mag[7], 0.0f);
}

TEST_F(RasterIoTest, ComplexInt16AndFloat64) {
    std::vector<int16_t> ci = {3, 4, 0, 0, -5, 0, 0, 7};  // 1x4 pixels: (3,4), (0,0), (-5,0), (0,7)
    const std::string p = write_raw("cint16.tif", 1, 4, GDT_CInt16, ci);
    RasterReader rd(p, 1);
    EXPECT_TRUE(rd.info().is_complex);
    std::vector<float> ph(4);
    std::vector<uint8_t> va(4);
    rd.read_phase(Window{0, 0, 1, 4}, ph.data(), va.data(), 4);
    EXPECT_EQ(va, (std::vector<uint8_t>{1, 0, 1, 1}));
    EXPECT_EQ(ph[0], std::atan2(4.0f, 3.0f));
    EXPECT_FLOAT_EQ(ph[2], static_cast<float>(M_PI));
    EXPECT_FLOAT_EQ(ph[3], static_cast<float>(M_PI / 2));

    // Float64 with a nodata value that is not exact in float32.
    std::vector<double> d = {0.1, 1.0000000001, 2.5, -3.0};
    const std::string q = write_raw("f64.tif", 2, 2, GDT_Float64, d, 1.0000000001);
    RasterReader r64(q, 1);
    EXPECT_EQ(r64.info().data_type, "Float64");
    r64.read_phase(Window{0, 0, 2, 2}, ph.data(), va.data(), 2);
    EXPECT_EQ((std::vector<uint8_t>(va.begin(), va.begin() + 4)), (std::vector<uint8_t>{1, 0, 1, 1}));
    EXPECT_EQ(ph[0], 0.1f);
    EXPECT_EQ(ph[1], 0.0f);
    EXPECT_EQ(ph[3], -3.0f);
}

TEST_F(RasterIoTest, IntegerTypesAndMasks) {
    // Int16 phase-like values with nodata -32768.
    std::vector<int16_t> i16 = {1, -32768, -3, 4};
    const std::string p = write_raw("i16.tif", 2, 2, GDT_Int16, i16, -32768.0);
    RasterReader rd(p, 1);
    EXPECT_EQ(rd.info().data_type, "Int16");
    std::vector<float> ph(4);
    std::vector<uint8_t> va(4);
    rd.read_phase(Window{0, 0, 2, 2}, ph.data(), va.data(), 2);
    EXPECT_EQ(ph, (std::vector<float>{1.0f, 0.0f, -3.0f, 4.0f}));
    EXPECT_EQ(va, (std::vector<uint8_t>{1, 0, 1, 1}));

    // Byte mask: nonzero -> 1, zero and nodata (255 here) -> 0.
    std::vector<uint8_t> m = {0, 1, 2, 255, 0, 9};
    const std::string mp = write_raw("mask.tif", 2, 3, GDT_Byte, m, 255.0);
    RasterReader rm(mp, 1);
    std::vector<uint8_t> out(8, 77);
    rm.read_mask(Window{0, 0, 2, 3}, out.data(), 4);
    EXPECT_EQ(out, (std::vector<uint8_t>{0, 1, 1, 77, 0, 0, 1, 77}));

    // UInt32 mask through the writer, float mask with fractions and NaN.
    std::vector<uint32_t> u = {0, 1, 4000000000u, 7};
    const std::string up = path("mask_u32.tif");
    tessera::write_geotiff_u32(up, 2, 2, u.data(), GeoRef{}, 7.0);
    RasterReader ru(up, 1);
    EXPECT_EQ(ru.info().data_type, "UInt32");
    std::vector<uint8_t> mu(4);
    ru.read_mask(Window{0, 0, 2, 2}, mu.data(), 2);
    EXPECT_EQ(mu, (std::vector<uint8_t>{0, 1, 1, 0}));
    std::vector<float> fu(4);
    ru.read_float(Window{0, 0, 2, 2}, fu.data(), 2);
    EXPECT_EQ(fu, (std::vector<float>{0.0f, 1.0f, 4.0e9f, 0.0f}));

    std::vector<float> fm = {0.25f, 0.0f, kNaN, -1.0f};
    const std::string fp = path("mask_f.tif");
    tessera::write_geotiff_f32(fp, 2, 2, fm.data(), GeoRef{}, std::nullopt);
    RasterReader rf(fp, 1);
    std::vector<uint8_t> mf(4);
    rf.read_mask(Window{0, 0, 2, 2}, mf.data(), 2);
    EXPECT_EQ(mf, (std::vector<uint8_t>{1, 0, 0, 1}));
}

TEST_F(RasterIoTest, SecondBandIsSelectable) {
    std::vector<float> img = {1.0f, 2.0f, 3.0f, 4.0f};
    const std::string p = write_raw("two_bands.tif", 2, 2, GDT_Float32, img, std::nullopt, 2);
    RasterReader rd(p, 2);
    EXPECT_EQ(rd.info().band_count, 2);
    std::vector<float> f(4);
    rd.read_float(Window{1, 0, 1, 2}, f.data(), 2);
    EXPECT_EQ(f[0], 3.0f);
    EXPECT_EQ(f[1], 4.0f);
}

TEST_F(RasterIoTest, ErrorsNameTheFileAndTheProblem) {
    const std::string missing = path("does_not_exist.tif");
    expect_input_error([&] { RasterReader r(missing, 1); }, missing, "no such file");

    std::vector<float> img = {1.0f, 2.0f, 3.0f, 4.0f};
    const std::string p = path("one_band.tif");
    tessera::write_geotiff_f32(p, 2, 2, img.data(), GeoRef{}, std::nullopt);
    expect_input_error([&] { RasterReader r(p, 3); }, p, "band 3 out of range (the raster has 1 band)");
    expect_input_error([&] { RasterReader r(p, 0); }, p, "band 0 out of range");

    const std::string text = path("notes.txt");
    std::ofstream(text) << "this is not a raster, just some words\nand a second line\n";
    expect_input_error([&] { RasterReader r(text, 1); }, text, "not a raster");

    const std::string sub = path("subdir");
    fs::create_directory(sub);
    expect_input_error([&] { RasterReader r(sub, 1); }, sub, "not a raster");

    const std::string empty = path("empty.tif");
    std::ofstream(empty).close();
    expect_input_error([&] { RasterReader r(empty, 1); }, empty, "not a raster");

    std::vector<int64_t> big = {1, 2, 3, 4};
    const std::string i64 = write_raw("int64.tif", 2, 2, GDT_Int64, big);
    expect_input_error([&] { RasterReader r(i64, 1); }, i64, "unsupported data type Int64");
}

TEST_F(RasterIoTest, WriterReportsBadDirectoriesAndReplacesAtomically) {
    std::vector<float> img = {1.0f, 2.0f, 3.0f, 4.0f};
    const std::string nodir = path("missing_dir/out.tif");
    expect_input_error([&] { tessera::write_geotiff_f32(nodir, 2, 2, img.data(), GeoRef{}, std::nullopt); },
                       nodir, "output directory " + path("missing_dir") + " does not exist");

    const std::string file_as_dir = path("plain_file");
    std::ofstream(file_as_dir) << "x";
    const std::string under_file = file_as_dir + "/out.tif";
    expect_input_error([&] { tessera::write_geotiff_f32(under_file, 2, 2, img.data(), GeoRef{}, std::nullopt); },
                       under_file, "is not a directory");

    if (geteuid() != 0) {  // root writes anywhere
        const std::string ro = path("readonly");
        fs::create_directory(ro);
        fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
        const std::string out = ro + "/out.tif";
        expect_input_error([&] { tessera::write_geotiff_f32(out, 2, 2, img.data(), GeoRef{}, std::nullopt); },
                           out, "is not writable");
        fs::permissions(ro, fs::perms::owner_all);
    }

    // Overwrite an existing output; no temporary is left behind.
    const std::string p = path("out.tif");
    tessera::write_geotiff_f32(p, 2, 2, img.data(), GeoRef{}, std::nullopt);
    std::vector<float> img2 = {5.0f, 6.0f, 7.0f, 8.0f};
    tessera::write_geotiff_f32(p, 2, 2, img2.data(), GeoRef{}, std::nullopt);
    EXPECT_TRUE(tessera::testing::temporaries_of(p).empty());
    RasterReader rd(p, 1);
    std::vector<float> f(4);
    rd.read_float(Window{0, 0, 2, 2}, f.data(), 2);
    EXPECT_EQ(f, img2);

    EXPECT_THROW(tessera::write_geotiff_f32(p, 0, 2, img.data(), GeoRef{}, std::nullopt), InputError);
}
