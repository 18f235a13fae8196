// Phase sources (io/phase_source.h): arrays in memory fold the inputs as the GDAL rasters do,
// bit for bit, and the unwrapper gives the same result from either.
#include <gtest/gtest.h>

#include <gdal_priv.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "app/synth.h"
#include "io/gdal_session.h"
#include "io/geotiff_writer.h"
#include "io/phase_source.h"
#include "io/result_sink.h"
#include "pipeline/unwrap_pipeline.h"
#include "support/cli.h"

namespace tessera {
namespace {

template <class T>
void write_raster(const std::string& path, int64_t H, int64_t W, GDALDataType type, const T* data,
                  std::optional<double> nodata = std::nullopt, bool tiled = false) {
    register_gdal_once();
    GDALDriver* drv = GetGDALDriverManager()->GetDriverByName("GTiff");
    const char* tiles[] = {"TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256", nullptr};
    GDALDataset* ds = drv->Create(path.c_str(), static_cast<int>(W), static_cast<int>(H), 1, type,
                                  tiled ? const_cast<char**>(tiles) : nullptr);
    ASSERT_NE(ds, nullptr);
    if (nodata) ds->GetRasterBand(1)->SetNoDataValue(*nodata);
    ASSERT_EQ(ds->GetRasterBand(1)->RasterIO(GF_Write, 0, 0, static_cast<int>(W), static_cast<int>(H),
                                             const_cast<T*>(data), static_cast<int>(W), static_cast<int>(H), type, 0, 0),
              CE_None);
    GDALClose(ds);
}

struct Filled {
    std::vector<float> phase;
    std::vector<uint8_t> flags;
    InputRanges rg;
};

Filled fill(const PhaseSource& s, const Window& buf) {
    Filled f{std::vector<float>(static_cast<size_t>(buf.size()), -9.0f), std::vector<uint8_t>(static_cast<size_t>(buf.size()), 0xff), {}};
    RegionArrays a{s.info().rows, s.info().cols, buf, f.phase.data(), f.flags.data(), nullptr, nullptr};
    f.rg = s.fill(a, {});
    return f;
}

// phase.tif (or ifg.tif) of `dir` with coh.tif and mask.tif, coherence below 0.4 low.
std::unique_ptr<PhaseSource> gdal_sources(const testing::TempDir& dir, bool complex) {
    return gdal_phase_source(dir / (complex ? "ifg.tif" : "phase.tif"), 1, dir / "coh.tif", dir / "mask.tif", 0.4f);
}

// The same scene's arrays as a memory source.
std::unique_ptr<PhaseSource> memory_source(int64_t H, int64_t W, bool complex, const std::vector<float>& phase,
                                           const std::vector<std::complex<float>>& ifg, const std::vector<float>& coh,
                                           const std::vector<uint8_t>& mask) {
    MemoryInput mi;
    mi.H = H, mi.W = W;
    if (complex) mi.ifg = ifg; else mi.phase = phase;
    mi.coherence = coh, mi.mask = mask, mi.min_coherence = 0.4f;
    return memory_phase_source(mi);
}

class PhaseSources : public ::testing::Test {
protected:
    void SetUp() override {
        std::mt19937 rng(5);
        std::uniform_real_distribution<float> u(-3.14f, 3.14f), g(0.0f, 1.0f);
        const size_t n = static_cast<size_t>(H * W);
        phase.resize(n), coh.resize(n), ifg.resize(n), mask.resize(n);
        for (size_t i = 0; i < n; ++i) {
            phase[i] = i % 97 == 3 ? std::nanf("") : u(rng);
            coh[i] = i % 89 == 5 ? std::nanf("") : (i % 83 == 7 ? 0.0f : g(rng));
            const float m = g(rng) + 0.01f;
            ifg[i] = i % 91 == 1 ? std::complex<float>(0, 0) : std::polar(m, u(rng));
            mask[i] = i % 79 == 2 ? 0 : 1;
        }
        write_raster(dir / "phase.tif", H, W, GDT_Float32, phase.data());
        write_raster(dir / "coh.tif", H, W, GDT_Float32, coh.data());
        write_raster(dir / "ifg.tif", H, W, GDT_CFloat32, ifg.data());
        write_raster(dir / "mask.tif", H, W, GDT_Byte, mask.data());
    }
    const int64_t H = 70, W = 53;
    testing::TempDir dir{"phase_source"};
    std::vector<float> phase, coh;
    std::vector<std::complex<float>> ifg;
    std::vector<uint8_t> mask;
};

TEST_F(PhaseSources, MemoryFoldsAsGdalBitForBit) {
    for (bool complex : {false, true})
        for (const Window& w : {Window{0, 0, H, W}, Window{11, 7, 30, 40}}) {
            const auto gdal = gdal_sources(dir, complex);
            const auto mem = memory_source(H, W, complex, phase, ifg, coh, mask);
            EXPECT_EQ(mem->info().rows, H);
            EXPECT_EQ(mem->info().is_complex, complex);
            const Filled a = fill(*gdal, w), b = fill(*mem, w);
            EXPECT_EQ(std::memcmp(a.phase.data(), b.phase.data(), a.phase.size() * 4), 0) << complex;
            EXPECT_EQ(a.flags, b.flags) << complex;
            EXPECT_EQ(a.rg.lo, b.rg.lo);
            EXPECT_EQ(a.rg.coh_hi, b.rg.coh_hi);
            int invalid = 0, low = 0;
            for (uint8_t f : b.flags) invalid += (f & kInvalid) != 0, low += (f & kLowCoherence) != 0;
            EXPECT_GT(invalid, w.size() / 100);  // NaN, complex 0, mask 0, coherence 0 or NaN
            EXPECT_GT(low, w.size() / 5);        // coherence below 0.4
            for (size_t i = 0; i < b.flags.size(); ++i)
                if (b.flags[i] & kInvalid) {
                    ASSERT_EQ(b.phase[i], 0.0f);
                }
        }
}

// A window of few block rows read by many threads (a chunk's: strips cut into column pieces,
// io/raster_reader.cpp and the coherence and mask blocks likewise) folds as the arrays in memory do.
TEST(PhaseSourcePieces, ManyThreadsOnFewBlockRowsFoldAsMemory) {
    testing::TempDir dir{"phase_pieces"};
    const int64_t H = 600, W = 8192;  // 4.9 Mpx: read on threads; 3 block rows of 256
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-3.14f, 3.14f), g(0.0f, 1.0f);
    const size_t n = static_cast<size_t>(H * W);
    std::vector<float> phase(n), coh(n);
    std::vector<std::complex<float>> ifg(n);
    std::vector<uint8_t> mask(n);
    for (size_t i = 0; i < n; ++i) {
        phase[i] = i % 997 == 3 ? std::nanf("") : u(rng);
        coh[i] = i % 89 == 5 ? std::nanf("") : g(rng);
        ifg[i] = i % 991 == 1 ? std::complex<float>(0, 0) : std::polar(g(rng) + 0.01f, u(rng));
        mask[i] = i % 79 == 2 ? 0 : 1;
    }
    write_raster(dir / "phase.tif", H, W, GDT_Float32, phase.data(), std::nullopt, true);
    write_raster(dir / "coh.tif", H, W, GDT_Float32, coh.data(), std::nullopt, true);
    write_raster(dir / "ifg.tif", H, W, GDT_CFloat32, ifg.data(), std::nullopt, true);
    write_raster(dir / "mask.tif", H, W, GDT_Byte, mask.data(), std::nullopt, true);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(8);
    for (bool complex : {false, true}) {
        const Window w{3, 5, 590, 8180};  // off the block borders
        const Filled a = fill(*gdal_sources(dir, complex), w),
                     b = fill(*memory_source(H, W, complex, phase, ifg, coh, mask), w);
        EXPECT_EQ(std::memcmp(a.phase.data(), b.phase.data(), a.phase.size() * 4), 0) << complex;
        EXPECT_EQ(a.flags, b.flags) << complex;
        EXPECT_EQ(a.rg.coh_lo, b.rg.coh_lo);
        EXPECT_EQ(a.rg.coh_hi, b.rg.coh_hi);
    }
    omp_set_num_threads(threads);
}

// The coherence and mask folded into the phase's pieces as they land (io/phase_source.h
// fill_pieces; rasters of the phase's blocks), or after the phase (other blocks: strips, tiles of
// 64), give the memory source's bits; in pieces, each row reported ready already holds its final
// phase and flags, and every row is reported once.
TEST(PhaseSourcePieces, RastersFoldInPiecesOrAfterAsMemoryAndRowsAreFinalWhenReported) {
    testing::TempDir dir{"phase_pieces_mixed"};
    const int64_t H = 700, W = 7000;  // 4.9 Mpx: read on threads
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(-3.14f, 3.14f), g(0.0f, 1.0f);
    const size_t n = static_cast<size_t>(H * W);
    std::vector<float> phase(n), coh(n);
    std::vector<uint8_t> mask(n);
    for (size_t i = 0; i < n; ++i) {
        phase[i] = i % 997 == 3 ? std::nanf("") : u(rng);
        coh[i] = i % 89 == 5 ? std::nanf("") : g(rng);
        mask[i] = i % 79 == 2 ? 0 : 1;
    }
    write_raster(dir / "phase.tif", H, W, GDT_Float32, phase.data(), std::nullopt, true);  // tiles of 256
    const Filled m = fill(*memory_source(H, W, false, phase, {}, coh, mask), Window{5, 3, 690, 6990});
    for (bool same : {true, false}) {
        SCOPED_TRACE(same ? "the phase's blocks" : "other blocks");
        write_raster(dir / "coh.tif", H, W, GDT_Float32, coh.data(), std::nullopt, same);  // else strips
        {
            register_gdal_once();
            const char* tiles[] = {"TILED=YES", same ? "BLOCKXSIZE=256" : "BLOCKXSIZE=64", same ? "BLOCKYSIZE=256" : "BLOCKYSIZE=64", nullptr};
            GDALDatasetUniquePtr ds(GetGDALDriverManager()->GetDriverByName("GTiff")->Create(
                (dir / "mask.tif").c_str(), static_cast<int>(W), static_cast<int>(H), 1, GDT_Byte, const_cast<char**>(tiles)));
            ASSERT_TRUE(ds != nullptr);
            ASSERT_EQ(ds->GetRasterBand(1)->RasterIO(GF_Write, 0, 0, static_cast<int>(W), static_cast<int>(H), mask.data(),
                                                     static_cast<int>(W), static_cast<int>(H), GDT_Byte, 0, 0),
                      CE_None);
        }
        const int threads = omp_get_max_threads();
        omp_set_num_threads(6);
        const Window w{5, 3, 690, 6990};
        const auto src = gdal_sources(dir, false);
        Filled a{std::vector<float>(static_cast<size_t>(w.size()), -9.0f), std::vector<uint8_t>(static_cast<size_t>(w.size()), 0xff), {}};
        RegionArrays arr{H, W, w, a.phase.data(), a.flags.data(), nullptr, nullptr};
        std::vector<float> seen_phase(a.phase.size(), -7.0f);
        std::vector<uint8_t> seen_flags(a.flags.size(), 0xee), reported(static_cast<size_t>(w.rows), 0);
        std::mutex mu;
        a.rg = src->fill(arr, [&](int64_t r0, int64_t nr) {  // a copy of the rows as they are when reported
            std::lock_guard<std::mutex> lock(mu);
            const size_t b = static_cast<size_t>(r0 * w.cols), e = static_cast<size_t>((r0 + nr) * w.cols);
            std::copy(a.phase.begin() + b, a.phase.begin() + e, seen_phase.begin() + b);
            std::copy(a.flags.begin() + b, a.flags.begin() + e, seen_flags.begin() + b);
            for (int64_t r = r0; r < r0 + nr; ++r) ++reported[static_cast<size_t>(r)];
        });
        omp_set_num_threads(threads);
        EXPECT_EQ(std::memcmp(a.phase.data(), m.phase.data(), a.phase.size() * 4), 0);
        EXPECT_EQ(a.flags, m.flags);
        EXPECT_EQ(a.rg.lo, m.rg.lo);
        EXPECT_EQ(a.rg.coh_lo, m.rg.coh_lo);
        EXPECT_EQ(a.rg.coh_hi, m.rg.coh_hi);
        if (!same) {  // after the phase: nothing reported (rows final on return)
            EXPECT_EQ(std::count(reported.begin(), reported.end(), 0), w.rows);
            continue;
        }
        EXPECT_EQ(std::count(reported.begin(), reported.end(), 1), w.rows) << "each row reported once";
        EXPECT_EQ(std::memcmp(seen_phase.data(), a.phase.data(), a.phase.size() * 4), 0) << "a row reported before it was final";
        EXPECT_EQ(seen_flags, a.flags) << "a row reported before its flags were final";
    }
}

// Float64 and complex128 arrays, with a nodata value, fold as GDAL bands of those types do
// (the Python module's float64/complex128 input): wide, then narrowed, nodata compared wide.
TEST_F(PhaseSources, WideTypesAndNodataFoldAsGdalBitForBit) {
    const size_t n = static_cast<size_t>(H * W);
    const double nodata = -9999.0;
    std::vector<double> phase64(n);
    std::vector<std::complex<double>> ifg64(n);
    std::mt19937 rng(9);
    std::uniform_real_distribution<double> u(-3.14159, 3.14159), m(1e-30, 2.0);
    for (size_t i = 0; i < n; ++i) {
        phase64[i] = i % 31 == 4 ? nodata : i % 37 == 1 ? std::nan("") : u(rng);
        // Tiny magnitudes (a complex64 would flush them) and the nodata real part.
        ifg64[i] = i % 29 == 3 ? std::complex<double>(nodata, 1.0) : std::polar(i % 7 == 0 ? 1e-42 : m(rng), u(rng));
    }
    write_raster(dir / "phase64.tif", H, W, GDT_Float64, phase64.data(), nodata);
    write_raster(dir / "ifg64.tif", H, W, GDT_CFloat64, ifg64.data(), nodata);
    for (bool complex : {false, true}) {
        const auto gdal = gdal_phase_source(dir / (complex ? "ifg64.tif" : "phase64.tif"), 1, "", dir / "mask.tif", 0.0f);
        MemoryInput mi;
        mi.H = H, mi.W = W, mi.nodata = nodata, mi.mask = mask;
        if (complex) mi.ifg64 = ifg64; else mi.phase64 = phase64;
        const auto mem = memory_phase_source(mi);
        EXPECT_EQ(mem->info().data_type, complex ? "CFloat64" : "Float64");
        const Window w{0, 0, H, W};
        const Filled a = fill(*gdal, w), b = fill(*mem, w);
        EXPECT_EQ(std::memcmp(a.phase.data(), b.phase.data(), a.phase.size() * 4), 0) << complex;
        EXPECT_EQ(a.flags, b.flags) << complex;
        int invalid = 0;
        for (size_t i = 0; i < n; ++i) invalid += (b.flags[i] & kInvalid) != 0;
        EXPECT_GT(invalid, static_cast<int>(n / 31));  // nodata, NaN, mask 0
        // Independently of GDAL: the nodata pixels are invalid, the others hold the narrowed value.
        for (size_t i = 0; i < n; ++i) {
            const bool nd = complex ? ifg64[i].real() == nodata : phase64[i] == nodata;
            if (nd) {
                ASSERT_TRUE(b.flags[i] & kInvalid) << i;
            } else if (!(b.flags[i] & kInvalid)) {
                ASSERT_EQ(b.phase[i], complex ? static_cast<float>(std::arg(ifg64[i])) : static_cast<float>(phase64[i])) << i;
            }
        }
    }
}

// The unwrapper from arrays in memory writes the file it writes from the rasters.
TEST_F(PhaseSources, UnwrapFromMemoryIsTheFilesResult) {
    const SynthScene s = make_scene("holes", 120, 110, 3);
    write_scene(s, dir.path().string());
    UnwrapOptions o;
    o.input = dir / "holes_wrapped.tif";
    o.coherence = dir / "holes_coherence.tif";
    o.min_coherence = 0.3;
    o.tile_size = 32, o.quiet = true, o.save_cycles = true;
    o.output = dir / "from_files.h5";
    run_unwrap(o, MPI_COMM_SELF);
    MemoryInput mi;
    mi.H = s.rows, mi.W = s.cols;
    mi.phase = s.wrapped, mi.coherence = s.coherence, mi.min_coherence = 0.3f;
    const auto mem = memory_phase_source(mi);
    UnwrapOptions m = o;
    m.coherence.clear();
    m.output = dir / "from_memory.h5";
    run_unwrap(m, mem.get(), MPI_COMM_SELF);
    // And into arrays in memory (io/result_sink.h), writing no file.
    std::vector<float> mu(static_cast<size_t>(s.rows * s.cols));
    std::vector<uint32_t> ml(mu.size());
    MemoryResult into{s.rows, s.cols, mu, ml, {}, {}};
    UnwrapOptions a = m;
    a.output = dir / "never_written.h5";
    run_unwrap(a, *mem, into, MPI_COMM_SELF);
    EXPECT_FALSE(std::filesystem::exists(a.output));
    using testing::read_dataset;
    const auto u1 = read_dataset<float>(o.output, "unwrapped_phase"), u2 = read_dataset<float>(m.output, "unwrapped_phase");
    ASSERT_EQ(u1.size(), u2.size());
    EXPECT_EQ(std::memcmp(u1.data(), u2.data(), u1.size() * 4), 0);
    EXPECT_EQ(read_dataset<int32_t>(o.output, "cycles"), read_dataset<int32_t>(m.output, "cycles"));
    EXPECT_EQ(read_dataset<uint32_t>(o.output, "connected_components"),
              read_dataset<uint32_t>(m.output, "connected_components"));
    EXPECT_EQ(std::memcmp(u1.data(), mu.data(), u1.size() * 4), 0);
    EXPECT_EQ(read_dataset<uint32_t>(o.output, "connected_components"), ml);
}

}  // namespace
}  // namespace tessera
